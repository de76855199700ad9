// waitroom operator console: the sessions of a room as an operator sees
// them. The "Line and history" panel lists the first in line and the last
// to end (GET …/waiting and …/history); the words for a session's end
// reason, and the badges of a held place and of an invitation to claim
// one (its time left counting down), serve the sessions app.js finds too.
// Loaded before app.js, which starts it with the helpers the panels share
// and a way to read the open room view; it refreshes the lists when the
// room view opens, every 10 seconds while it is open, and after an action
// on a session.
//
// Stable element ids for browser tests:
//   #line-status #line-list li[data-session=ID][data-status=waiting]
//   #history-status #history-list li[data-session=ID][data-status=STATUS][data-reason=REASON]
//     (in both: .contact, .badge[data-held], button[data-action=open])
//   #sessions-refresh
//   .badge[data-invited][data-claim-by=TIME] wherever an invited session is
//     shown: "invited: 9m 12s left to claim", counting down
"use strict";

window.waitroomSessions = (c) => {
  const { $, el, api, fmt, fmtSecs, fmtTime, roomPath, setText, view, open } = c;
  const SHOWN = 10; // sessions in each list

  // What each end reason means; the API's word is shown first.
  const REASONS = {
    left: "the person left",
    revoked: "by an operator",
    served: "an operator advanced the line",
    idle: "no activity within the active timeout",
    max_session: "reached the max session",
    no_presence: "showed no presence while waiting",
    gone: "went away and did not come back within grace",
    room_deleted: "the room was deleted",
    sold_out: "the room sold out while it waited",
    unclaimed: "invited, and not claimed within the claim window",
  };

  const reasonText = (r) => (REASONS[r] ? r + " (" + REASONS[r] + ")" : String(r));

  // claimLeft says how long an invited session has left to claim, at now.
  function claimLeft(claimBy, now) {
    const left = (Date.parse(claimBy) - (now || Date.now())) / 1000;
    if (Number.isNaN(left)) return "claim by " + fmtTime(claimBy);
    return left >= 0.5 ? fmtSecs(left) + " left to claim" : "the claim window has passed";
  }

  // badges marks an invited session (with its time left) and a held place
  // still waiting; nothing for the others.
  function badges(s) {
    if (s.status === "invited") {
      const b = el("span", { class: "badge badge-invited", "data-invited": "", text: "invited: " + claimLeft(s.claim_by) });
      if (s.claim_by) b.setAttribute("data-claim-by", s.claim_by);
      // It counts down every second: not to be read out each time, in a
      // live region (the find results are one).
      b.setAttribute("aria-live", "off");
      return [" ", b];
    }
    if (s.status === "waiting" && s.contact) return [" ", el("span", { class: "badge badge-held", "data-held": "", text: "held place" })];
    return [];
  }

  // The invitations shown count down, once a second.
  setInterval(() => {
    const now = Date.now();
    for (const b of document.querySelectorAll(".badge[data-claim-by]")) {
      setText(b, "invited: " + claimLeft(b.getAttribute("data-claim-by"), now));
    }
  }, 1000);

  // ---------- the lists ----------

  const lineRows = new Map(); // session id → its <li>
  const historyRows = new Map();
  let gen = 0; // the newest refresh: older answers are dropped

  function reset() {
    gen++;
    lineRows.clear();
    historyRows.clear();
    $("line-list").replaceChildren();
    $("history-list").replaceChildren();
    setText($("line-status"), "");
    setText($("history-status"), "");
  }

  // refresh reads both lists. loud throws an error for the caller to
  // show; otherwise it goes into the status lines.
  async function refresh(loud) {
    const mine = view();
    if (!mine || mine.gone || (!loud && document.hidden)) return;
    const my = ++gen;
    try {
      const [w, h] = await Promise.all([
        api("GET", roomPath(mine.name, "/waiting?limit=" + SHOWN)),
        api("GET", roomPath(mine.name, "/history?limit=" + SHOWN)),
      ]);
      if (view() !== mine || my !== gen) return;
      const waiting = ((w && w.sessions) || []).filter((s) => s && typeof s.id === "string");
      const ended = ((h && h.sessions) || []).filter((s) => s && typeof s.id === "string");
      keyed($("line-list"), lineRows, waiting, lineItem);
      keyed($("history-list"), historyRows, ended, historyItem);
      setText($("line-status"), waiting.length === 0 ? "Nobody is waiting."
        : w.next ? "The first " + fmt(waiting.length) + " in line." : fmt(waiting.length) + " waiting.");
      setText($("history-status"), ended.length === 0 ? "No session has ended yet."
        : h.next ? "The last " + fmt(ended.length) + " to end, newest first." : fmt(ended.length) + (ended.length === 1 ? " session" : " sessions") + " ended, newest first.");
    } catch (e) {
      if (loud) throw e;
      if (e.status !== 401 && view() === mine && my === gen) setText($("line-status"), "Could not refresh: " + e.message);
    }
  }

  // keyed puts the sessions into list in order, keeping the element of
  // each session already there (and so the focus on its button) and
  // dropping the rest.
  function keyed(list, rows, sessions, fill) {
    const seen = new Set();
    let prev = null;
    for (const s of sessions) {
      if (seen.has(s.id)) continue;
      seen.add(s.id);
      let li = rows.get(s.id);
      if (!li) {
        li = item(s);
        rows.set(s.id, li);
      }
      li.setAttribute("data-status", s.status || "");
      li.setAttribute("data-reason", s.end_reason || "");
      li.querySelector(".what").replaceChildren(...fill(s));
      const want = prev ? prev.nextSibling : list.firstChild;
      if (want !== li) list.insertBefore(li, want);
      prev = li;
    }
    for (const [id, li] of rows) {
      if (!seen.has(id)) {
        li.remove();
        rows.delete(id);
      }
    }
  }

  const ticketOf = (s) => (s.ticket ? "#" + s.ticket : String(s.id).slice(0, 11) + "…");

  // item is a session's <li>: what it is, and a button that finds it.
  function item(s) {
    const b = el("button", { type: "button", text: "Open", "data-action": "open" });
    b.setAttribute("aria-label", "Open session " + ticketOf(s));
    // A ticket finds it, live or in the history; a pre-queue entry has
    // none, and the start of its id does.
    b.addEventListener("click", () => open(b, s.ticket ? String(s.ticket) : String(s.id).slice(0, 11)));
    return el("li", { "data-session": s.id, "data-testid": "session" }, el("span", { class: "what" }), " ", b);
  }

  // who says whom a session is for: its key and a held place's contact.
  function who(s) {
    const out = [];
    if (s.key) out.push(" · key ", el("code", { text: s.key }));
    if (s.contact) out.push(" · contact ", el("code", { class: "contact", text: s.contact }));
    if (s.tier) out.push(" · tier " + s.tier);
    return out;
  }

  function lineItem(s) {
    const where = typeof s.position === "number" ? "position " + fmt(s.position) : "waiting";
    return [el("strong", { text: where }), " · ticket " + ticketOf(s), ...who(s), ...badges(s),
      " · joined " + fmtTime(s.joined_at)];
  }

  function historyItem(s) {
    return [el("time", { text: fmtTime(s.ended_at), dateTime: s.ended_at || "" }), " ",
      el("strong", { text: ticketOf(s) + " " + (s.status || "?") }),
      s.end_reason ? " · " + reasonText(s.end_reason) : null, ...who(s)].filter((k) => k !== null);
  }

  $("sessions-refresh").addEventListener("click", () => c.act($("sessions-refresh"), () => refresh(true)));

  return { reset, refresh: () => refresh(false), badges, reasonText, claimLeft };
};
