// waitroom operator console: the session finder of the room view. It finds
// the sessions of the room that match an id, a ticket or a contact
// (GET …/find), shows each with its audit entries, and acts on the one
// picked: revoke it, move it to the front of the line, extend it. The Line
// and history panel (sessions.js) opens its sessions here. Loaded before
// app.js, which starts it with the helpers of core.js; it reads the open
// room view from room.js.
//
// Stable element ids for browser tests:
//   #find-q #find-go #found (article[data-session=ID], input[name=found-pick],
//     .badge[data-tier=NAME], .badge[data-moved], .badge[data-held],
//     .badge[data-invited][data-claim-by=TIME], dd[data-field=NAME])
//   #session-actions #revoke #front-reason #front #extend-by #extend
//   #found-audit li[data-audit=ID]
"use strict";

window.waitroomFinder = (c) => {
  const { $, el, api, roomPath, setText, fmtTime, showError, notice, confirmAction, act } = c;
  const { view, current, tiersOf } = c.room;

  // label names a session; describe adds its status as last read.
  const label = (s) => "session " + (s.ticket ? "#" + s.ticket : String(s.id).slice(0, 11) + "…");
  const describe = (s) => label(s) + " (" + s.status + ")";

  // sessionBadges marks a session's tier, in a room with tiers, and a move
  // by an operator. A negative place is a move; a positive one is only
  // where the tier and ticket put the session.
  function sessionBadges(s) {
    const rv = view();
    const out = [];
    if (s.tier && tiersOf(rv && rv.room).length) {
      out.push(" ", el("span", { class: "badge badge-tier", "data-tier": s.tier, text: "tier " + s.tier }));
    }
    if (typeof s.place === "number" && s.place < 0) {
      out.push(" ", el("span", { class: "badge badge-moved", "data-moved": "", text: "moved by an operator" }));
    }
    out.push(...c.sessions.badges(s));
    return out;
  }

  // fieldText shows one field of a session record.
  function fieldText(k, v) {
    if (k === "place" && typeof v === "number") return String(v) + (v < 0 ? " (moved by an operator)" : " (from its tier and ticket)");
    if (k === "end_reason" && typeof v === "string") return c.sessions.reasonText(v);
    if (k === "claim_by" && typeof v === "string") return fmtTime(v);
    if (k === "status" && v === "invited") return "invited (its turn came: the slot is kept until it claims or the window passes)";
    return v !== null && typeof v === "object" ? JSON.stringify(v) : String(v);
  }

  async function find(q) {
    const mine = view();
    const a = await api("GET", roomPath(mine.name, "/find?q=" + encodeURIComponent(q)));
    if (!current(mine)) return;
    const sessions = (a && a.sessions) || [];
    mine.found = { q, sessions };
    const keep = mine.selected && sessions.find((s) => s.id === mine.selected.id);
    mine.selected = keep || sessions[0] || null;
    renderFound();
    const fa = $("found-audit");
    fa.replaceChildren();
    c.audit.add(fa, (a && a.audit) || [], false);
    $("found-audit-wrap").hidden = !(a && a.audit && a.audit.length);
  }

  function renderFound() {
    const rv = view();
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
        view().selected = view().found.sessions.find((s) => s.id === input.value) || null;
        renderSelected();
      });
    }
    renderSelected();
  }

  function renderSelected() {
    const s = view().selected;
    $("session-actions").hidden = !s;
    if (!s) return;
    setText($("selected-label"), describe(s));
    $("extend").disabled = s.status !== "active";
  }

  $("find-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("find-go"), async () => {
      const q = $("find-q").value.trim();
      if (!q || !view()) return;
      await find(q);
    });
  });

  // sessionAct confirms and runs an action on the selected session, then
  // reads it again so the record shows what happened.
  function sessionAct(button, title, text, okLabel, run, done) {
    return act(button, async () => {
      if (!view() || !view().selected) return;
      const s = view().selected;
      if (!(await confirmAction(title(s), text, okLabel))) return;
      await run(roomPath(view().name, "/sessions/" + encodeURIComponent(s.id)));
      notice(done(s));
      c.sessions.refresh();
      if (view() && view().found) await find(view().found.q);
    });
  }

  $("revoke").addEventListener("click", () => sessionAct($("revoke"),
    (s) => "Revoke " + describe(s) + " in room " + view().name + "?",
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

  // openSession finds a session listed in the panel, as a search for q
  // would, and takes the focus to the results.
  const openSession = (button, q) => act(button, async () => {
    if (!view()) return;
    $("find-q").value = q;
    await find(q);
    $("find-title").focus();
    $("find-title").scrollIntoView({ block: "start" });
  });

  return { openSession };
};
