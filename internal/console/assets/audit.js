// waitroom operator console: the audit log of the room view. Its pages are
// read from GET …/audit, newest first, and new entries come in front from
// the live stream; the session finder shows the entries of what it found
// the same way. An entry whose detail the page knows (invites, webhooks,
// replays) is said in words, any other's detail shown as JSON. Loaded
// before app.js, which starts it with the helpers of core.js; it reads the
// open room view from room.js.
//
// Stable element ids for browser tests:
//   #audit-list li[data-audit=ID] #audit-more #audit-empty
"use strict";

window.waitroomAudit = (c) => {
  const { $, el, api, roomPath, fmt, fmtTime, num, showError, act } = c;
  const { view, current, tiersOf } = c.room;
  const AUDIT_SHOWN = 500;

  async function loadAudit(more) {
    const mine = view();
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
    if (e.action === "webhook" || e.action === "replay") return c.webhooks.auditSummary(e);
    if (e.action !== "invites" || !d || typeof d !== "object") return "";
    const n = num(d.count) || 1;
    const uses = num(d.uses) || 1;
    const rv = view();
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

  return { load: loadAudit, add: addAudit };
};
