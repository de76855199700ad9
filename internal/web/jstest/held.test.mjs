// /waitroom.js following a held place against a real server: a trusted
// backend joins it with a contact over the admin API, the script follows
// it, sees it invited (onInvited, once, with claim_by), and the claim makes
// it active (onAdmitted, with its pass). See harness.mjs for how it runs.

import { test } from "node:test";
import assert from "node:assert/strict";

import { browser, joinDirect, leaveDirect, must, putRoom, readDirect, recorder, roomName, sleep, waitFor } from "./harness.mjs";

const holdRoom = { capacity: 1, hold_places: true, claim_window: "2m", waiting_timeout: "30s", active_timeout: "0s" };

for (const transport of ["poll", "sse"]) {
  test(`a held place: waits, onInvited once with claim_by, then the claim admits it (${transport})`, async (t) => {
    const room = roomName("held-" + transport);
    await putRoom(room, holdRoom);
    const blocker = await joinDirect(room);
    assert.equal(blocker.status, "active");

    // The trusted backend holds a place for someone it can reach.
    const held = await joinDirect(room, { contact: "mailto:ada@example.com" }, true);
    assert.equal(held.status, "waiting");
    assert.equal(held.contact, "mailto:ada@example.com");

    // The person's page follows it (from the link the backend sent).
    const page = browser({ eventSource: transport === "sse" ? "node" : "none" });
    const rec = recorder();
    const line = page.Waitroom.resume({ room, id: held.id, poll: 100, ...rec.callbacks });
    t.after(() => line.close());
    const first = await line.ready;
    assert.equal(first.id, held.id);
    assert.equal(first.status, "waiting");
    assert.equal(first.position, 1);
    assert.equal(first.contact, "mailto:ada@example.com");
    assert.equal(line.mode, transport);
    assert.deepEqual(rec.names(), ["onPosition"]);

    // Its turn: invited, its slot kept until claim_by.
    const before = Date.now();
    await leaveDirect(room, blocker.id);
    const invited = await waitFor("onInvited", () => rec.of("onInvited")[0]);
    assert.equal(invited.status, "invited");
    assert.equal(invited.id, held.id);
    assert.equal(invited.position, undefined, "an invited session has no position");
    assert.equal(invited.pass, undefined, "no pass before the claim");
    const claimBy = Date.parse(invited.claim_by);
    assert.ok(
      claimBy > before + 100_000 && claimBy < Date.now() + 121_000,
      `claim_by ${invited.claim_by} is about claim_window (2m) from now`,
    );
    assert.equal(rec.calls.find((c) => c.name === "onInvited").self, line);
    assert.ok(line.session.status === "invited");
    assert.equal(page.window.localStorage.getItem(page.storageKey(room)), held.id, "an invited session is live: kept");
    await sleep(400); // several polls, or stream updates
    assert.equal(rec.of("onInvited").length, 1, "onInvited is called once");
    assert.equal(rec.of("onAdmitted").length, 0, "not admitted before the claim");
    assert.equal(rec.of("onEnded").length, 0);
    assert.equal((await readDirect(room, held.id)).status, "invited");

    // The claim (the claim page's, or the app's, POST): active with a pass.
    const claimed = await must(200, "POST", `/v1/rooms/${room}/sessions/${held.id}/claim`);
    assert.equal(claimed.status, "active");
    const admitted = await waitFor("onAdmitted after the claim", () => rec.of("onAdmitted")[0]);
    assert.equal(admitted.status, "active");
    assert.equal(admitted.id, held.id);
    assert.equal(typeof admitted.pass, "string");
    assert.equal(admitted.claim_by, undefined, "claim_by only while invited");
    assert.deepEqual([...new Set(rec.names())], ["onPosition", "onInvited", "onAdmitted"]);
    assert.equal(rec.of("onError").length, 0);

    // Active, it beats and leaves like any session.
    assert.equal((await line.heartbeat()).status, "active");
    assert.equal((await line.leave()).status, "left");
    assert.deepEqual(rec.names().slice(-1), ["onEnded"]);
  });
}

test("a held place invited at once and not claimed ends unclaimed", async (t) => {
  const room = roomName("unclaimed");
  await putRoom(room, { ...holdRoom, claim_window: "1s" });
  const held = await joinDirect(room, { contact: "+15551234567" }, true);
  assert.equal(held.status, "invited", "a free slot invites a held place at once");

  const page = browser({ eventSource: "node" });
  const rec = recorder();
  const line = page.Waitroom.join({ room, id: held.id, poll: 100, ...rec.callbacks });
  t.after(() => line.close());
  const first = await line.ready;
  assert.equal(first.id, held.id, "join with a live id follows it, no new join");
  assert.equal(first.status, "invited");
  assert.deepEqual(rec.names(), ["onInvited"]);

  const ended = await waitFor("onEnded(unclaimed)", () => rec.of("onEnded")[0], 5000);
  assert.equal(ended.status, "expired");
  assert.equal(ended.end_reason, "unclaimed");
  assert.deepEqual(rec.names(), ["onInvited", "onEnded"], "never admitted");
  assert.equal(page.window.localStorage.getItem(page.storageKey(room)), null);

  // A late claim is refused, as the API says.
  await must(409, "POST", `/v1/rooms/${room}/sessions/${held.id}/claim`);
});
