// waitroom operator console. Plain JavaScript, no build step, no requests
// to any other origin. Every state-changing request sends the session's
// CSRF token (X-CSRF-Token) with credentials "same-origin"; the admin token
// is only ever sent once, in the body of POST /admin/api/session.
//
// The page is in parts, each a script that index.html loads before this
// one and that defines how to start it: core.js (the API call, the
// sign-in, messages, formats, the confirmation dialog), rooms.js (the list
// of rooms), room.js (the view of one room, its details and actions),
// charts.js (its numbers and charts), config.js (its configuration form),
// finder.js (the session finder), audit.js (its audit log), and the panels
// sessions.js, invites.js and webhooks.js. This script starts them in
// turn, each with the context c: what core.js gives, and the parts started
// before it, by name (c.rooms, c.room, …). A part calls one started after
// it through c when it needs it, never while it starts. This script then
// follows the address: the list of rooms at #/, a room at #/rooms/NAME.
//
// Stable element ids for browser tests: each part lists its own.
"use strict";

(() => {
  const ROOM_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

  const c = window.waitroomCore({ leave: leaveView, route });
  const { $, el, api, act, showError, notice, fmt, fmtSecs, fmtTime, num, roomPath, confirmAction, setText,
    focusLost, clearMessages } = c;
  c.rooms = window.waitroomRooms(c);
  c.room = window.waitroomRoom(c);
  c.charts = window.waitroomCharts(c);
  window.waitroomConfig(c);
  c.finder = window.waitroomFinder(c);
  const { view, tiersOf } = c.room;

  // ---------- the panels (sessions.js, invites.js, webhooks.js) ----------

  c.sessions = window.waitroomSessions({ $, el, api, act, fmt, fmtSecs, fmtTime, roomPath, setText,
    view, open: c.finder.openSession });
  c.invites = window.waitroomInvites({ $, el, api, act, showError, notice, fmt, fmtTime, num, roomPath, tiersOf,
    view });
  c.webhooks = window.waitroomWebhooks({ $, el, api, act, notice, fmt, fmtTime, num, roomPath, confirmAction,
    setText, focusLost, view });

  c.audit = window.waitroomAudit(c);

  // ---------- views and routing ----------

  function leaveView() {
    c.rooms.leave();
    c.room.leave();
    // A view left behind says nothing about the next one.
    setText($("live-status"), "");
  }

  function route() {
    leaveView();
    if (!c.signedIn()) {
      c.showSignIn("");
      return;
    }
    const m = /^#\/rooms\/(.+)$/.exec(location.hash);
    let name = null;
    if (m) {
      try { name = decodeURIComponent(m[1]); } catch (e) { name = null; }
    }
    if (name && ROOM_RE.test(name)) c.room.open(name);
    else c.rooms.open();
  }

  // ---------- start ----------

  window.addEventListener("hashchange", () => {
    clearMessages();
    route();
  });

  c.resume();
})();
