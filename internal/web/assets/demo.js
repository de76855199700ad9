/*
 * waitroom demo: the sample app (data-mode="app") and the one-person-per-tab
 * line (data-mode="client"), both built on /waitroom.js.
 */
(function () {
  "use strict";

  var root = document.getElementById("demo");
  if (!root || !window.Waitroom) return;
  var d = root.dataset;

  function part(name) {
    return root.querySelector('[data-demo="' + name + '"]');
  }

  function say(heading, body) {
    part("heading").textContent = heading;
    part("body").textContent = body;
  }

  function goodbye(s) {
    if (s.end_reason === "left") {
      return "Your place went to the next person in line, if anyone was waiting.";
    }
    return "Your visit has ended (" + (s.end_reason || s.status) + ").";
  }

  if (d.mode === "app") {
    // The app holds the id the waiting page put in the cookie; it keeps the
    // slot alive with heartbeats and gives it up with Leave.
    var leave = part("leave");
    var app = window.Waitroom.resume({
      room: d.room,
      id: d.session,
      storage: "none",
      heartbeat: 15000,
      onEnded: function (s) {
        say(s.end_reason === "left" ? "You left" : "Your visit has ended", goodbye(s));
        var again = document.createElement("a");
        again.className = "button";
        again.href = d.waitingUrl;
        again.textContent = "Join the line again";
        leave.replaceWith(again);
      },
    });
    leave.addEventListener("click", function () {
      leave.disabled = true;
      app.leave().catch(function () {
        leave.disabled = false;
        part("body").textContent = "Leaving failed; please try again.";
      });
    });
    return;
  }

  // Client mode: every tab is one person, its session id in sessionStorage.
  var leaveButton = part("leave");
  var joinButton = part("join");
  var place = part("place");
  var line = null;

  function start() {
    joinButton.hidden = true;
    say("Joining the line…", "");
    line = window.Waitroom.join({
      room: d.room,
      storage: "session",
      heartbeat: 15000,
      onPosition: function (s) {
        place.hidden = false;
        part("position").textContent = String(s.position);
        var ahead = s.ahead === 1 ? "1 person is" : s.ahead + " people are";
        say("You’re in line", s.ahead === 0 ? "You’re next." : ahead + " ahead of you.");
        leaveButton.hidden = false;
        document.title = "No. " + s.position + " in line · Demo line";
      },
      onAdmitted: function (s) {
        place.hidden = true;
        say("You are in", "This tab holds one of the room’s " + s.capacity + " places. Leave to hand it to the next person.");
        leaveButton.hidden = false;
        document.title = "You are in · Demo line";
      },
      onEnded: function (s) {
        place.hidden = true;
        say(s.end_reason === "left" ? "You left" : "Your visit has ended", goodbye(s));
        leaveButton.hidden = true;
        joinButton.hidden = false;
        document.title = "Left · Demo line";
      },
      onError: function (err) {
        if (!line || !line.session) part("body").textContent = "Could not reach the server: " + err.message;
      },
    });
  }

  leaveButton.addEventListener("click", function () {
    leaveButton.disabled = true;
    line.leave().then(function () {
      leaveButton.disabled = false;
    }, function () {
      leaveButton.disabled = false;
    });
  });
  joinButton.addEventListener("click", start);
  start();
})();
