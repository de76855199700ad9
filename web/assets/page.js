/*
 * waitroom: the waiting page's live updates, on top of /waitroom.js.
 *
 * The page works without this script: it then reloads itself (a meta
 * refresh inside <noscript>, so it never fires here). With it, the page
 * follows the session's event stream, updates the figures in place, tells
 * screen readers when the place in line changes, and goes to the target the
 * moment the session is admitted.
 *
 * It reads the data-* attributes of #waitroom (see Page.Data in the Go
 * package) and updates the elements marked data-waitroom="position",
 * "ahead", "waiting", "active", "capacity", "eta", "announce" and
 * "progress" (a <progress>), wherever they are.
 */
(function () {
  "use strict";

  var root = document.getElementById("waitroom");
  if (!root || !window.Waitroom) return;
  var d = root.dataset;
  if (d.status !== "waiting" && d.status !== "active") return;

  var lang = d.lang || "en";
  var numbers = window.Intl && Intl.NumberFormat ? new Intl.NumberFormat(lang) : null;
  // The server's clock minus ours, so progress uses the server's idea of
  // how long the visitor has waited.
  var skew = Number(d.now) ? Number(d.now) - Date.now() : 0;

  function num(n) {
    return numbers ? numbers.format(n) : String(n);
  }

  function fill(text, values) {
    return String(text || "").replace(/\{(\w+)\}/g, function (m, k) {
      return Object.prototype.hasOwnProperty.call(values, k) ? values[k] : m;
    });
  }

  function singular(n) {
    return lang === "fr" ? n === 0 || n === 1 : n === 1;
  }

  // etaText mirrors Messages.etaText in i18n.go.
  function etaText(s) {
    if (typeof s.eta_low_seconds !== "number" || typeof s.eta_high_seconds !== "number") return d.tEtaUnknown;
    var lo = Math.floor(s.eta_low_seconds / 60);
    var hi = Math.ceil(s.eta_high_seconds / 60);
    if (hi <= 1) return d.tEtaUnderMinute;
    lo = Math.max(lo, 1);
    var one = d.tEtaMinuteOne, other = d.tEtaMinuteOther, range = d.tEtaMinuteRange;
    if (hi > 120) {
      lo = Math.max(Math.floor(lo / 60), 1);
      hi = Math.ceil(hi / 60);
      one = d.tEtaHourOne; other = d.tEtaHourOther; range = d.tEtaHourRange;
    }
    if (lo >= hi) return fill(singular(hi) ? one : other, { n: num(hi) });
    return fill(range, { low: num(lo), high: num(hi) });
  }

  // announcement mirrors Messages.announcement in i18n.go.
  function announcement(s) {
    var first = fill(d.tAnnouncePosition, { n: num(s.position) });
    var ahead = s.ahead || 0;
    var second = ahead === 0 ? d.tNext : fill(ahead === 1 ? d.tAheadOne : d.tAheadOther, { n: num(ahead) });
    return first + " " + second;
  }

  function each(name, f) {
    var els = document.querySelectorAll('[data-waitroom="' + name + '"]');
    for (var i = 0; i < els.length; i++) f(els[i]);
  }

  function set(name, text) {
    each(name, function (el) {
      if (el.textContent !== text) el.textContent = text;
    });
  }

  function render(s) {
    if (s.status !== "waiting") return;
    set("position", num(s.position));
    set("ahead", num(s.ahead || 0));
    set("waiting", num(s.waiting));
    set("active", num(s.active));
    set("capacity", num(s.capacity));
    set("eta", etaText(s));
    // The live region speaks only when its text changes, so an unchanged
    // place is not read out again on every update.
    set("announce", announcement(s));
    each("progress", function (el) {
      if (typeof s.eta_seconds === "number" && s.joined_at) {
        var waited = Math.max((Date.now() + skew - Date.parse(s.joined_at)) / 1000, 0);
        var total = waited + Math.max(s.eta_seconds, 0);
        el.value = total > 0 ? Math.min(Math.max(Math.floor((100 * waited) / total), 1), 99) : 1;
      } else {
        el.removeAttribute("value"); // indeterminate: no estimate yet
      }
    });
    document.title = fill(d.tTitlePosition, { n: num(s.position) }) + " · " + d.tTitle;
  }

  var admitted = d.status === "active";

  function onAdmitted(s) {
    if (s.status !== "active" || admitted) return;
    admitted = true;
    if (d.target) {
      // Stop following (no away beacon: this is no goodbye) and go in.
      line.close();
      window.location.replace(d.target);
    } else {
      window.location.reload(); // the server shows "You're in"
    }
  }

  function onEnded(s) {
    if (!admitted || s.status === "served") {
      // Dropped while waiting, or called in a manual room: the server
      // knows what to show (a new place at the back, or "your turn").
      window.location.reload();
      return;
    }
    set("heading", d.tEndedHeading);
    set("announce", d.tEndedBody);
    each("rejoin", function (el) { el.hidden = false; });
    document.title = d.tEndedHeading + " · " + d.tTitle;
  }

  var line = window.Waitroom.resume({
    room: d.room,
    id: d.session,
    storage: "none", // the cookie already holds the id
    heartbeat: 0, // a waiting page is presence, not activity
    onUpdate: function () { root.setAttribute("data-live", line.mode || ""); },
    onPosition: render,
    onAdmitted: onAdmitted,
    onEnded: onEnded,
    onError: function () { root.setAttribute("data-live", "retrying"); },
  });
})();
