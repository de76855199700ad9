// waitroom operator console: the configuration form of the room view. It
// shows the room's whole configuration, checks what the API's messages would
// not make plain (a duration it cannot read, what held places need), and
// saves the fields that changed, once confirmed, with PATCH /v1/rooms/{room}
// (a merge patch) on the condition that the room is still as shown
// (If-Match, room.js's patchConfig); a field the page or the API finds wrong
// is marked and gets the focus. When someone else changed the room
// meanwhile, nothing is saved and the form shows the room as it now is. Loaded before
// app.js, which starts it with the helpers of core.js; it reads the open room
// view from room.js.
//
// Stable element ids for browser tests:
//   #config-form #cfg-FIELD (mode capacity rate_per_minute active_timeout
//     max_session waiting_timeout grace inventory opens_at closes_at
//     target_url return_origins paused tiers tier_policy challenge
//     challenge_min challenge_max invite_keys invite_only hold_places claim_window
//     notify_at) #config-save #config-cancel; a field the page or the API
//     finds wrong gets aria-invalid="true" and the focus
"use strict";

window.waitroomConfig = (c) => {
  const { $, el, showError, notice, confirmAction, act } = c;
  const { view, configOf, patchConfig } = c.room;
  const CFG_TEXT = ["active_timeout", "max_session", "waiting_timeout", "grace", "target_url"];
  const CFG_INT = ["capacity", "rate_per_minute"];
  // The durations, by the names the page gives them.
  const CFG_DURATIONS = { active_timeout: "Active timeout", max_session: "Max session",
    waiting_timeout: "Waiting timeout", grace: "Grace", claim_window: "Claim window" };
  const MAX_NOTIFY_AT = 1000; // as the API allows

  // openConfig fills the form with the room as shown now, which stays the
  // form's base: what the changes are computed from and the version they
  // are saved on, however the room changes (live) while the form is open.
  function openConfig() {
    const rv = view();
    const r = rv && rv.room;
    if (!r) return;
    rv.formBase = r;
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

  // goDuration reads a duration in the API's form ("90s", "1h30m", "0":
  // numbers each with a unit, a fraction only after a digit, no sign, the
  // micro sign µ but not the Greek mu) as milliseconds, or null when it is
  // none: what the server refuses, the page refuses in words first.
  function goDuration(s) {
    if (s === "0") return 0;
    if (s.length > 32) return null;
    const units = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
    const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
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

  function formConfig(base) {
    const c = configOf(base);
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
    formDoor(c, configOf(base));
    formHolds(c);
    return c;
  }

  // mergePatch is the JSON merge patch from before to after: the fields
  // that changed with their new values, null for those removed.
  function mergePatch(before, after) {
    const patch = {};
    for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) patch[k] = after[k] === undefined ? null : after[k];
    }
    return patch;
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
      const rv = view();
      if (!rv || !rv.room) return;
      clearInvalid();
      const bad = checkConfig();
      if (bad) {
        showError({ message: bad[1] });
        markInvalid(bad[0]);
        return;
      }
      const base = rv.formBase || rv.room;
      const before = configOf(base);
      const after = formConfig(base);
      const diff = changes(before, after);
      if (diff.length === 0) {
        notice("Nothing changed.");
        return;
      }
      const ok = await confirmAction("Change the configuration of room " + rv.name + "?",
        "These fields change; every other field stays as it is:", "Save", diff);
      if (!ok) return;
      // Named as the view is now, as patchConfig saves to it.
      try {
        await patchConfig(mergePatch(before, after), "Room " + view().name + " is reconfigured.", base);
      } catch (e) {
        if (e.status === 400) markNamed(e.message);
        // Changed meanwhile: the form shows the room as it now is.
        if (e.stale && view() && view().room) openConfig();
        throw e;
      }
      closeConfig();
    });
  });
};
