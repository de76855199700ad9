// waitroom operator console: what every part of the page shares. The API
// call, with its CSRF header and credentials "same-origin"; the sign-in that
// gets the session (the admin token is only ever sent once, in the body of
// POST /admin/api/session) and its end; the messages, the formats, the
// confirmation dialog and the busy button of an action; which view is shown.
// Loaded before app.js, which starts it with the two things it needs of the
// page: leave, to close the view shown, and route, to open the one the
// address asks for.
//
// Stable element ids for browser tests:
//   #token #signin #signin-error #signout #whoami #error (in #error-box, #error-close) #notice
//   #confirm (dialog) #confirm-title #confirm-text #confirm-changes #confirm-ok #confirm-cancel
"use strict";

window.waitroomCore = ({ leave, route }) => {
  const SESSION = "/admin/api/session";

  const $ = (id) => document.getElementById(id);
  const nf = new Intl.NumberFormat();
  const nf1 = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

  let csrf = "";
  let expiryTimer = 0;

  // ---------- small helpers ----------

  class ApiError extends Error {
    constructor(status, code, message, retryAfter) {
      super(message);
      this.status = status;
      this.code = code;
      this.retryAfter = retryAfter;
    }
  }

  // api calls the API; headers, when given, are added to the request's
  // (If-Match, or a Content-Type other than application/json).
  async function api(method, path, body, headers) {
    const opts = { method, credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } };
    if (method !== "GET" && method !== "HEAD") opts.headers["X-CSRF-Token"] = csrf;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    Object.assign(opts.headers, headers || {});
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


  // ---------- views ----------

  function showView(name) {
    for (const v of ["signin", "rooms", "room"]) $("view-" + v).hidden = v !== name;
    const signedIn = name !== "signin";
    $("signout").hidden = !signedIn;
    $("whoami").hidden = !signedIn;
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
    leave();
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

  // resume reads the session the browser may have already, then shows
  // the view the address asks for, or the sign-in.
  async function resume() {
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
  }

  return {
    SESSION, $, nf, nf1, api, roomPath, el, setText, fill, fmt, fmtRate, fmtSecs, fmtTime, timeOf, num,
    showError, clearMessages, notice, confirmAction, act, focusLost, showView, focusHeading,
    signedIn: () => !!csrf, signedOut, showSignIn, resume,
  };
};
