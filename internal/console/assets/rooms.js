// waitroom operator console: the list of rooms, read from GET /v1/stats
// every 2 seconds while it is shown (and at once when the page is shown
// again), each room a link to its view; the form that creates a room (PUT
// /v1/rooms/{room}, confirmed, for a name no room has); and the state
// badge, which the room view shows too. Loaded before app.js, which starts
// it with the helpers of core.js.
//
// Stable element ids for browser tests:
//   #rooms (table) #rooms-body tr[data-room=NAME] (a link per room) #rooms-status
//   #create-form #create-name #create-capacity #create-paused #create
"use strict";

window.waitroomRooms = (c) => {
  const { $, el, api, nf, fmt, fmtRate, setText, showView, focusHeading, act, confirmAction, notice, showError,
    roomPath } = c;
  const ROOM_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
  const STATE_LABEL = {
    open: "Open", paused: "Paused", scheduled: "Scheduled", drawing: "Drawing",
    closed: "Closed", sold_out: "Sold out",
  };

  let roomsTimer = 0;
  let roomsBusy = false;
  const roomRows = new Map();

  function openRooms() {
    showView("rooms");
    focusHeading("rooms-title");
    pollRooms();
    roomsTimer = setInterval(pollRooms, 2000);
  }

  async function pollRooms() {
    if (roomsBusy || document.hidden) return;
    roomsBusy = true;
    try {
      const a = await api("GET", "/v1/stats");
      if (!$("view-rooms").hidden) renderRooms((a && a.rooms) || []);
    } catch (e) {
      if (e.status !== 401) setText($("rooms-status"), "Could not refresh: " + e.message);
    } finally {
      roomsBusy = false;
    }
  }

  function badge(node, state) {
    setText(node, STATE_LABEL[state] || state || "—");
    const cls = "badge state-" + (state || "unknown");
    if (node.className !== cls) node.className = cls;
  }

  function renderRooms(list) {
    const body = $("rooms-body");
    list = list.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const seen = new Set();
    let prev = null;
    for (const r of list) {
      if (!r || typeof r.name !== "string") continue;
      seen.add(r.name);
      let row = roomRows.get(r.name);
      if (!row) {
        const link = el("a", { href: "#/rooms/" + encodeURIComponent(r.name), text: r.name });
        row = el("tr", { "data-room": r.name, "data-testid": "room-row" },
          el("th", { scope: "row" }, link), el("td", null, el("span", { class: "badge" })),
          el("td", { class: "num" }), el("td", { class: "num" }), el("td", { class: "num" }), el("td", { class: "num" }));
        roomRows.set(r.name, row);
      }
      const want = prev ? prev.nextSibling : body.firstChild;
      if (want !== row) body.insertBefore(row, want);
      prev = row;
      const c = row.children;
      badge(c[1].firstChild, r.state);
      setText(c[2], fmt(r.waiting));
      setText(c[3], fmt(r.active) + " / " + fmt(r.capacity));
      setText(c[4], fmtRate(r.joins_per_minute));
      setText(c[5], fmtRate(r.admissions_per_minute));
    }
    for (const [name, row] of roomRows) {
      if (!seen.has(name)) {
        row.remove();
        roomRows.delete(name);
      }
    }
    setText($("rooms-status"), seen.size === 0
      ? "No rooms yet: create one below."
      : seen.size === 1 ? "1 room." : nf.format(seen.size) + " rooms.");
  }

  // Create: a room under a name no room has yet (PUT would replace one
  // that exists), with a capacity and, if asked, paused; the rest of its
  // configuration takes the defaults. The API audits it.
  $("create-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    act($("create"), async () => {
      const name = $("create-name").value.trim();
      if (!ROOM_RE.test(name)) {
        showError({ message: "A room name is 1 to 64 of a–z, 0–9, “.”, “_” and “-”, starting with a letter or digit." });
        $("create-name").focus();
        return;
      }
      const capacity = Number($("create-capacity").value);
      if (!Number.isInteger(capacity) || capacity < 0) {
        showError({ message: "Enter the capacity as a whole number: how many people are admitted at once." });
        $("create-capacity").focus();
        return;
      }
      const paused = $("create-paused").checked;
      const a = await api("GET", "/v1/rooms");
      if (((a && a.rooms) || []).some((r) => r.room === name)) {
        showError({ message: "There is a room named \u201c" + name + "\u201d already: open it from the list to change it." });
        $("create-name").focus();
        return;
      }
      const ok = await confirmAction("Create room " + name + "?",
        "It admits up to " + fmt(capacity) + " people at once" + (paused ? " once you resume it; it starts paused" : "") +
        ". Every other setting starts at its default; change it in the room's view.", "Create room");
      if (!ok) return;
      await api("PUT", roomPath(name), { capacity, paused });
      $("create-name").value = "";
      window.addEventListener("hashchange", () => notice("Room " + name + " is created."), { once: true });
      location.hash = "#/rooms/" + encodeURIComponent(name);
    });
  });

  // leave stops the polling when another view opens.
  function leave() {
    clearInterval(roomsTimer);
    roomsTimer = 0;
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && roomsTimer) pollRooms();
  });

  return { open: openRooms, leave, badge };
};
