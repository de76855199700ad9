// waitroom operator console: the Webhooks panel of a room. Loaded before
// app.js, which starts it with the helpers the panels share (the API call
// with its CSRF header, messages, formats, the confirmation dialog) and a
// way to read the open room view; it refreshes the panel when the room
// view opens, every 10 seconds while it is open, and when the audit log
// says a webhook changed.
//
// The secret of a webhook is shown once, in the answer to the save that
// made it; the listing never holds it.
//
// Stable element ids for browser tests:
//   #webhooks-status #webhooks-refresh
//   #webhooks-list li[data-webhook=NAME] (.badge[data-health=ok|failing|idle],
//     .hook-url, .hook-events, dd[data-stat=pending|delivered|failed|dead|last_error|last_delivered],
//     button[data-action=edit|delete])
//   #webhook-form #wh-name #wh-url #wh-secret #wh-all
//     input[name=wh-event][value=TYPE] (#wh-ev-TYPE with each "." as "-") #webhook-save
//   #webhook-secret-result #webhook-secret #webhook-secret-note #webhook-secret-copy #webhook-secret-hide
//   #dead-status #dead-replay-all #dead-more
//   #dead-list li[data-dead=MESSAGE-ID][data-webhook=NAME] (button[data-action=replay])
"use strict";

window.waitroomWebhooks = (c) => {
  const { $, el, api, act, notice, fmt, fmtTime, num, roomPath, confirmAction, setText, focusLost, view } = c;
  // The event types, in the order of the API's documentation
  // (waitroom.HookTypes).
  const TYPES = ["session.joined", "session.admitted", "session.ended", "session.near", "session.invited",
    "session.claimed", "room.paused", "room.resumed", "room.closed", "room.sold_out", "draw.completed"];
  const PAGE = 50; // dead letters read at a time
  const MOST = 1000; // the API's largest page

  const rows = new Map(); // webhook name → its <li>
  const letters = new Map(); // webhook/message id/dead_at → its <li>
  let hooks = new Map(); // webhook name → the webhook as last listed
  let deadNext = ""; // the cursor of older dead letters
  let gen = 0; // the newest refresh: older answers are dropped

  const plural = (n, one, many) => fmt(n) + " " + (n === 1 ? one : many);
  const typeId = (t) => "wh-ev-" + t.replace(/\./g, "-");

  // The event boxes, made once.
  $("wh-event-list").replaceChildren(...TYPES.map((t) =>
    el("div", { class: "field check" },
      el("input", { type: "checkbox", id: typeId(t), name: "wh-event", value: t, disabled: true }),
      el("label", { htmlFor: typeId(t) }, el("code", { text: t })))));
  $("wh-url").placeholder = "https://hooks.example.com/waitroom";

  // allEvents says whether the webhook is to get every event type; the
  // single types are then moot.
  function allEvents(on) {
    $("wh-all").checked = on;
    for (const box of document.querySelectorAll('input[name="wh-event"]')) box.disabled = on;
  }
  $("wh-all").addEventListener("change", () => allEvents($("wh-all").checked));

  // reset empties the panel for a room view just opened.
  function reset() {
    gen++;
    rows.clear();
    letters.clear();
    hooks = new Map();
    deadNext = "";
    $("webhooks-list").replaceChildren();
    $("dead-list").replaceChildren();
    setText($("webhooks-status"), "");
    setText($("dead-status"), "");
    $("dead-replay-all").hidden = true;
    $("dead-more").hidden = true;
    $("wh-name").value = "";
    $("wh-url").value = "";
    $("wh-secret").value = "";
    for (const box of document.querySelectorAll('input[name="wh-event"]')) box.checked = false;
    allEvents(true);
    hideSecret();
  }

  // keyed puts items into list in order, keeping the element of each key
  // already there (and so the focus on its buttons) and dropping the rest.
  function keyed(list, elements, items, keyOf, make, update) {
    const seen = new Set();
    let prev = null;
    for (const item of items) {
      const k = keyOf(item);
      if (seen.has(k)) continue;
      seen.add(k);
      let li = elements.get(k);
      if (!li) {
        li = make(item);
        elements.set(k, li);
      }
      const want = prev ? prev.nextSibling : list.firstChild;
      if (want !== li) list.insertBefore(li, want);
      prev = li;
      update(li, item);
    }
    for (const [k, li] of elements) {
      if (!seen.has(k)) {
        li.remove();
        elements.delete(k);
      }
    }
  }

  // refresh reads the room's webhooks and its newest dead letters (as
  // many as are shown, so older pages read stay). loud throws an error
  // for the caller to show; otherwise it goes into the status line.
  async function refresh(loud) {
    const mine = view();
    if (!mine || mine.gone || (!loud && document.hidden)) return;
    const my = ++gen;
    const limit = Math.min(MOST, Math.max(PAGE, letters.size));
    try {
      const [a, d] = await Promise.all([
        api("GET", roomPath(mine.name, "/webhooks")),
        api("GET", roomPath(mine.name, "/dead-letters?limit=" + limit)),
      ]);
      if (view() !== mine || my !== gen) return;
      renderHooks((a && a.webhooks) || []);
      deadNext = (d && d.next) || "";
      renderDead((d && d.dead_letters) || [], false);
    } catch (e) {
      if (loud) throw e;
      if (e.status !== 401 && view() === mine && my === gen) setText($("webhooks-status"), "Could not refresh: " + e.message);
    }
  }

  $("webhooks-refresh").addEventListener("click", () => act($("webhooks-refresh"), () => refresh(true)));

  // ---------- the webhooks ----------

  function renderHooks(list) {
    list = list.filter((h) => h && typeof h.name === "string");
    hooks = new Map(list.map((h) => [h.name, h]));
    keyed($("webhooks-list"), rows, list, (h) => h.name, hookItem, updateHook);
    setText($("webhooks-status"), list.length === 0
      ? "No webhooks: add one below to have this room's events sent to your system."
      : plural(list.length, "webhook.", "webhooks."));
  }

  function hookItem(h) {
    const name = h.name;
    const stat = (key, label) => el("div", null, el("dt", { text: label }), el("dd", { "data-stat": key }));
    const edit = el("button", { type: "button", text: "Edit", "data-action": "edit" });
    edit.setAttribute("aria-label", "Edit webhook " + name);
    const del = el("button", { type: "button", class: "danger", text: "Delete…", "data-action": "delete" });
    del.setAttribute("aria-label", "Delete webhook " + name + "…");
    edit.addEventListener("click", () => editHook(name));
    del.addEventListener("click", () => deleteHook(del, name));
    return el("li", { "data-webhook": name, "data-testid": "webhook" },
      el("h3", null, el("span", { text: name }), " ", el("span", { class: "badge" })),
      el("p", { class: "hook-line" }, el("code", { class: "hook-url" })),
      el("p", { class: "hint" }, "Events: ", el("span", { class: "hook-events" })),
      el("dl", { class: "pairs" }, stat("pending", "Pending"), stat("delivered", "Delivered"),
        stat("failed", "Failed tries"), stat("dead", "Dead letters"), stat("last_error", "Last error"),
        stat("last_delivered", "Last delivered")),
      el("div", { class: "buttons" }, edit, del));
  }

  const eventsText = (events) => ((events || []).includes("*") ? "all" : (events || []).join(", ") || "none");

  // health tells how the webhook's deliveries fare: failing when the last
  // try failed, ok when it succeeded, idle when nothing was tried.
  function health(s) {
    const failed = Date.parse(s.last_error_at || "");
    const done = Date.parse(s.last_delivered_at || "");
    if (failed && !(done >= failed)) return ["failing", "failing"];
    if (done) return ["ok", "delivering"];
    return ["idle", "nothing sent yet"];
  }

  function updateHook(li, h) {
    const s = h.stats || {};
    const [state, words] = health(s);
    const badge = li.querySelector(".badge");
    setText(badge, words);
    badge.setAttribute("data-health", state);
    const cls = "badge health-" + state;
    if (badge.className !== cls) badge.className = cls;
    setText(li.querySelector(".hook-url"), h.url || "");
    setText(li.querySelector(".hook-events"), eventsText(h.events));
    const dd = (k) => li.querySelector('dd[data-stat="' + k + '"]');
    setText(dd("pending"), fmt(num(s.pending) || 0));
    setText(dd("delivered"), fmt(num(s.delivered) || 0));
    setText(dd("failed"), fmt(num(s.failed) || 0));
    setText(dd("dead"), fmt(num(s.dead) || 0));
    setText(dd("last_error"), s.last_error ? s.last_error + " (" + fmtTime(s.last_error_at) + ")" : "none");
    setText(dd("last_delivered"), s.last_delivered_at ? fmtTime(s.last_delivered_at) : "never");
  }

  // editHook fills the form with a webhook, for replacing it.
  function editHook(name) {
    const h = hooks.get(name);
    if (!h) return;
    $("wh-name").value = h.name;
    $("wh-url").value = h.url || "";
    $("wh-secret").value = "";
    const all = (h.events || []).includes("*");
    for (const box of document.querySelectorAll('input[name="wh-event"]')) box.checked = !all && (h.events || []).includes(box.value);
    allEvents(all);
    $("wh-url").focus();
    notice("Editing webhook " + name + ": saving replaces it, with a new secret unless you enter one.");
  }

  function deleteHook(button, name) {
    return act(button, async () => {
      const mine = view();
      if (!mine) return;
      const s = (hooks.get(name) || {}).stats || {};
      const ok = await confirmAction("Delete webhook " + name + " of room " + mine.name + "?",
        "It is sent no more events. What it has not delivered is dropped: " +
        plural(num(s.pending) || 0, "pending delivery", "pending deliveries") + " and " +
        plural(num(s.dead) || 0, "dead letter", "dead letters") + ".", "Delete");
      if (!ok) return;
      await api("DELETE", roomPath(mine.name, "/webhooks/" + encodeURIComponent(name)));
      if (view() !== mine) return;
      notice("Deleted webhook " + name + ".");
      await refresh(true);
      if (focusLost()) $("webhooks-refresh").focus();
    });
  }

  // ---------- add or replace ----------

  $("webhook-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("webhook-save"), async () => {
      const mine = view();
      if (!mine) return;
      const name = $("wh-name").value.trim();
      const events = $("wh-all").checked ? ["*"]
        : [...document.querySelectorAll('input[name="wh-event"]:checked')].map((b) => b.value);
      const body = { url: $("wh-url").value.trim(), events };
      const secret = $("wh-secret").value.trim();
      if (secret) body.secret = secret;
      const had = rows.has(name);
      if (had) {
        const ok = await confirmAction("Replace webhook " + name + " of room " + mine.name + "?",
          secret ? "Its URL, events and secret are replaced by those entered."
            : "Its URL and events are replaced, and it gets a new secret: its receiver must check signatures with the new one.",
          "Replace");
        if (!ok) return;
      }
      // The API judges the name, URL (no private address unless the
      // server allows it), events and secret, and says what is wrong.
      const a = await api("PUT", roomPath(mine.name, "/webhooks/" + encodeURIComponent(name)), body);
      if (view() !== mine) return;
      $("wh-secret").value = "";
      notice((had ? "Replaced" : "Added") + " webhook " + name + ".");
      showSecret(name, (a && a.secret) || "");
      await refresh(false);
    });
  });

  // showSecret shows a webhook's secret, this once, selected for copying.
  function showSecret(name, secret) {
    const box = $("webhook-secret");
    box.value = secret;
    setText($("webhook-secret-note"), "The signing secret of webhook " + name +
      ": its receiver checks each delivery's webhook-signature with it. Copy it now: it is not shown again.");
    $("webhook-secret-result").hidden = false;
    box.focus();
    box.select();
  }

  function hideSecret() {
    $("webhook-secret").value = "";
    setText($("webhook-secret-note"), "");
    $("webhook-secret-result").hidden = true;
  }

  $("webhook-secret-hide").addEventListener("click", () => {
    hideSecret();
    $("wh-name").focus();
  });

  // The Clipboard API needs a secure origin; elsewhere the secret is
  // selected and copied the old way, or left selected for Ctrl+C.
  $("webhook-secret-copy").addEventListener("click", async () => {
    const box = $("webhook-secret");
    let ok = false;
    try {
      await navigator.clipboard.writeText(box.value);
      ok = true;
    } catch (e) {
      box.focus();
      box.select();
      try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
    }
    notice(ok ? "Copied the secret." : "Could not copy: the secret is selected; press Ctrl+C (⌘C on a Mac) to copy it.");
  });

  // ---------- dead letters ----------

  // A letter replayed and dead again is another element: its text is
  // made once.
  const letterKey = (d) => d.webhook + "/" + d.message.id + "/" + (d.dead_at || "");

  // renderDead shows dead letters, newest first: the list as read, or
  // older ones after those shown (more).
  function renderDead(list, more) {
    list = list.filter((d) => d && d.message && typeof d.message.id === "string");
    if (more) list = [...letters.values()].map((li) => li.letter).concat(list);
    keyed($("dead-list"), letters, list, letterKey, deadItem, () => {});
    const total = [...hooks.values()].reduce((n, h) => n + (num(h.stats && h.stats.dead) || 0), 0);
    const shown = letters.size;
    setText($("dead-status"), shown === 0 ? "No dead letters."
      : plural(Math.max(total, shown), "dead letter", "dead letters") + (deadNext ? ", the newest " + fmt(shown) + " shown." : "."));
    $("dead-replay-all").hidden = shown === 0;
    $("dead-more").hidden = !deadNext;
  }

  function deadItem(d) {
    const m = d.message;
    const attempts = num(d.attempts) || 0;
    const parts = ["to webhook " + d.webhook, plural(attempts, "try", "tries")];
    if (d.last_error) parts.push("last error: " + d.last_error);
    parts.push("event at " + fmtTime(m.timestamp), m.id);
    const replay = el("button", { type: "button", text: "Replay", "data-action": "replay" });
    replay.setAttribute("aria-label", "Replay " + m.type + " " + m.id);
    replay.addEventListener("click", () => replayOne(replay, m.id));
    const li = el("li", { "data-dead": m.id, "data-webhook": d.webhook, "data-testid": "dead-letter" },
      el("time", { text: fmtTime(d.dead_at), dateTime: d.dead_at || "" }), " ",
      el("strong", { text: m.type || "?" }), " · " + parts.join(" · "),
      m.data !== undefined ? el("code", { class: "detail", text: JSON.stringify(m.data) }) : null,
      el("div", { class: "buttons" }, replay));
    li.letter = d;
    return li;
  }

  // replayed tells what a replay did and reads the panel again.
  async function replayed(mine, a) {
    const n = num(a && a.replayed) || 0;
    notice(n === 0 ? "Nothing to replay: the dead letters were replayed or dropped already."
      : "Replaying " + plural(n, "delivery", "deliveries") + " of room " + mine.name + ".");
    await refresh(true);
    if (focusLost()) $(letters.size ? "dead-replay-all" : "webhooks-refresh").focus();
  }

  // replayOne sends one message again, to every webhook it is a dead
  // letter of.
  function replayOne(button, id) {
    return act(button, async () => {
      const mine = view();
      if (!mine) return;
      const a = await api("POST", roomPath(mine.name, "/dead-letters/replay"), { ids: [id] });
      if (view() === mine) await replayed(mine, a);
    });
  }

  $("dead-replay-all").addEventListener("click", () => act($("dead-replay-all"), async () => {
    const mine = view();
    if (!mine) return;
    const ok = await confirmAction("Replay every dead letter of room " + mine.name + "?",
      "Each is sent again, with a new 24-hour window of retries. Receivers that drop a webhook-id they have seen " +
      "ignore what they had.", "Replay all");
    if (!ok) return;
    const a = await api("POST", roomPath(mine.name, "/dead-letters/replay"));
    if (view() === mine) await replayed(mine, a);
  }));

  $("dead-more").addEventListener("click", () => act($("dead-more"), async () => {
    const mine = view();
    if (!mine || !deadNext) return;
    const my = ++gen;
    const d = await api("GET", roomPath(mine.name, "/dead-letters?limit=" + PAGE + "&after=" + encodeURIComponent(deadNext)));
    if (view() !== mine || my !== gen) return;
    deadNext = (d && d.next) || "";
    renderDead((d && d.dead_letters) || [], true);
  }));

  // ---------- the audit log ----------

  // auditSummary says in words what a webhook or replay entry's detail
  // holds, or "" for other entries.
  function auditSummary(e) {
    const d = e.detail;
    if (!d || typeof d !== "object") return "";
    if (e.action === "webhook" && typeof d.webhook === "string") {
      if (d.deleted) return "webhook " + d.webhook + " deleted";
      return "webhook " + d.webhook + (d.created ? " added" : " replaced") + (d.url ? ": " + d.url : "") +
        (Array.isArray(d.events) ? ", events " + eventsText(d.events) : "");
    }
    if (e.action === "replay") {
      const n = num(d.replayed) || 0;
      return plural(n, "dead letter", "dead letters") + " replayed" + (d.all ? " (all)" : "");
    }
    return "";
  }

  return { reset, refresh: () => refresh(false), auditSummary };
};
