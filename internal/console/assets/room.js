// waitroom operator console: the view of one room. It opens the room's
// live stream (GET …/admin-events) and reads the room, its stats and its
// audit log; it shows the room's details (stock, schedule, door, held
// places) and acts on the room: pause, resume, queue everyone, advance the
// line. It owns the open view's state, which the other parts read through
// view(). Loaded before app.js, which starts it with the helpers of
// core.js and the list of rooms (rooms.js); it calls, through c, the parts
// app.js starts after it: c.charts (charts.js), c.audit (audit.js), and
// the panels c.invites, c.webhooks and c.sessions.
//
// Pause and resume use POST …/pause and …/resume, which touch nothing else
// of the configuration. A change of the configuration is a PATCH of the
// fields that changed, with If-Match the version (the room's revision) the
// page showed, so a change someone else made meanwhile is never overwritten:
// the API answers 412, the page says so and shows the room as it now is.
//
// Stable element ids for browser tests:
//   #room-name #room-state #live-status #back
//   #room-details #stock #room-stock #schedule #room-schedule #door #room-door #holds #room-holds
//   #pause #resume #queue-all #edit #advance-n #advance #delete-room
"use strict";

window.waitroomRoom = (c) => {
  const { SESSION, $, nf1, api, roomPath, setText, fill, fmt, fmtTime, showError, notice, confirmAction, act,
    focusLost, showView, focusHeading, signedOut } = c;
  const { badge } = c.rooms;
  // Fields of the Room JSON that are counts (or its version), not
  // configuration: the configuration form compares the rest.
  const COUNT_FIELDS = ["room", "waiting", "active", "last_ticket", "entrants", "admissions",
    "inversions", "sold", "reserved", "remaining", "state", "drawn", "revision"];
  const POLICY_LABEL = { strict: "strict: highest tier first", weighted: "weighted by share" };

  let rv = null; // the open room view's state

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
    c.invites.reset();
    c.webhooks.reset();
    c.sessions.reset();
    setText($("live-status"), "Connecting…");
    c.charts.drawCharts();
    focusHeading("room-title");
    const mine = rv;
    Promise.all([loadRoom(), loadStats(), c.audit.load(false), loadState()]).then(() => {
      if (rv !== mine || mine.gone) return;
      connect();
      c.webhooks.refresh();
      c.sessions.refresh();
    });
    rv.stateTimer = setInterval(() => {
      loadState();
      c.webhooks.refresh();
      c.sessions.refresh();
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
      if (current(mine)) c.charts.applyStats(a, true);
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
    es.addEventListener("stats", parse((d) => c.charts.applyStats(d, false)));
    es.addEventListener("room", parse(setRoom));
    es.addEventListener("audit", parse((d) => {
      c.audit.add($("audit-list"), [d], true);
      // A webhook changed, here or in another console: show it.
      if (d && (d.action === "webhook" || d.action === "replay")) c.webhooks.refresh();
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

  // leave closes the view's stream and stops its timers.
  function leave() {
    if (rv) {
      if (rv.es) rv.es.close();
      clearTimeout(rv.retry);
      clearInterval(rv.stateTimer);
      rv = null;
    }
  }

  // ---------- room details and actions ----------

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
    c.invites.setRoom(r);
    c.charts.renderStats();
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

  // etagOf is the version of a room's configuration as If-Match names it.
  const etagOf = (room) => '"' + room.revision + '"';

  // patchConfig changes the fields of patch (a JSON merge patch: null takes
  // a field back to its default) in room base, the room as the operator saw
  // it, and nowhere else: a room changed since (by anyone, here or
  // elsewhere) is answered 412, and the page then shows the room as it is,
  // and says so, for the operator to decide again.
  async function patchConfig(patch, done, base) {
    const mine = rv;
    const headers = { "Content-Type": "application/merge-patch+json" };
    if (base && base.revision) headers["If-Match"] = etagOf(base);
    try {
      setRoom(await api("PATCH", roomPath(mine.name), patch, headers));
    } catch (e) {
      if (e.status !== 412) throw e;
      await loadRoom();
      e.message = "Room " + mine.name + " was changed by someone else since this page showed it, so nothing was saved. " +
        "It now shows the room as it is: check it and make your change again.";
      e.stale = true;
      throw e;
    }
    notice(done);
  }

  // Pause and resume: POST …/pause or …/resume, which change nothing else.
  for (const [id, paused, text, done] of [
    ["pause", true, "Nobody is admitted automatically until you resume. Everyone keeps their place.", " is paused."],
    ["resume", false, "Automatic admissions start again at once, up to the capacity.", " is admitting again."],
  ]) {
    const label = $(id).textContent;
    $(id).addEventListener("click", () => act($(id), async () => {
      if (!rv || !rv.room) return;
      if (!(await confirmAction(label + " room " + rv.name + "?", text, label))) return;
      setRoom(await api("POST", roomPath(rv.name, paused ? "/pause" : "/resume")));
      notice("Room " + rv.name + done);
      // This button is hidden now: the focus goes to the one shown instead.
      const other = $(paused ? "resume" : "pause");
      if (focusLost() && !other.hidden) other.focus();
    }));
  }

  // Delete: the room, its history and its webhooks go. With people in it
  // the dialog says how many and that their sessions end, and the delete
  // is forced; an empty room is deleted only while it stays empty.
  $("delete-room").addEventListener("click", () => act($("delete-room"), async () => {
    if (!rv || !rv.room) return;
    const mine = rv;
    const r = mine.room;
    const live = (r.waiting || 0) + (r.active || 0) + (r.entrants || 0);
    const people = live === 1 ? "1 person is" : fmt(live) + " people are";
    const text = live > 0
      ? people + " in this room right now (" + fmt(r.waiting || 0) + " waiting, " + fmt(r.active || 0) + " active" +
        (r.entrants ? ", " + fmt(r.entrants) + " in the pre-queue" : "") + "): deleting it ends all their sessions " +
        "(room_deleted) at once. Its history, audit log and webhooks are deleted too. This cannot be undone."
      : "Nobody is in it. Its history, audit log and webhooks are deleted too. This cannot be undone.";
    const label = live > 0 ? "Delete and end " + (live === 1 ? "1 session" : fmt(live) + " sessions") : "Delete room";
    if (!(await confirmAction("Delete room " + mine.name + "?", text, label))) return;
    await api("DELETE", roomPath(mine.name, live > 0 ? "?force=true" : ""));
    // Gone: leave the view (its stream would report the deletion as news)
    // for the list, and say it there.
    leave();
    window.addEventListener("hashchange", () => notice("Room " + mine.name + " is deleted."), { once: true });
    location.hash = "#/rooms";
  }));

  $("queue-all").addEventListener("click", () => act($("queue-all"), async () => {
    if (!rv) return;
    const active = rv.room ? fmt(rv.room.active) : "every";
    const ok = await confirmAction("Queue everyone in room " + rv.name + "?",
      "This pauses the room and sends all " + active + " active sessions back to the front of the line, " +
      "in ticket order; their passes are revoked. Resume the room to admit them again.", "Queue everyone");
    if (!ok) return;
    setRoom(await api("POST", roomPath(rv.name, "/queue-all")));
    notice("Everyone in room " + rv.name + " is back in line; the room is paused.");
    c.sessions.refresh();
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
      c.sessions.refresh();
    });
  });

  return { open: openRoom, leave, view: () => rv, current, tiersOf, configOf, patchConfig };
};
