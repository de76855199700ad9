// waitroom operator console. Plain JavaScript, no build step, no requests
// to any other origin. Every state-changing request sends the session's
// CSRF token (X-CSRF-Token) with credentials "same-origin"; the admin token
// is only ever sent once, in the body of POST /admin/api/session.
//
// Stable element ids for browser tests:
//   #token #signin #signin-error #signout #whoami #error (in #error-box, #error-close) #notice
//   #rooms (table) #rooms-body tr[data-room=NAME] (a link per room) #rooms-status
//   #room-name #room-state #live-status #back
//   #stat-waiting #stat-active #stat-admissions #stat-joins #stat-abandons
//   #stat-eta #stat-p50 #stat-p90 #stat-p99 #stat-esterr
//   svg[data-series=waiting|active|admissions|joins|abandons] (#chart-NAME)
//   #room-details #stock #room-stock #schedule #room-schedule #door #room-door #holds #room-holds
//   #pause #resume #queue-all #edit #advance-n #advance
//   #config-form #cfg-FIELD (mode capacity rate_per_minute active_timeout
//     max_session waiting_timeout grace inventory opens_at closes_at
//     target_url return_origins paused tiers tier_policy challenge
//     challenge_min challenge_max invite_keys invite_only hold_places claim_window
//     notify_at) #config-save #config-cancel; a field the page or the API
//     finds wrong gets aria-invalid="true" and the focus
//   #find-q #find-go #found (article[data-session=ID], input[name=found-pick],
//     .badge[data-tier=NAME], .badge[data-moved], .badge[data-held],
//     .badge[data-invited][data-claim-by=TIME], dd[data-field=NAME])
//   #session-actions #revoke #front-reason #front #extend-by #extend
//   #found-audit li[data-audit=ID]
//   the Line and history panel: see sessions.js
//   the Invites panel: see invites.js
//   the Webhooks panel: see webhooks.js
//   #audit-list li[data-audit=ID] #audit-more #audit-empty
//   #confirm (dialog) #confirm-title #confirm-text #confirm-changes #confirm-ok #confirm-cancel
"use strict";

(() => {
  const SESSION = "/admin/api/session";
  const ROOM_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
  const HOUR = 3600 * 1000;
  // Fields of the Room JSON that are counts, not configuration: a PUT
  // sends everything else back as it was, so a pause never drops a field
  // this page does not know about.
  const COUNT_FIELDS = ["room", "waiting", "active", "last_ticket", "entrants", "admissions",
    "inversions", "sold", "reserved", "remaining", "state", "drawn"];
  const STATE_LABEL = {
    open: "Open", paused: "Paused", scheduled: "Scheduled", drawing: "Drawing",
    closed: "Closed", sold_out: "Sold out",
  };
  const POLICY_LABEL = { strict: "strict: highest tier first", weighted: "weighted by share" };
  const SERIES = ["waiting", "active", "admissions", "joins", "abandons"];
  const RATES = { admissions: true, joins: true, abandons: true };

  const $ = (id) => document.getElementById(id);
  const nf = new Intl.NumberFormat();
  const nf1 = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

  let csrf = "";
  let expiryTimer = 0;
  let roomsTimer = 0;
  let roomsBusy = false;
  const roomRows = new Map();
  let rv = null; // the open room view's state

  // ---------- small helpers ----------

  class ApiError extends Error {
    constructor(status, code, message, retryAfter) {
      super(message);
      this.status = status;
      this.code = code;
      this.retryAfter = retryAfter;
    }
  }

  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } };
    if (method !== "GET" && method !== "HEAD") opts.headers["X-CSRF-Token"] = csrf;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      throw new ApiError(0, "network", "The server cannot be reached. Check the connection and try again.");
    }
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = (data && data.error) || {};
      const e = new ApiError(res.status, err.code || "http_" + res.status,
        err.message || "The server answered " + res.status + ".", res.headers.get("Retry-After"));
      if (res.status === 401 && path !== SESSION) signedOut("Your console sign-in has ended; sign in again.");
      throw e;
    }
    return data;
  }

  const roomPath = (name, rest) => "/v1/rooms/" + encodeURIComponent(name) + (rest || "");

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }

  function setText(node, text) {
    const t = String(text);
    if (node && node.textContent !== t) node.textContent = t;
  }

  const fmt = (n) => (n == null || Number.isNaN(n) ? "—" : nf.format(n));
  const fmtRate = (n) => (n == null || Number.isNaN(n) ? "—" : nf1.format(n));

  function fmtSecs(s) {
    if (s == null || Number.isNaN(s)) return "—";
    const neg = s < 0;
    s = Math.round(Math.abs(s));
    const pad = (n) => String(n).padStart(2, "0");
    let out;
    if (s < 60) out = s + "s";
    else if (s < 3600) out = Math.floor(s / 60) + "m " + pad(s % 60) + "s";
    else out = Math.floor(s / 3600) + "h " + pad(Math.floor(s / 60) % 60) + "m";
    return neg ? "−" + out : out;
  }

  function fmtTime(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
  }

  // timeOf reads a time as the API writes it (RFC 3339), or as a number.
  const timeOf = (t) => (typeof t === "number" ? (t < 1e12 ? t * 1000 : t) : Date.parse(t));
  const num = (v) => (typeof v === "number" ? v : null);

  function showError(err) {
    $("error-box").hidden = false;
    $("error").textContent = (err && err.message) || String(err);
  }

  let noticeTimer = 0;

  function clearMessages() {
    $("error-box").hidden = true;
    $("error").textContent = "";
    notice("");
  }

  // notice says what an action did; it fades after a while, an error stays
  // until dismissed or the next action.
  function notice(text) {
    $("notice").textContent = text;
    clearTimeout(noticeTimer);
    if (text) noticeTimer = setTimeout(() => { $("notice").textContent = ""; }, 8000);
  }

  $("error-close").addEventListener("click", clearMessages);

  function fill(dl, pairs) {
    dl.replaceChildren();
    for (const [k, v] of pairs) dl.append(el("div", null, el("dt", { text: k }), el("dd", { text: v })));
  }

  // ---------- confirmation dialog ----------

  function confirmAction(title, text, okLabel, changes) {
    const dlg = $("confirm");
    setText($("confirm-title"), title);
    setText($("confirm-text"), text);
    const ul = $("confirm-changes");
    ul.replaceChildren(...(changes || []).map((c) => el("li", { text: c })));
    ul.hidden = !changes || changes.length === 0;
    setText($("confirm-ok"), okLabel || "Confirm");
    dlg.returnValue = "";
    return new Promise((resolve) => {
      dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
      dlg.showModal();
      $("confirm-cancel").focus();
    });
  }

  $("confirm-ok").addEventListener("click", () => $("confirm").close("ok"));
  $("confirm-cancel").addEventListener("click", () => $("confirm").close("cancel"));

  // Runs a confirmed action: messages cleared, the button busy meanwhile,
  // the API's own message shown on failure. Being disabled, the button
  // cannot take the focus back when a dialog closes: it gets it here once
  // enabled, when nothing else has taken it.
  async function act(button, fn) {
    clearMessages();
    if (button) button.disabled = true;
    try {
      await fn();
    } catch (e) {
      if (e.status !== 401) showError(e);
    } finally {
      if (button) {
        button.disabled = false;
        if (focusLost() && button.isConnected && !button.hidden) button.focus();
      }
    }
  }

  // focusLost reports whether the focus is nowhere in particular, or on
  // something no longer shown (a closed dialog, a hidden button).
  const focusLost = () => {
    const a = document.activeElement;
    return !a || a === document.body || a.getClientRects().length === 0;
  };

  // ---------- views and routing ----------

  function showView(name) {
    for (const v of ["signin", "rooms", "room"]) $("view-" + v).hidden = v !== name;
    const signedIn = name !== "signin";
    $("signout").hidden = !signedIn;
    $("whoami").hidden = !signedIn;
  }

  function leaveView() {
    clearInterval(roomsTimer);
    roomsTimer = 0;
    if (rv) {
      if (rv.es) rv.es.close();
      clearTimeout(rv.retry);
      clearInterval(rv.stateTimer);
      rv = null;
    }
    // A view left behind says nothing about the next one.
    setText($("live-status"), "");
  }

  function route() {
    leaveView();
    if (!csrf) {
      showSignIn("");
      return;
    }
    const m = /^#\/rooms\/(.+)$/.exec(location.hash);
    let name = null;
    if (m) {
      try { name = decodeURIComponent(m[1]); } catch (e) { name = null; }
    }
    if (name && ROOM_RE.test(name)) openRoom(name);
    else openRooms();
  }

  // focusHeading moves focus to a new view's heading, so a screen reader
  // announces where the keyboard now is.
  const focusHeading = (id) => $(id).focus();

  // ---------- sign-in ----------

  function setSession(a) {
    csrf = a.csrf;
    clearTimeout(expiryTimer);
    const until = Date.parse(a.expires_at);
    setText($("whoami"), "Signed in until " + fmtTime(a.expires_at));
    if (!Number.isNaN(until)) {
      const ms = Math.min(until - Date.now(), 2 ** 31 - 1);
      expiryTimer = setTimeout(() => signedOut("Your console sign-in has expired; sign in again."), Math.max(ms, 0));
    }
  }

  function signedOut(message) {
    if (!csrf && !$("view-signin").hidden) return;
    csrf = "";
    clearTimeout(expiryTimer);
    leaveView();
    showSignIn(message);
  }

  function showSignIn(message) {
    showView("signin");
    const e = $("signin-error");
    e.textContent = message || "";
    e.hidden = !message;
    $("token").focus();
  }

  $("signin-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $("token");
    const box = $("signin-error");
    box.hidden = true;
    if (!input.value) {
      box.textContent = "Enter the admin token.";
      box.hidden = false;
      input.focus();
      return;
    }
    $("signin").disabled = true;
    try {
      const a = await api("POST", SESSION, { token: input.value });
      input.value = "";
      setSession(a);
      clearMessages();
      notice("Signed in.");
      route();
    } catch (e) {
      // 401: the token is wrong; 429: too many wrong tries, and how long
      // to wait. The API's own words say both.
      box.textContent = e.message;
      box.hidden = false;
      input.select();
    } finally {
      $("signin").disabled = false;
    }
  });

  $("signout").addEventListener("click", () => act($("signout"), async () => {
    try {
      await api("DELETE", SESSION);
    } catch (e) {
      if (e.status !== 401) throw e;
    }
    signedOut("Signed out.");
  }));

  // ---------- rooms view ----------

  function openRooms() {
    showView("rooms");
    focusHeading("rooms-title");
    pollRooms();
    roomsTimer = setInterval(pollRooms, 2000);
  }

  async function pollRooms() {
    if (roomsBusy || document.hidden) return;
    roomsBusy = true;
    try {
      const a = await api("GET", "/v1/stats");
      if (!$("view-rooms").hidden) renderRooms((a && a.rooms) || []);
    } catch (e) {
      if (e.status !== 401) setText($("rooms-status"), "Could not refresh: " + e.message);
    } finally {
      roomsBusy = false;
    }
  }

  function badge(node, state) {
    setText(node, STATE_LABEL[state] || state || "—");
    const cls = "badge state-" + (state || "unknown");
    if (node.className !== cls) node.className = cls;
  }

  function renderRooms(list) {
    const body = $("rooms-body");
    list = list.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const seen = new Set();
    let prev = null;
    for (const r of list) {
      if (!r || typeof r.name !== "string") continue;
      seen.add(r.name);
      let row = roomRows.get(r.name);
      if (!row) {
        const link = el("a", { href: "#/rooms/" + encodeURIComponent(r.name), text: r.name });
        row = el("tr", { "data-room": r.name, "data-testid": "room-row" },
          el("th", { scope: "row" }, link), el("td", null, el("span", { class: "badge" })),
          el("td", { class: "num" }), el("td", { class: "num" }), el("td", { class: "num" }), el("td", { class: "num" }));
        roomRows.set(r.name, row);
      }
      const want = prev ? prev.nextSibling : body.firstChild;
      if (want !== row) body.insertBefore(row, want);
      prev = row;
      const c = row.children;
      badge(c[1].firstChild, r.state);
      setText(c[2], fmt(r.waiting));
      setText(c[3], fmt(r.active) + " / " + fmt(r.capacity));
      setText(c[4], fmtRate(r.joins_per_minute));
      setText(c[5], fmtRate(r.admissions_per_minute));
    }
    for (const [name, row] of roomRows) {
      if (!seen.has(name)) {
        row.remove();
        roomRows.delete(name);
      }
    }
    setText($("rooms-status"), seen.size === 0
      ? "No rooms yet: create one with PUT /v1/rooms/{room}."
      : seen.size === 1 ? "1 room." : nf.format(seen.size) + " rooms.");
  }

  // ---------- room view ----------

  function openRoom(name) {
    showView("room");
    rv = { name, room: null, es: null, retry: 0, stateTimer: 0, series: new Map(), at: 0,
      waits: null, estimate: null, state: "", auditNext: "",
      found: null, selected: null, gone: false };
    setText($("room-name"), name);
    badge($("room-state"), "");
    for (const id of ["stat-waiting", "stat-active", "stat-admissions", "stat-joins", "stat-abandons",
      "stat-eta", "stat-p50", "stat-p90", "stat-p99", "stat-esterr"]) setText($(id), "—");
    $("audit-list").replaceChildren();
    $("found").replaceChildren();
    $("found-audit").replaceChildren();
    $("found-audit-wrap").hidden = true;
    $("session-actions").hidden = true;
    $("config-form").hidden = true;
    $("edit").setAttribute("aria-expanded", "false");
    invites.reset();
    webhooks.reset();
    sessionsPanel.reset();
    setText($("live-status"), "Connecting…");
    drawCharts();
    focusHeading("room-title");
    const mine = rv;
    Promise.all([loadRoom(), loadStats(), loadAudit(false), loadState()]).then(() => {
      if (rv !== mine || mine.gone) return;
      connect();
      webhooks.refresh();
      sessionsPanel.refresh();
    });
    rv.stateTimer = setInterval(() => {
      loadState();
      webhooks.refresh();
      sessionsPanel.refresh();
    }, 10000);
  }

  // current reports whether the room view an answer was asked for is
  // still the one shown.
  const current = (mine) => rv !== null && rv === mine;

  async function loadRoom() {
    const mine = rv;
    try {
      const a = await api("GET", "/v1/rooms");
      if (!current(mine)) return;
      const room = ((a && a.rooms) || []).find((r) => r.room === mine.name);
      if (!room) {
        // Nothing to stream: no live connection, no retries.
        mine.gone = true;
        if (mine.es) mine.es.close();
        setText($("live-status"), "Not connected: no such room.");
        showError({ message: "There is no room named \u201c" + mine.name + "\u201d." });
        return;
      }
      mine.room = room;
      renderRoom();
    } catch (e) {
      if (e.status !== 401 && current(mine)) showError(e);
    }
  }

  // The room's state as /v1/stats names it (the server knows best: a
  // draw in progress, stock sold out); reread every 10 s and at changes.
  async function loadState() {
    const mine = rv;
    try {
      const a = await api("GET", "/v1/stats");
      if (!current(mine)) return;
      const s = ((a && a.rooms) || []).find((r) => r.name === mine.name);
      if (s) {
        mine.state = s.state;
        badge($("room-state"), s.state);
      }
    } catch (e) {
      // The headline badge keeps its last value; other views report errors.
    }
  }

  async function loadStats() {
    const mine = rv;
    try {
      const a = await api("GET", roomPath(mine.name, "/stats"));
      if (current(mine)) applyStats(a, true);
    } catch (e) {
      if (e.status !== 401 && current(mine)) showError(e);
    }
  }

  function connect() {
    const mine = rv;
    const es = new EventSource(roomPath(mine.name, "/admin-events"), { withCredentials: true });
    mine.es = es;
    const parse = (f) => (ev) => {
      let data;
      try { data = JSON.parse(ev.data); } catch (e) { return; }
      if (current(mine)) f(data);
    };
    es.addEventListener("open", () => setText($("live-status"), "Live."));
    es.addEventListener("stats", parse((d) => applyStats(d, false)));
    es.addEventListener("room", parse(setRoom));
    es.addEventListener("audit", parse((d) => {
      addAudit($("audit-list"), [d], true);
      // A webhook changed, here or in another console: show it.
      if (d && (d.action === "webhook" || d.action === "replay")) webhooks.refresh();
    }));
    // The server's last word when the room is deleted: stop, rather than
    // reconnect to a room that is gone.
    es.addEventListener("deleted", parse(() => {
      mine.gone = true;
      es.close();
      setText($("live-status"), "Disconnected: the room was deleted.");
      showError({ message: "Room \u201c" + mine.name + "\u201d was deleted." });
    }));
    es.addEventListener("error", () => {
      if (!current(mine)) return;
      if (es.readyState !== EventSource.CLOSED) {
        setText($("live-status"), "Reconnecting…");
        return;
      }
      // Refused (signed out, room deleted): find out which before retrying.
      es.close();
      setText($("live-status"), "Disconnected; retrying in a few seconds…");
      mine.retry = setTimeout(async () => {
        try {
          await api("GET", SESSION);
        } catch (e) {
          if (e.status === 401) {
            signedOut("Your console sign-in has ended; sign in again.");
            return;
          }
        }
        if (!current(mine)) return;
        await Promise.all([loadRoom(), loadStats()]);
        if (current(mine) && !mine.gone) connect();
      }, 3000);
    });
  }

  function applyStats(a, full) {
    if (!a) return;
    if (full) rv.series = new Map();
    for (const p of a.series || []) {
      const t = timeOf(p.t);
      if (!Number.isNaN(t)) rv.series.set(t, p);
    }
    const at = timeOf(a.at);
    rv.at = Number.isNaN(at) ? Date.now() : at;
    rv.step = (a.step_seconds || 10) * 1000;
    for (const t of rv.series.keys()) if (t < rv.at - HOUR) rv.series.delete(t);
    if (a.waits) rv.waits = a.waits;
    if (a.estimate) rv.estimate = a.estimate;
    renderStats();
    drawCharts();
  }

  // perMinute sums a counter over the buckets of the last minute.
  function perMinute(key) {
    let sum = 0;
    for (const [t, p] of rv.series) if (t > rv.at - 60000 && typeof p[key] === "number") sum += p[key];
    return sum;
  }

  // latest returns the newest bucket's gauge, or the room's count.
  function latest(key) {
    let best = -Infinity;
    let v = null;
    for (const [t, p] of rv.series) {
      if (t > best && typeof p[key] === "number") {
        best = t;
        v = p[key];
      }
    }
    if (v == null && rv.room) v = num(rv.room[key]);
    return v;
  }

  function renderStats() {
    const cap = rv.room ? rv.room.capacity : null;
    setText($("stat-waiting"), fmt(latest("waiting")));
    setText($("stat-active"), fmt(latest("active")) + (cap != null ? " of " + fmt(cap) : ""));
    setText($("stat-admissions"), fmt(perMinute("admissions")));
    setText($("stat-joins"), fmt(perMinute("joins")));
    setText($("stat-abandons"), fmt(perMinute("abandons")));
    const est = rv.estimate || {};
    setText($("stat-eta"), est.last_eta_seconds == null ? "none yet" : fmtSecs(est.last_eta_seconds));
    const w = rv.waits || {};
    const ms = (v) => (w.count > 0 && typeof v === "number" ? fmtSecs(v / 1000) : "—");
    setText($("stat-p50"), ms(w.p50_ms));
    setText($("stat-p90"), ms(w.p90_ms));
    setText($("stat-p99"), ms(w.p99_ms));
    if (est.count > 0 && typeof est.mean_abs_error_seconds === "number") {
      const bias = est.mean_error_seconds || 0;
      setText($("stat-esterr"), "± " + fmtSecs(est.mean_abs_error_seconds) + " (" +
        (bias > 0 ? "late by " : bias < 0 ? "early by " : "bias ") + fmtSecs(Math.abs(bias)) +
        ", " + fmt(est.count) + " admissions)");
    } else {
      setText($("stat-esterr"), "no admissions to compare yet");
    }
  }

  // ---------- charts ----------

  const SVG = "http://www.w3.org/2000/svg";

  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  function drawCharts() {
    if (!rv) return;
    const to = rv.at || Date.now();
    const step = rv.step || 10000;
    const times = [...rv.series.keys()].sort((a, b) => a - b);
    for (const key of SERIES) {
      const scale = RATES[key] ? 60000 / step : 1;
      const pts = times.map((t) => {
        const v = rv.series.get(t)[key];
        return { t, v: typeof v === "number" ? v * scale : null };
      });
      const svg = document.querySelector('svg[data-series="' + key + '"]');
      drawChart(svg, $("range-" + key), pts, to - HOUR, to, step);
    }
  }

  // drawChart draws one series as a line over [from, to], a gap where the
  // series has none, the newest value as a dot, and a dashed line at the
  // highest; the numbers go in range (text in a stretched SVG would be
  // stretched too).
  function drawChart(svg, range, pts, from, to, step) {
    const W = 320, H = 110, L = 2, R = 6, T = 8, B = 4;
    const vals = pts.filter((p) => p.v != null && p.t >= from);
    const most = Math.max(0, ...vals.map((p) => p.v));
    const top = Math.max(1, most);
    const x = (t) => L + ((t - from) / (to - from)) * (W - L - R);
    const y = (v) => H - B - (v / top) * (H - T - B);
    const kids = [
      svgEl("line", { x1: L, y1: y(0), x2: W - R, y2: y(0), class: "axis" }),
      svgEl("line", { x1: L, y1: y(top), x2: W - R, y2: y(top), class: "grid" }),
    ];
    let d = "";
    let prev = null;
    for (const p of pts) {
      if (p.v == null || p.t < from) { prev = null; continue; }
      const cmd = prev && p.t - prev.t <= 2 * step ? "L" : "M";
      d += cmd + x(p.t).toFixed(1) + " " + y(p.v).toFixed(1);
      prev = p;
    }
    if (d) kids.push(svgEl("path", { d, class: "line" }));
    const last = vals.length ? vals[vals.length - 1] : null;
    if (last) kids.push(svgEl("circle", { cx: x(last.t), cy: y(last.v), r: 2.5, class: "dot" }));
    svg.replaceChildren(...kids);
    setText(range, last ? "now " + fmtRate(last.v) + " · max " + fmtRate(most) : "no data yet");
  }

  // ---------- room details and configuration ----------

  function configOf(room) {
    const c = {};
    for (const [k, v] of Object.entries(room)) if (!COUNT_FIELDS.includes(k)) c[k] = v;
    return c;
  }

  function renderRoom() {
    const r = rv.room;
    if (!r) return;
    $("pause").hidden = !!r.paused;
    $("resume").hidden = !r.paused;
    if (!rv.state) badge($("room-state"), r.paused ? "paused" : "open");
    fill($("room-details"), [
      ["Mode", r.mode || "auto"],
      ["Capacity", fmt(r.capacity)],
      ["Admissions per minute", r.rate_per_minute ? fmt(r.rate_per_minute) : "no limit"],
      ["Active timeout", r.active_timeout || "0s"],
      ["Max session", r.max_session && r.max_session !== "0s" ? r.max_session : "none"],
      ["Waiting timeout", r.waiting_timeout || "0s"],
      ["Grace", r.grace || "0s"],
      ["Paused", r.paused ? "yes" : "no"],
      ["Target URL", r.target_url || "none"],
      ["Last ticket", fmt(r.last_ticket)],
      ["Admitted since created", fmt(r.admissions)],
      ["Out of order", fmt(r.inversions)],
    ]);
    const hasStock = r.inventory != null;
    $("stock").hidden = !hasStock;
    if (hasStock) {
      fill($("room-stock"), [
        ["Inventory", fmt(r.inventory)],
        ["Sold", fmt(r.sold || 0)],
        ["Reserved", fmt(r.reserved || 0)],
        ["Remaining", fmt(r.remaining != null ? r.remaining : r.inventory - (r.sold || 0) - (r.reserved || 0))],
      ]);
    }
    const hasSchedule = !!(r.opens_at || r.closes_at);
    $("schedule").hidden = !hasSchedule;
    if (hasSchedule) {
      const pairs = [];
      if (r.opens_at) {
        const opens = Date.parse(r.opens_at);
        pairs.push(["Opens at", fmtTime(r.opens_at)]);
        let draw;
        if (opens > Date.now()) draw = "pre-queue filling: " + fmt(r.entrants || 0) + " entrants; drawn at the opening";
        else if (r.entrants) draw = "drawing " + fmt(r.entrants) + " entrants";
        else draw = "drawn (see " + roomPath(rv.name, "/draw") + ")";
        pairs.push(["Draw", draw]);
      }
      if (r.closes_at) pairs.push(["Closes at", fmtTime(r.closes_at)]);
      fill($("room-schedule"), pairs);
    }
    renderDoor(r);
    renderHolds(r);
    invites.setRoom(r);
    renderStats();
  }

  // tiersOf returns a room's tiers, highest first; empty without tiers.
  const tiersOf = (r) => (r && Array.isArray(r.tiers) ? r.tiers.filter((t) => t && typeof t.name === "string") : []);

  // renderDoor shows who may join and in which order: the tiers and their
  // policy, invites, and the proof-of-work challenge.
  function renderDoor(r) {
    const tiers = tiersOf(r);
    const policy = r.tier_policy || "strict";
    const weighted = policy === "weighted";
    const share = (t) => (weighted && typeof t.share === "number" ? " (" + nf1.format(t.share * 100) + "%)" : "");
    const pairs = [["Tiers", tiers.length ? tiers.map((t) => t.name + share(t)).join(" › ") : "none: one line"]];
    if (tiers.length) pairs.push(["Tier policy", POLICY_LABEL[policy] || policy]);
    pairs.push(["Invite only", r.invite_only ? "yes: joining needs an invite" : "no"]);
    const keys = (r.invite_keys || []).length;
    pairs.push(["Invite keys", keys ? fmt(keys) + (keys === 1 ? " key" : " keys") : "none"]);
    let challenge = "none";
    if (r.challenge === "pow") {
      const bound = (v) => (v ? fmt(v) : "default");
      challenge = "proof of work, difficulty " + bound(r.challenge_min) + " to " + bound(r.challenge_max);
    } else if (r.challenge) {
      challenge = String(r.challenge);
    }
    pairs.push(["Challenge", challenge]);
    fill($("room-door"), pairs);
  }

  // renderHolds shows whether the room holds places for people a backend
  // joined with a contact, how long an invited one may take to claim its
  // slot, and where in line sessions are told they are near.
  function renderHolds(r) {
    const pairs = [["Hold places", r.hold_places ? "yes: backends may join people with a contact" : "no"]];
    if (r.hold_places) pairs.push(["Claim window", r.claim_window || "10m"]);
    else if (r.claim_window && r.claim_window !== "0s") pairs.push(["Claim window", r.claim_window + " (for held places still in line)"]);
    pairs.push(["Notify at", r.notify_at ? "position " + fmt(r.notify_at) + " (session.near)" : "off"]);
    fill($("room-holds"), pairs);
  }

  // stateKey is what of a room its state (open, paused, scheduled, drawing,
  // closed, sold out) depends on, besides the clock.
  function stateKey(r) {
    return JSON.stringify([r.paused, r.opens_at, r.closes_at, r.inventory, r.remaining === 0, r.reserved === 0, !!r.entrants]);
  }

  // setRoom shows a room the API answered with after a change. The state
  // badge is asked for again only when what it depends on changed (the
  // counts change every tick under load); the 10 s timer covers the clock.
  function setRoom(room) {
    if (!room || !rv || room.room !== rv.name) return;
    const changed = !rv.room || stateKey(rv.room) !== stateKey(room);
    rv.room = room;
    renderRoom();
    if (changed) loadState();
  }

  async function putConfig(cfg, done) {
    setRoom(await api("PUT", roomPath(rv.name), cfg));
    notice(done);
  }

  // Pause and resume: the whole configuration again, with paused toggled.
  for (const [id, paused, text, done] of [
    ["pause", true, "Nobody is admitted automatically until you resume. Everyone keeps their place.", " is paused."],
    ["resume", false, "Automatic admissions start again at once, up to the capacity.", " is admitting again."],
  ]) {
    const label = $(id).textContent;
    $(id).addEventListener("click", () => act($(id), async () => {
      if (!rv || !rv.room) return;
      if (!(await confirmAction(label + " room " + rv.name + "?", text, label))) return;
      await putConfig(Object.assign(configOf(rv.room), { paused }), "Room " + rv.name + done);
      // This button is hidden now: the focus goes to the one shown instead.
      const other = $(paused ? "resume" : "pause");
      if (focusLost() && !other.hidden) other.focus();
    }));
  }

  $("queue-all").addEventListener("click", () => act($("queue-all"), async () => {
    if (!rv) return;
    const active = rv.room ? fmt(rv.room.active) : "every";
    const ok = await confirmAction("Queue everyone in room " + rv.name + "?",
      "This pauses the room and sends all " + active + " active sessions back to the front of the line, " +
      "in ticket order; their passes are revoked. Resume the room to admit them again.", "Queue everyone");
    if (!ok) return;
    setRoom(await api("POST", roomPath(rv.name, "/queue-all")));
    notice("Everyone in room " + rv.name + " is back in line; the room is paused.");
    sessionsPanel.refresh();
  }));

  $("advance-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("advance"), async () => {
      if (!rv) return;
      const n = Number($("advance-n").value);
      if (!Number.isInteger(n) || n < 1 || n > 10000) {
        showError({ message: "Enter a whole number of people from 1 to 10,000." });
        $("advance-n").focus();
        return;
      }
      const who = n === 1 ? "the next person" : "the next " + fmt(n) + " people";
      const manual = rv.room && rv.room.mode === "manual";
      const held = rv.room && rv.room.hold_places ? " A held place is invited to claim its slot instead." : "";
      const ok = await confirmAction("Advance " + who + " in room " + rv.name + "?",
        manual ? "They are marked served, in line order."
          : "They become active now, in line order, even past the capacity and while paused." + held, "Advance");
      if (!ok) return;
      const a = await api("POST", roomPath(rv.name, "/advance"), { n });
      const tiered = tiersOf(rv && rv.room).length > 0;
      const tickets = ((a && a.sessions) || []).map((s) => "#" + s.ticket +
        (tiered && s.tier ? " (" + s.tier + ")" : "") + (s.status === "invited" ? " (invited)" : ""));
      notice((manual ? "Served " : "Admitted ") + fmt(tickets.length) + ": " + tickets.join(", ") + ".");
      sessionsPanel.refresh();
    });
  });

  // ---------- configuration form ----------

  const CFG_TEXT = ["active_timeout", "max_session", "waiting_timeout", "grace", "target_url"];
  const CFG_INT = ["capacity", "rate_per_minute"];
  // The durations, by the names the page gives them.
  const CFG_DURATIONS = { active_timeout: "Active timeout", max_session: "Max session",
    waiting_timeout: "Waiting timeout", grace: "Grace", claim_window: "Claim window" };
  const MAX_NOTIFY_AT = 1000; // as the API allows

  function openConfig() {
    const r = rv && rv.room;
    if (!r) return;
    $("cfg-mode").value = r.mode || "auto";
    for (const k of CFG_INT) $("cfg-" + k).value = r[k] != null ? String(r[k]) : "";
    for (const k of CFG_TEXT) $("cfg-" + k).value = r[k] || "";
    $("cfg-inventory").value = r.inventory != null ? String(r.inventory) : "";
    $("cfg-opens_at").value = r.opens_at || "";
    $("cfg-closes_at").value = r.closes_at || "";
    $("cfg-return_origins").value = (r.return_origins || []).join("\n");
    $("cfg-paused").checked = !!r.paused;
    $("cfg-tiers").value = (r.tiers || []).map((t) => t.name + (t.share ? " " + t.share : "")).join("\n");
    selectValue($("cfg-tier_policy"), r.tier_policy || "strict");
    selectValue($("cfg-challenge"), r.challenge || "");
    $("cfg-challenge_min").value = r.challenge_min ? String(r.challenge_min) : "";
    $("cfg-challenge_max").value = r.challenge_max ? String(r.challenge_max) : "";
    $("cfg-invite_keys").value = (r.invite_keys || []).join("\n");
    $("cfg-invite_only").checked = !!r.invite_only;
    $("cfg-hold_places").checked = !!r.hold_places;
    $("cfg-claim_window").value = r.claim_window && r.claim_window !== "0s" ? r.claim_window : "";
    $("cfg-notify_at").value = r.notify_at ? String(r.notify_at) : "";
    clearInvalid();
    $("config-form").hidden = false;
    $("edit").setAttribute("aria-expanded", "true");
    $("cfg-mode").focus();
  }

  function closeConfig() {
    $("config-form").hidden = true;
    $("edit").setAttribute("aria-expanded", "false");
    $("edit").focus();
  }

  // selectValue selects v, adding it as an option first when the page
  // does not know it, so a value from a newer server is not lost on save.
  function selectValue(select, v) {
    if (![...select.options].some((o) => o.value === v)) select.append(el("option", { value: v, text: v }));
    select.value = v;
  }

  // intOrText is a number if s reads as a whole number, else the text as
  // typed, which the API refuses with its own message.
  const intOrText = (s) => (/^-?\d+$/.test(s.trim()) ? Number(s.trim()) : s.trim());

  // parseTiers reads the tiers box: "name" or "name share" a line. A share
  // that is no number is sent as typed, for the API to refuse.
  function parseTiers(text) {
    return text.split("\n").map((l) => l.trim()).filter(Boolean).map((l) => {
      const [name, ...rest] = l.split(/\s+/);
      if (rest.length === 0) return { name };
      const v = rest.join(" ");
      const m = /^(\d*\.?\d+)(%?)$/.exec(v);
      if (!m) return { name, share: v };
      const share = Number(m[1]) / (m[2] ? 100 : 1);
      return share ? { name, share } : { name };
    });
  }

  // The door's fields, each absent when off, as the API writes them.
  function formDoor(c, before) {
    const tiers = parseTiers($("cfg-tiers").value);
    if (tiers.length) c.tiers = tiers;
    else delete c.tiers;
    // strict is the default, and a policy needs tiers: strict is sent
    // only where the room had it already.
    const policy = $("cfg-tier_policy").value;
    if (policy === "strict" && (!tiers.length || before.tier_policy === undefined)) delete c.tier_policy;
    else c.tier_policy = policy;
    const optional = { challenge: $("cfg-challenge").value,
      challenge_min: intOrText($("cfg-challenge_min").value), challenge_max: intOrText($("cfg-challenge_max").value) };
    for (const [k, v] of Object.entries(optional)) {
      if (v === "" || v === 0) delete c[k];
      else c[k] = v;
    }
    const keys = $("cfg-invite_keys").value.split(/[\s,]+/).filter(Boolean);
    if (keys.length) c.invite_keys = keys;
    else delete c.invite_keys;
    if ($("cfg-invite_only").checked) c.invite_only = true;
    else delete c.invite_only;
  }

  // The fields of held places, each absent when off or empty (an absent
  // claim_window is 10m where places are held).
  function formHolds(c) {
    if ($("cfg-hold_places").checked) c.hold_places = true;
    else delete c.hold_places;
    const win = $("cfg-claim_window").value.trim();
    if (win === "") delete c.claim_window;
    else c.claim_window = win;
    const at = intOrText($("cfg-notify_at").value);
    if (at === "" || at === 0) delete c.notify_at;
    else c.notify_at = at;
  }

  // goDuration reads a Go duration ("90s", "1h30m", "0") as milliseconds,
  // or null when it is none.
  function goDuration(s) {
    if (s === "0") return 0;
    const units = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
    const re = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
    let ms = 0;
    let i = 0;
    while (i < s.length) {
      re.lastIndex = i;
      const m = re.exec(s);
      if (!m) return null;
      ms += Number(m[1]) * units[m[2]];
      i = re.lastIndex;
    }
    return s.length ? ms : null;
  }

  // checkConfig finds what the server would refuse in words that do not
  // name the field (a duration it cannot read), and what held places need,
  // before anything is sent: [field, message], or null when all is well.
  function checkConfig() {
    for (const [k, name] of Object.entries(CFG_DURATIONS)) {
      const v = $("cfg-" + k).value.trim();
      if (v === "" && k === "claim_window") continue;
      if (goDuration(v) === null) {
        return [k, name + ": \u201c" + v + "\u201d is not a duration; enter one such as 90s, 10m or 1h30m" +
          (k === "claim_window" ? ", or leave it empty for 10m." : ".")];
      }
    }
    const win = goDuration($("cfg-claim_window").value.trim());
    if ($("cfg-hold_places").checked && win > 0 && win < 1000) {
      return ["claim_window", "Claim window: enter at least 1s, time for a person to open the link and claim (empty: 10m)."];
    }
    const at = $("cfg-notify_at").value.trim();
    if (at !== "" && !(/^\d+$/.test(at) && Number(at) <= MAX_NOTIFY_AT)) {
      return ["notify_at", "Notify at: enter a position from 1 to 1,000, or 0 (or nothing) for off."];
    }
    return null;
  }

  // markInvalid marks field k of the form as wrong and gives it the focus.
  function markInvalid(k) {
    const input = $("cfg-" + k);
    if (!input) return;
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }

  // markNamed marks the first field a message of the API names, if any.
  function markNamed(message) {
    let best = null;
    for (const input of $("config-form").querySelectorAll("[id^=cfg-]")) {
      const k = input.id.slice(4);
      const i = String(message).search(new RegExp("\\b" + k + "\\b"));
      if (i >= 0 && (!best || i < best[1])) best = [k, i];
    }
    if (best) markInvalid(best[0]);
  }

  function clearInvalid() {
    for (const input of $("config-form").querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
  }

  $("config-form").addEventListener("input", (ev) => {
    if (ev.target && ev.target.removeAttribute) ev.target.removeAttribute("aria-invalid");
  });

  function formConfig() {
    const c = configOf(rv.room);
    c.mode = $("cfg-mode").value;
    for (const k of CFG_INT) c[k] = intOrText($("cfg-" + k).value);
    for (const k of CFG_TEXT) c[k] = $("cfg-" + k).value.trim();
    if (!c.target_url) delete c.target_url;
    const optional = { inventory: intOrText($("cfg-inventory").value),
      opens_at: $("cfg-opens_at").value.trim(), closes_at: $("cfg-closes_at").value.trim() };
    for (const [k, v] of Object.entries(optional)) {
      if (v === "") delete c[k];
      else c[k] = v;
    }
    const origins = $("cfg-return_origins").value.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
    if (origins.length) c.return_origins = origins;
    else delete c.return_origins;
    c.paused = $("cfg-paused").checked;
    formDoor(c, configOf(rv.room));
    formHolds(c);
    return c;
  }

  function changes(before, after) {
    const out = [];
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    const show = (v) => (v === undefined ? "(none)" : JSON.stringify(v));
    for (const k of keys) {
      if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) out.push(k + ": " + show(before[k]) + " → " + show(after[k]));
    }
    return out;
  }

  $("edit").addEventListener("click", () => {
    if ($("config-form").hidden) openConfig();
    else closeConfig();
  });
  $("config-cancel").addEventListener("click", closeConfig);

  $("config-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("config-save"), async () => {
      if (!rv || !rv.room) return;
      clearInvalid();
      const bad = checkConfig();
      if (bad) {
        showError({ message: bad[1] });
        markInvalid(bad[0]);
        return;
      }
      const before = configOf(rv.room);
      const after = formConfig();
      const diff = changes(before, after);
      if (diff.length === 0) {
        notice("Nothing changed.");
        return;
      }
      const ok = await confirmAction("Change the configuration of room " + rv.name + "?",
        "The whole configuration is replaced; these fields change:", "Save", diff);
      if (!ok) return;
      try {
        await putConfig(after, "Room " + rv.name + " is reconfigured.");
      } catch (e) {
        if (e.status === 400) markNamed(e.message);
        throw e;
      }
      closeConfig();
    });
  });

  // ---------- find a session ----------

  // label names a session; describe adds its status as last read.
  const label = (s) => "session " + (s.ticket ? "#" + s.ticket : String(s.id).slice(0, 11) + "…");
  const describe = (s) => label(s) + " (" + s.status + ")";

  // sessionBadges marks a session's tier, in a room with tiers, and a move
  // by an operator. A negative place is a move; a positive one is only
  // where the tier and ticket put the session.
  function sessionBadges(s) {
    const out = [];
    if (s.tier && tiersOf(rv && rv.room).length) {
      out.push(" ", el("span", { class: "badge badge-tier", "data-tier": s.tier, text: "tier " + s.tier }));
    }
    if (typeof s.place === "number" && s.place < 0) {
      out.push(" ", el("span", { class: "badge badge-moved", "data-moved": "", text: "moved by an operator" }));
    }
    out.push(...sessionsPanel.badges(s));
    return out;
  }

  // fieldText shows one field of a session record.
  function fieldText(k, v) {
    if (k === "place" && typeof v === "number") return String(v) + (v < 0 ? " (moved by an operator)" : " (from its tier and ticket)");
    if (k === "end_reason" && typeof v === "string") return sessionsPanel.reasonText(v);
    if (k === "claim_by" && typeof v === "string") return fmtTime(v);
    if (k === "status" && v === "invited") return "invited (its turn came: the slot is kept until it claims or the window passes)";
    return v !== null && typeof v === "object" ? JSON.stringify(v) : String(v);
  }

  async function find(q) {
    const mine = rv;
    const a = await api("GET", roomPath(mine.name, "/find?q=" + encodeURIComponent(q)));
    if (!current(mine)) return;
    const sessions = (a && a.sessions) || [];
    mine.found = { q, sessions };
    const keep = mine.selected && sessions.find((s) => s.id === mine.selected.id);
    mine.selected = keep || sessions[0] || null;
    renderFound();
    const fa = $("found-audit");
    fa.replaceChildren();
    addAudit(fa, (a && a.audit) || [], false);
    $("found-audit-wrap").hidden = !(a && a.audit && a.audit.length);
  }

  function renderFound() {
    const box = $("found");
    const { sessions } = rv.found;
    if (sessions.length === 0) {
      box.replaceChildren(el("p", { text: "No session in this room matches \u201c" + rv.found.q + "\u201d." }));
      $("session-actions").hidden = true;
      return;
    }
    const items = sessions.map((s, i) => {
      const dl = el("dl", { class: "pairs record" });
      for (const [k, v] of Object.entries(s)) {
        dl.append(el("div", null, el("dt", { text: k }), el("dd", { text: fieldText(k, v), "data-field": k })));
      }
      const head = sessions.length > 1
        ? el("label", { class: "pick" }, el("input", { type: "radio", name: "found-pick", value: s.id,
          checked: rv.selected && rv.selected.id === s.id, id: "found-pick-" + i }), " " + describe(s), ...sessionBadges(s))
        : el("h3", null, describe(s), ...sessionBadges(s));
      return el("article", { class: "found", "data-session": s.id, "data-testid": "found-session" }, head, dl);
    });
    box.replaceChildren(el("p", { text: sessions.length === 1 ? "1 session found." : sessions.length + " sessions found." }), ...items);
    for (const input of box.querySelectorAll('input[name="found-pick"]')) {
      input.addEventListener("change", () => {
        rv.selected = rv.found.sessions.find((s) => s.id === input.value) || null;
        renderSelected();
      });
    }
    renderSelected();
  }

  function renderSelected() {
    const s = rv.selected;
    $("session-actions").hidden = !s;
    if (!s) return;
    setText($("selected-label"), describe(s));
    $("extend").disabled = s.status !== "active";
  }

  $("find-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("find-go"), async () => {
      const q = $("find-q").value.trim();
      if (!q || !rv) return;
      await find(q);
    });
  });

  // sessionAct confirms and runs an action on the selected session, then
  // reads it again so the record shows what happened.
  function sessionAct(button, title, text, okLabel, run, done) {
    return act(button, async () => {
      if (!rv || !rv.selected) return;
      const s = rv.selected;
      if (!(await confirmAction(title(s), text, okLabel))) return;
      await run(roomPath(rv.name, "/sessions/" + encodeURIComponent(s.id)));
      notice(done(s));
      sessionsPanel.refresh();
      if (rv && rv.found) await find(rv.found.q);
    });
  }

  $("revoke").addEventListener("click", () => sessionAct($("revoke"),
    (s) => "Revoke " + describe(s) + " in room " + rv.name + "?",
    "It ends now (end reason revoked); an active slot goes to the next in line at once.", "Revoke",
    (p) => api("DELETE", p), (s) => label(s) + " is revoked."));

  $("front-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const reason = $("front-reason").value.trim();
    if (!reason) {
      showError({ message: "Give a reason: it is kept in the audit log." });
      $("front-reason").focus();
      return;
    }
    sessionAct($("front"), (s) => "Move " + describe(s) + " to the front of the line?",
      "It gets position 1, ahead of everyone waiting. The reason is kept in the audit log: \u201c" + reason + "\u201d",
      "Move to front", (p) => api("POST", p + "/front", { reason }),
      (s) => {
        $("front-reason").value = "";
        return label(s) + " is now first in line.";
      });
  });

  $("extend-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const by = $("extend-by").value.trim();
    sessionAct($("extend"), (s) => "Give " + describe(s) + " " + by + " more?",
      "Its max-session deadline moves " + by + " later and its idle timer starts again.", "Extend",
      (p) => api("POST", p + "/extend", { by }), (s) => label(s) + " has " + by + " more.");
  });

  // ---------- line and history (sessions.js) ----------

  // openSession finds a session listed in the panel, as a search for q
  // would, and takes the focus to the results.
  const openSession = (button, q) => act(button, async () => {
    if (!rv) return;
    $("find-q").value = q;
    await find(q);
    $("find-title").focus();
    $("find-title").scrollIntoView({ block: "start" });
  });

  const sessionsPanel = window.waitroomSessions({ $, el, api, act, fmt, fmtSecs, fmtTime, roomPath, setText,
    view: () => rv, open: openSession });

  // ---------- invites (invites.js) ----------

  const invites = window.waitroomInvites({ $, el, api, act, showError, notice, fmt, fmtTime, num, roomPath, tiersOf,
    view: () => rv });

  // ---------- webhooks (webhooks.js) ----------

  const webhooks = window.waitroomWebhooks({ $, el, api, act, notice, fmt, fmtTime, num, roomPath, confirmAction,
    setText, focusLost, view: () => rv });

  // ---------- audit log ----------

  const AUDIT_SHOWN = 500;

  async function loadAudit(more) {
    const mine = rv;
    let path = roomPath(mine.name, "/audit?limit=50");
    if (more && mine.auditNext) path += "&after=" + encodeURIComponent(mine.auditNext);
    try {
      const a = await api("GET", path);
      if (!current(mine)) return;
      addAudit($("audit-list"), (a && a.entries) || [], false);
      mine.auditNext = (a && a.next) || "";
      $("audit-more").hidden = !mine.auditNext;
    } catch (e) {
      if (e.status !== 401 && current(mine)) showError(e);
    }
    if (current(mine)) $("audit-empty").hidden = $("audit-list").children.length > 0;
  }

  $("audit-more").addEventListener("click", () => act($("audit-more"), () => loadAudit(true)));

  function auditItem(e) {
    const when = el("time", { text: fmtTime(e.at), dateTime: e.at || "" });
    const parts = [(e.action || "?") + " by " + (e.actor || "?")];
    if (e.session) parts.push("session " + (e.ticket ? "#" + e.ticket + " " : "") + String(e.session).slice(0, 11) + "…");
    else if (e.ticket) parts.push("ticket #" + e.ticket);
    if (e.reason) parts.push("reason: \u201c" + e.reason + "\u201d");
    const summary = auditSummary(e);
    if (summary) parts.push(summary);
    const li = el("li", { "data-audit": e.id || "", "data-testid": "audit-entry" }, when, " ",
      el("strong", { text: parts[0] }), parts.length > 1 ? " · " + parts.slice(1).join(" · ") : null);
    if (!summary && e.detail !== undefined && e.detail !== null) li.append(el("code", { class: "detail", text: JSON.stringify(e.detail) }));
    return li;
  }

  // auditSummary says in words what an entry's detail holds, for the
  // actions whose detail the page knows; "" shows the detail as JSON.
  function auditSummary(e) {
    const d = e.detail;
    if (e.action === "webhook" || e.action === "replay") return webhooks.auditSummary(e);
    if (e.action !== "invites" || !d || typeof d !== "object") return "";
    const n = num(d.count) || 1;
    const uses = num(d.uses) || 1;
    const tier = d.tier ? d.tier + " " : tiersOf(rv && rv.room).length ? "lowest-tier " : "";
    let out = fmt(n) + " " + tier + (n === 1 ? "invite" : "invites") +
      ", " + fmt(uses) + (uses === 1 ? " use" : " uses") + (n === 1 ? "" : " each");
    if (d.expires_at) out += ", until " + fmtTime(d.expires_at);
    return out;
  }

  // addAudit puts entries into list, newest first: in front when they are
  // new (live events), at the end when they are older pages. Entries
  // already shown are skipped.
  function addAudit(list, entries, front) {
    const ids = new Set([...list.children].map((li) => li.getAttribute("data-audit")));
    const fresh = entries.filter((e) => e && !(e.id && ids.has(e.id)));
    if (front) {
      for (const e of fresh.slice().reverse()) list.prepend(auditItem(e));
    } else {
      list.append(...fresh.map(auditItem));
    }
    while (list.children.length > AUDIT_SHOWN) list.lastChild.remove();
    if (list === $("audit-list")) $("audit-empty").hidden = list.children.length > 0;
  }

  // ---------- start ----------

  window.addEventListener("hashchange", () => {
    clearMessages();
    route();
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && roomsTimer) pollRooms();
  });

  (async () => {
    try {
      setSession(await api("GET", SESSION));
    } catch (e) {
      csrf = "";
      if (e.status !== 401) {
        showSignIn(e.message);
        return;
      }
    }
    route();
  })();
})();
