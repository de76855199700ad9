// /waitroom.js at a room's door against a real server: joining with an
// invite (into its tier), and a room that asks for proof of work, solved in
// the server's own worker script on a page of its origin, and reported
// through onError (with the challenge) elsewhere. See harness.mjs.

import { test } from "node:test";
import assert from "node:assert/strict";

import { browser, must, putRoom, recorder, roomName, server } from "./harness.mjs";

test("an invite joins an invite-only room into the invite's tier", async (t) => {
  const room = roomName("invite");
  await putRoom(room, { capacity: 1, invite_only: true, tiers: [{ name: "vip" }, { name: "public" }] });
  const { invites } = await must(201, "POST", `/v1/rooms/${room}/invites`, { count: 1, tier: "vip" }, true);
  const token = invites[0].token;

  const page = browser();
  const refused = recorder();
  const without = page.Waitroom.join({ room, storage: "none", ...refused.callbacks });
  await assert.rejects(without.ready, { name: "WaitroomError", status: 403, code: "invite_required" });
  assert.deepEqual(refused.names(), ["onError"]);

  const rec = recorder();
  const line = page.Waitroom.join({ room, invite: token, poll: 100, ...rec.callbacks });
  t.after(() => line.close());
  const s = await line.ready;
  assert.equal(s.status, "active");
  assert.equal(s.tier, "vip");
  assert.ok(page.requests.includes(`POST ${server}/v1/rooms/${room}/sessions`));

  // A used invite (one use) is refused.
  const again = page.Waitroom.join({ room, invite: token, storage: "none" });
  await assert.rejects(again.ready, { name: "WaitroomError", code: "invite_used" });
});

const powRoom = { capacity: 5, challenge: "pow", challenge_min: 2000, challenge_max: 2000 };

test("proof of work: a page of the server's origin solves in the worker and joins", async (t) => {
  const room = roomName("pow");
  await putRoom(room, powRoom);
  const page = browser({ worker: true });
  const rec = recorder();
  const line = page.Waitroom.join({ room, poll: 100, ...rec.callbacks });
  t.after(() => line.close());
  const s = await line.ready;
  assert.equal(s.status, "active");
  assert.equal(page.workers.length, 1);
  assert.equal(page.workers[0].url, `${server}/waitroom/pow-worker.js`);
  const progress = rec.of("onSolving");
  assert.ok(progress.length >= 1 && progress.at(-1) === 1, "onSolving ends at 1: " + progress);
  assert.ok(progress.every((f) => typeof f === "number" && f >= 0 && f <= 1));
  assert.equal(rec.of("onError").length, 0, "no errors: " + rec.of("onError").map(String));
  const joins = page.requests.filter((r) => r === `POST ${server}/v1/rooms/${room}/sessions`);
  assert.equal(joins.length, 2, "a refused join, then one with the solution");
});

test("proof of work elsewhere: challenge_required reaches onError with the challenge", async () => {
  const room = roomName("pow-x");
  await putRoom(room, powRoom);
  for (const [name, opts] of [
    ["another origin", { page: { origin: "https://shop.example", worker: true }, join: { base: server + "/" }, base: server }],
    ["solve: false", { page: { worker: true }, join: { solve: false }, base: "" }],
  ]) {
    const page = browser(opts.page);
    const rec = recorder();
    const line = page.Waitroom.join({ room, storage: "none", ...opts.join, ...rec.callbacks });
    await assert.rejects(line.ready, (err) => {
      assert.equal(err.name, "WaitroomError", name);
      assert.equal(err.status, 428, name);
      assert.equal(err.code, "challenge_required", name);
      assert.equal(err.challenge.algorithm, "SHA-256", name);
      assert.equal(typeof err.challenge.maxnumber, "number", name);
      for (const k of ["challenge", "salt", "signature"]) assert.equal(typeof err.challenge[k], "string", `${name}: ${k}`);
      return true;
    });
    assert.equal(line.base, opts.base, `${name}: base without its trailing slash`);
    assert.deepEqual(rec.names(), ["onError"], name);
    assert.equal(page.workers.length, 0, `${name}: no worker`);
  }
});
