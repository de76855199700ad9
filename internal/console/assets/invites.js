// waitroom operator console: the Invites panel of a room. Loaded before
// app.js, which starts it with the helpers both share (the API call with
// its CSRF header, messages, formats) and a way to read the open room
// view; the panel keeps nothing else of app.js's.
//
// Stable element ids for browser tests:
//   #invites-form #inv-count #inv-tier (in #inv-tier-field) #inv-uses #inv-expiry #invites-make
//   #invites-result #invites-links #invites-summary #invites-copy
"use strict";

window.waitroomInvites = (c) => {
  const { $, el, api, act, showError, notice, fmt, fmtTime, num, roomPath, tiersOf, view } = c;
  const MAX_INVITES = 1000; // per request, as the API allows
  let tierKey = null; // the tier names the select offers now

  // reset empties the panel for a room view just opened.
  function reset() {
    tierKey = null;
    $("inv-count").value = "1";
    $("inv-uses").value = "1";
    $("inv-expiry").value = "";
    $("invites-result").hidden = true;
    $("invites-links").value = "";
    $("invites-summary").textContent = "";
  }

  // setRoom offers the room's tiers, keeping the choice made while the
  // tiers stay the same. Without tiers there is nothing to choose.
  function setRoom(r) {
    const tiers = tiersOf(r);
    const key = JSON.stringify(tiers.map((t) => t.name));
    if (key === tierKey) return;
    tierKey = key;
    const select = $("inv-tier");
    const was = select.value;
    const lowest = tiers.length ? "lowest tier (" + tiers[tiers.length - 1].name + ")" : "lowest tier";
    select.replaceChildren(el("option", { value: "", text: lowest }),
      ...tiers.map((t) => el("option", { value: t.name, text: t.name })));
    select.value = tiers.some((t) => t.name === was) ? was : "";
    $("inv-tier-field").hidden = tiers.length === 0;
  }

  // wholeIn reads a number box: a whole number in [lo, hi], or null.
  function wholeIn(id, lo, hi) {
    const s = $(id).value.trim();
    const n = Number(s);
    return s !== "" && Number.isInteger(n) && n >= lo && n <= hi ? n : null;
  }

  const plural = (n, one, many) => fmt(n) + " " + (n === 1 ? one : many);

  $("invites-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("invites-make"), async () => {
      const mine = view();
      if (!mine) return;
      const count = wholeIn("inv-count", 1, MAX_INVITES);
      if (count === null) {
        showError({ message: "Enter a whole number of invites from 1 to 1,000." });
        $("inv-count").focus();
        return;
      }
      const uses = wholeIn("inv-uses", 1, Number.MAX_SAFE_INTEGER);
      if (uses === null) {
        showError({ message: "Enter how many joins each invite is good for: a whole number, at least 1." });
        $("inv-uses").focus();
        return;
      }
      const body = { count, uses };
      const tier = $("inv-tier").value;
      if (tier) body.tier = tier;
      const expiry = $("inv-expiry").value.trim();
      if (expiry) body.expiry = expiry;
      const a = await api("POST", roomPath(mine.name, "/invites"), body);
      if (view() !== mine) return;
      show(mine, (a && a.invites) || [], tier);
    });
  });

  // show puts the links made into the box as absolute URLs, one a line,
  // selected for copying.
  function show(mine, invites, tier) {
    const links = invites.map((i) => (/^https?:\/\//.test(i.link) ? i.link : location.origin + i.link));
    const n = links.length;
    const box = $("invites-links");
    box.value = links.join("\n");
    box.rows = Math.min(Math.max(n, 2), 10);
    const first = invites[0] || {};
    const uses = num(first.uses) || 1;
    const where = tier ? " for tier " + tier : tiersOf(mine.room).length ? " for the lowest tier" : "";
    $("invites-summary").textContent = plural(n, "invite", "invites") + where + ", good for " + plural(uses, "join", "joins") +
      (n === 1 ? "" : " each") + (first.expires_at ? " until " + fmtTime(first.expires_at) : "") + ".";
    $("invites-result").hidden = false;
    notice("Made " + plural(n, "invite", "invites") + " for room " + mine.name + ".");
    box.focus();
    box.select();
  }

  // The Clipboard API needs a secure origin; elsewhere the links are
  // selected and copied the old way, or left selected for Ctrl+C.
  $("invites-copy").addEventListener("click", async () => {
    const box = $("invites-links");
    const n = box.value ? box.value.split("\n").length : 0;
    let ok = false;
    try {
      await navigator.clipboard.writeText(box.value);
      ok = true;
    } catch (e) {
      box.focus();
      box.select();
      try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
    }
    notice(ok ? "Copied " + plural(n, "link.", "links.")
      : "Could not copy: the links are selected; press Ctrl+C (⌘C on a Mac) to copy them.");
  });

  return { reset, setRoom };
};
