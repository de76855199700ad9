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
 *
 * In a scheduled room (a "drop") the session first waits in a pre-queue:
 * it has opens_at and no position. The page then shows the elements marked
 * "prequeue" and hides those marked "line" (and "heading" says so), counts down to the opening in
 * "countdown" every second, shows the opening in local time in "opens-at"
 * and the pre-queue's size in "entrants". The live region speaks on
 * entering that state, a minute before the opening and at it, never every
 * second. When the draw gives the session its place (the stream delivers
 * it), the page switches to the line in place, announces "The draw is
 * done." with the place, and shows the elements marked "drawn" instead of
 * those marked "intro".
 *
 * A held place (joined by a trusted backend with a contact) whose turn
 * comes is invited: the page reloads, and the server shows its claim page,
 * whose button claims it.
 *
 * In a room with an inventory every update carries "remaining", what is
 * neither sold nor reserved. The page says it in "stock" ("About 12 left")
 * and, in "stock-note", that the visitor may not get one while more people
 * are ahead than units are left, or that everything left is reserved
 * (inside "stock-box", hidden in rooms without one). These change often
 * and are not read out; the live region adds the note only when the
 * visitor crosses into that state. When the line ends because everything
 * was sold (end_reason "sold_out"), the page says so in place, and the
 * live region says it once.
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

  function two(n) {
    return n < 10 ? "0" + n : String(n);
  }

  // plural mirrors Messages.plural in i18n.go.
  function plural(n, one, other) {
    return fill(singular(n) ? one : other, { n: num(n) });
  }

  // countdown mirrors Messages.countdown in i18n.go.
  function countdown(left) {
    if (left <= 0) return d.tDrawing;
    var secs = Math.ceil(left / 1000);
    var days = Math.floor(secs / 86400), h = Math.floor(secs / 3600) % 24, m = Math.floor(secs / 60) % 60, sec = secs % 60;
    if (days > 0) return fill(d.tClockDays, { n: num(days), time: two(h) + ":" + two(m) + ":" + two(sec) });
    if (h > 0) return h + ":" + two(m) + ":" + two(sec);
    return m + ":" + two(sec);
  }

  // span mirrors Messages.span in i18n.go.
  function span(left) {
    var mins = Math.max(Math.ceil(left / 60000), 1);
    if (mins < 120) return plural(mins, d.tMinuteOne, d.tMinuteOther);
    var hours = Math.floor((left + 1800000) / 3600000);
    if (hours < 48) return plural(hours, d.tHourOne, d.tHourOther);
    return plural(Math.floor((left + 43200000) / 86400000), d.tDayOne, d.tDayOther);
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

  function show(name, visible) {
    each(name, function (el) { el.hidden = !visible; });
  }

  // The pre-queue of a scheduled room: opensAt (ms, server time) while the
  // session waits for the draw, and the stage the live region last spoke
  // of ("later", "minute", "now").
  var opensAt = Number(d.opensAt) || 0;
  var pre = opensAt > 0;
  var stage = pre ? stageOf(opensAt - serverNow()) : "";
  var timer = 0;
  // The place the draw gave, while the live region still says it came from
  // the draw (until the place changes); null otherwise.
  var drawnPosition = null;
  // The stock state shown (see stockState); the place at which the
  // visitor crossed into "unlikely" or "reserved" and the note the live
  // region then added, while it still says it (until the place changes);
  // null and "" otherwise.
  var stock = d.stock || "";
  var stockPosition = null;
  var stockNote = "";

  function serverNow() {
    return Date.now() + skew;
  }

  function stageOf(left) {
    return left <= 0 ? "now" : left <= 60000 ? "minute" : "later";
  }

  // tick shows the time left, on every turn of the second.
  function tick() {
    clearTimeout(timer);
    timer = 0;
    if (!pre) return;
    var left = opensAt - serverNow();
    var clock = countdown(left);
    set("countdown", clock);
    document.title = (left > 0 ? fill(d.tTitleOpensIn, { time: clock }) : d.tDrawing) + " · " + d.tTitle;
    var now = stageOf(left);
    if (now !== stage) {
      // Rarely: on entering the pre-queue, a minute before, at the opening.
      stage = now;
      set("announce", left > 0 ? fill(d.tAnnounceOpensIn, { time: span(left) }) : d.tDrawing);
    }
    // Past the opening the clock stands still until the draw's update.
    if (left > 0) timer = setTimeout(tick, (left % 1000 || 1000) + 20);
  }

  // showOpening writes the opening in the visitor's own time zone.
  function showOpening() {
    var at = new Date(opensAt);
    each("opens-at", function (el) {
      el.setAttribute("datetime", at.toISOString());
      try {
        el.textContent = new Intl.DateTimeFormat(lang, {
          weekday: "short", day: "numeric", month: "short", hour: "numeric", minute: "2-digit", timeZoneName: "short",
        }).format(at);
      } catch (e) { /* keep the server's UTC text */ }
    });
  }

  // stockState mirrors stockState in i18n.go: "" without an inventory.
  function stockState(s) {
    if (typeof s.remaining !== "number") return "";
    if (s.remaining <= 0) return "reserved";
    if (s.position > s.remaining) return "unlikely";
    return "likely";
  }

  function doubtful(state) {
    return state === "unlikely" || state === "reserved";
  }

  // renderStock shows what is left, and reports whether the visitor has
  // just crossed into a state where they may not get one.
  function renderStock(s) {
    var now = stockState(s);
    var left = now === "likely" || now === "unlikely" ? fill(d.tStockLeft, { n: num(s.remaining) }) : "";
    var note = now === "unlikely" ? d.tStockUnlikely : now === "reserved" ? d.tStockReserved : "";
    show("stock-box", now !== "");
    set("stock", left);
    show("stock", left !== "");
    set("stock-note", note);
    show("stock-note", note !== "");
    var crossed = doubtful(now) && !doubtful(stock);
    stock = now;
    return crossed ? note : "";
  }

  function renderPreQueue(s) {
    var at = Date.parse(s.opens_at);
    set("entrants", plural(s.entrants || 0, d.tEntrantsOne, d.tEntrantsOther));
    // Without a place yet, the stock is shown but not read out.
    renderStock(s);
    if (!pre || at !== opensAt) {
      // Entering the pre-queue, or the opening moved: show it and say it.
      opensAt = at;
      pre = true;
      stage = "";
      set("heading", d.tPreHeading);
      show("line", false);
      show("prequeue", true);
      showOpening();
    }
    tick();
  }

  function render(s) {
    if (s.status !== "waiting") return;
    if (s.opens_at && !s.position) {
      renderPreQueue(s);
      return;
    }
    var drawn = pre; // the draw has just given this session its place
    if (pre) {
      pre = false;
      clearTimeout(timer);
      set("heading", d.tHeading);
      show("prequeue", false);
      show("line", true);
    }
    show("drawn", !!s.entry);
    show("intro", !s.entry);
    set("position", num(s.position));
    set("ahead", num(s.ahead || 0));
    set("waiting", num(s.waiting));
    set("active", num(s.active));
    set("capacity", num(s.capacity));
    set("eta", etaText(s));
    var note = renderStock(s);
    // The live region speaks only when its text changes, so an unchanged
    // place is not read out again on every update.
    if (drawn) drawnPosition = s.position;
    if (drawnPosition !== null && s.position !== drawnPosition) drawnPosition = null;
    if (note) {
      stockPosition = s.position;
      stockNote = note;
    }
    if (stockPosition !== null && (s.position !== stockPosition || !doubtful(stock))) {
      stockPosition = null;
      stockNote = "";
    }
    set("announce", (drawnPosition !== null ? d.tAnnounceDrawn + " " : "") + announcement(s) + (stockNote ? " " + stockNote : ""));
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

  // soldOut says, in place, that the line ended because everything was
  // sold. The live region speaks once: the heading's word (to the ear only,
  // the eye has the heading) and the sentence; no update follows.
  function soldOut() {
    pre = false;
    clearTimeout(timer);
    root.className = root.className.replace(/\bstate-\S+/, "state-sold-out");
    set("heading", d.tSoldOutTitle);
    show("prequeue", false);
    show("line", false);
    show("stock-box", false);
    each("announce", function (el) {
      var word = document.createElement("span");
      word.className = "visually-hidden";
      word.textContent = d.tSoldOutTitle + ". ";
      var text = document.createDocumentFragment();
      text.appendChild(word);
      text.appendChild(document.createTextNode(d.tSoldOutBody));
      el.textContent = "";
      el.appendChild(text);
    });
    document.title = d.tSoldOutTitle + " · " + d.tTitle;
  }

  function onEnded(s) {
    if (s.end_reason === "sold_out") {
      soldOut();
      return;
    }
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

  if (pre) {
    showOpening();
    tick();
  }
  // Background tabs run timers rarely: catch up on coming back.
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) tick();
  });

  var line = window.Waitroom.resume({
    room: d.room,
    id: d.session,
    storage: "none", // the cookie already holds the id
    heartbeat: 0, // a waiting page is presence, not activity
    onUpdate: function () { root.setAttribute("data-live", line.mode || ""); },
    // A held place whose turn came: the server shows its claim page.
    onInvited: function () {
      line.close();
      window.location.reload();
    },
    onPosition: render,
    onAdmitted: onAdmitted,
    onEnded: onEnded,
    onError: function () { root.setAttribute("data-live", "retrying"); },
  });
})();
