// /waitroom.js following one session against a real server: join, the
// updates (Server-Sent Events, and polling where there is no EventSource or
// its stream fails), the heartbeat, leave, resuming, and the page's
// pagehide/pageshow. See harness.mjs for how it runs.

import { test } from "node:test";
import assert from "node:assert/strict";

import {
  browser,
  call,
  joinDirect,
  leaveDirect,
  putRoom,
  readDirect,
  recorder,
  roomName,
  server,
  sleep,
  waitFor,
} from "./harness.mjs";

// oneSlot is a room of one slot whose active sessions do not idle out.
const oneSlot = { capacity: 1, waiting_timeout: "30s", active_timeout: "0s", grace: "30s" };

for (const transport of ["poll", "sse"]) {
  test(`join waits in line, follows its position and is admitted when the slot frees (${transport})`, async (t) => {
    const room = roomName("line-" + transport);
    await putRoom(room, oneSlot);
    const blocker = await joinDirect(room);
    assert.equal(blocker.status, "active");
    const ahead = await joinDirect(room);
    assert.equal(ahead.status, "waiting");

    const page = browser({ eventSource: transport === "sse" ? "node" : "none" });
    const rec = recorder();
    const line = page.Waitroom.join({ room, poll: 100, ...rec.callbacks });
    t.after(() => line.close());

    const first = await line.ready;
    assert.equal(first.status, "waiting");
    assert.equal(first.room, room);
    assert.equal(first.position, 2);
    assert.equal(first.ahead, 1);
    assert.equal(line.id, first.id);
    assert.equal(line.session, first);
    assert.equal(page.window.localStorage.getItem(page.storageKey(room)), first.id, "the id is stored for the room");
    assert.equal(rec.of("onPosition")[0], first, "onPosition gets the first Session");
    assert.equal(rec.calls[0].self, line, "callbacks are called with the line as this");
    assert.equal(line.mode, transport);
    assert.equal((await readDirect(room, first.id)).status, "waiting", "the server has it waiting");
    if (transport === "sse") {
      assert.equal(page.sources.length, 1);
      assert.equal(page.sources[0].url, `${server}/v1/rooms/${room}/sessions/${first.id}/events`);
    } else {
      assert.equal(page.sources.length, 0);
    }

    // The one ahead leaves: position 1.
    await leaveDirect(room, ahead.id);
    await waitFor("onPosition with position 1", () => rec.of("onPosition").some((s) => s.position === 1 && s.ahead === 0));

    // The slot frees: admitted, once, with a pass.
    await leaveDirect(room, blocker.id);
    const admitted = await waitFor("onAdmitted", () => rec.of("onAdmitted")[0]);
    assert.equal(admitted.status, "active");
    assert.equal(admitted.id, first.id);
    assert.equal(typeof admitted.pass, "string", "an active session carries its pass");
    assert.ok(admitted.admitted_at, "admitted_at is set");
    await sleep(400); // several polls, or stream updates
    assert.equal(rec.of("onAdmitted").length, 1, "onAdmitted is called once");
    assert.equal(rec.of("onEnded").length, 0);
    assert.equal(rec.of("onError").length, 0, "no errors: " + rec.of("onError").map(String));
    assert.ok(rec.of("onUpdate").length >= 3, "onUpdate on every update");
    assert.deepEqual([...new Set(rec.names())], ["onPosition", "onAdmitted"]);
    if (transport === "sse") {
      const statuses = page.sources[0].events.map((e) => JSON.parse(e.data).status);
      assert.ok(statuses.includes("active"), "the admission came over the stream: " + statuses);
      assert.ok(!page.requests.some((r) => r.startsWith("GET ")), "no polling while the stream works: " + page.requests);
    }
  });
}

test("a refused event stream falls back to polling and says so through onError", async (t) => {
  const room = roomName("refused");
  await putRoom(room, oneSlot);
  const blocker = await joinDirect(room);
  const page = browser({ eventSource: "refused" });
  const rec = recorder();
  const line = page.Waitroom.join({ room, poll: 100, ...rec.callbacks });
  t.after(() => line.close());
  await line.ready;
  const err = await waitFor("onError(stream_failed)", () => rec.of("onError")[0]);
  assert.equal(err.name, "WaitroomError");
  assert.equal(err.code, "stream_failed");
  assert.equal(err.status, 0);
  assert.match(err.message, /every few seconds/);
  assert.equal(line.mode, "poll");
  assert.equal(page.sources.length, 1);
  assert.equal(page.sources[0].readyState, 2, "the failed stream is closed");

  await leaveDirect(room, blocker.id);
  const s = await waitFor("onAdmitted while polling", () => rec.of("onAdmitted")[0]);
  assert.equal(s.status, "active");
  assert.equal(page.sources.length, 1, "no new stream once it fell back");
});

test("the heartbeat keeps an active slot from idling out; reads alone do not", async (t) => {
  const room = roomName("beat");
  await putRoom(room, { capacity: 2, waiting_timeout: "30s", active_timeout: "2s" });

  const beating = recorder();
  const pageA = browser();
  const a = pageA.Waitroom.join({ room, poll: 100, heartbeat: 250, ...beating.callbacks });
  t.after(() => a.close());
  const quiet = recorder();
  const pageB = browser();
  const b = pageB.Waitroom.join({ room, poll: 100, heartbeat: 0, ...quiet.callbacks });
  t.after(() => b.close());

  assert.equal((await a.ready).status, "active");
  assert.equal((await b.ready).status, "active");
  assert.equal(beating.of("onAdmitted").length, 1, "admitted on join");

  // Past active_timeout: the quiet one (reads, no heartbeats) idles out.
  const ended = await waitFor("the quiet session to idle out", () => quiet.of("onEnded")[0], 10000);
  assert.equal(ended.status, "expired");
  assert.equal(ended.end_reason, "idle");
  assert.equal(pageB.window.localStorage.getItem(pageB.storageKey(room)), null, "an ended session is forgotten");
  assert.ok(!pageB.requests.some((r) => r.endsWith("/heartbeat")), "heartbeat: 0 sends none");

  await sleep(2000);
  const now = await readDirect(room, a.id);
  assert.equal(now.status, "active", "the one with heartbeats is still active after two active_timeouts");
  const beats = pageA.requests.filter((r) => r === `POST ${server}/v1/rooms/${room}/sessions/${a.id}/heartbeat`).length;
  assert.ok(beats >= 8, `heartbeats every 250ms: ${beats}`);
  assert.equal(beating.of("onEnded").length, 0);

  // heartbeat() by hand: the Session, delivered as an update.
  const updates = beating.of("onUpdate").length;
  const s = await a.heartbeat();
  assert.equal(s.status, "active");
  assert.equal(s.id, a.id);
  assert.ok(beating.of("onUpdate").length > updates, "heartbeat() delivers its Session");

  // After close() nothing more is sent.
  a.close();
  await sleep(100);
  const sent = pageA.requests.length;
  await sleep(500);
  assert.equal(pageA.requests.length, sent, "close() stops polls and heartbeats: " + pageA.requests.slice(sent));
  assert.equal((await readDirect(room, a.id)).status, "active", "close() does not leave");
});

test("leave gives up the slot to the next in line and ends the line", async (t) => {
  const room = roomName("leave");
  await putRoom(room, oneSlot);
  const first = recorder();
  const pageA = browser({ eventSource: "node" });
  const a = pageA.Waitroom.join({ room, ...first.callbacks });
  t.after(() => a.close());
  assert.equal((await a.ready).status, "active");
  const second = recorder();
  const pageB = browser({ eventSource: "node" });
  const b = pageB.Waitroom.join({ room, ...second.callbacks });
  t.after(() => b.close());
  assert.equal((await b.ready).status, "waiting");

  const left = await a.leave();
  assert.equal(left.status, "left");
  assert.equal(left.end_reason, "left");
  assert.ok(left.ended_at);
  assert.equal(a.session, left);
  assert.deepEqual(first.names(), ["onAdmitted", "onEnded"]);
  assert.equal(first.of("onEnded")[0], left);
  assert.equal(pageA.window.localStorage.getItem(pageA.storageKey(room)), null, "leave forgets the stored id");
  assert.equal(pageA.sources[0].readyState, 2, "the stream is closed");
  assert.equal((await readDirect(room, a.id)).status, "left");

  const admitted = await waitFor("the next in line admitted", () => second.of("onAdmitted")[0], 5000);
  assert.equal(admitted.status, "active");

  // Leaving again answers the ended session; no callback fires twice.
  const again = await a.leave();
  assert.equal(again.status, "left");
  assert.equal(first.of("onEnded").length, 1);

  // The second leaves an active slot; the server says so too.
  await b.leave();
  assert.equal((await readDirect(room, b.id)).status, "left");
  assert.equal(second.of("onEnded").length, 1);
});

test("leave resolves with the line's final session when the stream tells the end first", async (t) => {
  const room = roomName("leave-order");
  await putRoom(room, oneSlot);
  const rec = recorder();
  // The leave's answer reaches the script only after the stream has told
  // it the session ended: the order a slow network can give.
  const page = browser({
    eventSource: "node",
    fetchGate: (method) => (method === "DELETE" ? waitFor("the stream tells the end", () => rec.of("onEnded")[0], 10000) : undefined),
  });
  const a = page.Waitroom.join({ room, ...rec.callbacks });
  t.after(() => a.close());
  assert.equal((await a.ready).status, "active");
  const left = await a.leave();
  assert.equal(left.status, "left");
  assert.deepEqual(rec.names(), ["onAdmitted", "onEnded"], "one onEnded, from the stream");
  assert.equal(a.session, left, "leave resolves with the line's session");
  assert.equal(rec.of("onEnded")[0], left, "leave resolves with the session onEnded had");
});

test("join resumes the stored live session; resume follows an id and never joins", async (t) => {
  const room = roomName("resume");
  await putRoom(room, oneSlot);
  const blocker = await joinDirect(room);
  t.after(() => leaveDirect(room, blocker.id));

  const page = browser();
  const l1 = page.Waitroom.join({ room, poll: 100 });
  const s1 = await l1.ready;
  l1.close();
  assert.equal(s1.status, "waiting");

  // The same page again (a reload): the stored session, no new ticket.
  const l2 = page.Waitroom.join({ room, poll: 100 });
  t.after(() => l2.close());
  const s2 = await l2.ready;
  assert.equal(s2.id, s1.id);
  assert.equal(s2.ticket, s1.ticket);
  assert.equal(page.requests.filter((r) => r === `POST ${server}/v1/rooms/${room}/sessions`).length, 1, "one join");
  l2.close();

  // storage "session" keeps one per tab, "none" nothing.
  const tab = page.Waitroom.join({ room, poll: 100, storage: "session" });
  const st = await tab.ready;
  tab.close();
  assert.notEqual(st.id, s1.id, "sessionStorage is a different store");
  assert.equal(page.window.sessionStorage.getItem(page.storageKey(room)), st.id);
  const none = page.Waitroom.join({ room, poll: 100, storage: "none" });
  const sn = await none.ready;
  none.close();
  assert.ok(sn.id !== s1.id && sn.id !== st.id);
  assert.equal(page.window.localStorage.getItem(page.storageKey(room)), s1.id, "storage none wrote nothing");

  // A stored id of a session that ended: a fresh join.
  await leaveDirect(room, st.id);
  const again = page.Waitroom.join({ room, poll: 100, storage: "session" });
  const sa = await again.ready;
  again.close();
  assert.notEqual(sa.id, st.id);
  assert.equal(sa.status, "waiting");

  // resume follows a session whose id the app holds, on another page.
  const other = browser();
  const rec = recorder();
  const r = other.Waitroom.resume({ room, id: s1.id, poll: 100, storage: "none", ...rec.callbacks });
  t.after(() => r.close());
  assert.equal((await r.ready).id, s1.id);
  assert.ok(!other.requests.some((q) => q.startsWith("POST ")), "resume never joins");

  // resume of an id the server does not know: the forgotten stand-in, ended.
  const gone = recorder();
  const g = other.Waitroom.resume({ room, id: "no-such-session", storage: "none", ...gone.callbacks });
  const sg = await g.ready;
  assert.deepEqual({ ...sg }, { id: "no-such-session", room, status: "expired", end_reason: "unknown" });
  assert.deepEqual(gone.names(), ["onEnded"]);
  assert.ok(!other.requests.some((q) => q.startsWith("POST ")), "resume never joins");

  // The required options.
  assert.throws(() => page.Waitroom.join({}), /room option is required/);
  assert.throws(() => page.Waitroom.resume({ room }), /id option is required/);
});

test("pagehide tells the server with a beacon; pageshow from the back/forward cache resumes", async (t) => {
  const room = roomName("page");
  await putRoom(room, oneSlot);
  const blocker = await joinDirect(room);
  t.after(() => leaveDirect(room, blocker.id));

  const page = browser();
  const rec = recorder();
  const line = page.Waitroom.join({ room, poll: 100, ...rec.callbacks });
  t.after(() => line.close());
  await line.ready;
  assert.equal(page.listenerCount("pagehide"), 1);
  assert.equal(page.listenerCount("pageshow"), 1);
  await waitFor("a poll", () => page.requests.some((r) => r === `GET ${server}/v1/rooms/${room}/sessions/${line.id}`));

  page.fire("pagehide", { persisted: true });
  assert.equal(page.beacons.length, 1);
  assert.equal(page.beacons[0].url, `${server}/v1/rooms/${room}/sessions/${line.id}/away`);
  assert.equal(await page.beacons[0].status, 204, "the server took the beacon");
  await sleep(50);
  const sent = page.requests.length;
  await sleep(400);
  assert.equal(page.requests.length, sent, "a hidden page stops polling: " + page.requests.slice(sent));

  const positions = rec.of("onPosition").length;
  page.fire("pageshow", { persisted: true });
  await waitFor("a read after pageshow", () => rec.of("onPosition").length > positions);
  await waitFor("polling again", () => page.requests.length > sent + 2);
  assert.equal((await readDirect(room, line.id)).status, "waiting");

  // close() removes the listeners.
  line.close();
  assert.equal(page.listenerCount("pagehide"), 0);
  assert.equal(page.listenerCount("pageshow"), 0);

  // beacon: false listens to neither.
  const quiet = browser();
  const q = quiet.Waitroom.join({ room, poll: 100, beacon: false, storage: "none" });
  t.after(() => q.close());
  await q.ready;
  assert.equal(quiet.listenerCount("pagehide"), 0);
  quiet.fire("pagehide", { persisted: true });
  assert.equal(quiet.beacons.length, 0);
});

test("a failed join rejects ready with a WaitroomError and reaches onError", async () => {
  const page = browser();
  const rec = recorder();
  const room = roomName("missing");
  const line = page.Waitroom.join({ room, ...rec.callbacks });
  await assert.rejects(line.ready, (err) => {
    assert.equal(err.name, "WaitroomError");
    assert.equal(err.status, 404);
    assert.equal(err.code, "room_not_found");
    assert.ok(err.message.length > 0);
    return true;
  });
  assert.deepEqual(rec.names(), ["onError"]);
  assert.equal(rec.of("onError")[0].code, "room_not_found");

  // A room name the server refuses.
  const bad = page.Waitroom.join({ room: "Not A Room!" });
  await assert.rejects(bad.ready, { name: "WaitroomError", status: 400, code: "invalid_room_name" });

  // The server is unreachable: fetch's own error.
  const down = browser({ origin: "http://127.0.0.1:9" });
  const d = down.Waitroom.join({ room: "x", base: "http://127.0.0.1:1" });
  await assert.rejects(d.ready, TypeError);
  assert.equal((await call("GET", "/healthz")).status, 200);
});
