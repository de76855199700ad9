// waitroom.d.ts checked against what it declares: the loaded script's API
// (every name, with its kind, both ways), the options the script reads and
// the callbacks it calls, the values it hands to callers in a real run
// against the server, the server's Session JSON (its Go writer and real
// answers), and the Go status, reason and error-code lists. The file
// served at /waitroom.d.ts is the one checked. TypeScript itself, when npx
// has typescript@5.6.3 at hand, type-checks usage.ts against it.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { alternatives, check, literals, members, readDeclarations, unknownTypes } from "./dts.mjs";
import {
  browser,
  joinDirect,
  leaveDirect,
  must,
  paths,
  putRoom,
  readDirect,
  recorder,
  roomName,
  server,
  waitFor,
} from "./harness.mjs";

const text = fs.readFileSync(paths.types, "utf8");
const decl = readDeclarations(text);
const script = fs.readFileSync(paths.script, "utf8");
const goSource = (p) => fs.readFileSync(path.join(paths.repo, p), "utf8");

const sorted = (xs) => [...new Set(xs)].sort();

// fits fails the test when value does not fit type.
function fits(value, type, where) {
  const problems = check(decl, value, type, where);
  assert.deepEqual(problems, [], `${where} does not fit ${type}:\n  ${problems.join("\n  ")}`);
}

test("the server serves /waitroom.d.ts: the file checked here", async () => {
  const res = await fetch(server + "/waitroom.d.ts");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^application\/typescript; charset=utf-8$/);
  assert.ok(res.headers.get("etag"), "an ETag, like the other assets");
  assert.equal(await res.text(), text);
  const js = await fetch(server + "/waitroom.js");
  assert.equal(await js.text(), script, "the script checked is the one served");
});

test("the declarations are a UMD module of one namespace, every type they use declared", () => {
  assert.equal(decl.name, "Waitroom");
  assert.match(decl.rest, /export\s*=\s*Waitroom\s*;/);
  assert.match(decl.rest, /export\s+as\s+namespace\s+Waitroom\s*;/);
  assert.match(decl.rest, /interface\s+Window\s*\{\s*Waitroom\s*:\s*typeof\s+Waitroom\s*;?\s*\}/);
  assert.deepEqual(unknownTypes(decl), []);
});

test("every name the namespace declares is on the script's Waitroom with its kind, and nothing else", () => {
  const { Waitroom, window } = browser({ module: true });
  assert.equal(window.module.exports, Waitroom, "module.exports is the Waitroom global");
  for (const [name, type] of Object.entries(decl.consts)) {
    fits(Waitroom[name], type, `Waitroom.${name}`);
  }
  for (const [name, sig] of Object.entries(decl.functions)) {
    assert.equal(typeof Waitroom[name], "function", `Waitroom.${name} is a function`);
    assert.equal(Waitroom[name].length, sig.params.length, `Waitroom.${name} takes ${sig.params.length} arguments`);
  }
  assert.deepEqual(sorted(Object.keys(Waitroom)), sorted([...Object.keys(decl.consts), ...Object.keys(decl.functions)]));
  assert.deepEqual(decl.functions.join, { params: [{ name: "opts", optional: false, type: "JoinOptions" }], returns: "Line" });
  assert.deepEqual(decl.functions.resume, { params: [{ name: "opts", optional: false, type: "ResumeOptions" }], returns: "Line" });
});

test("the options declared are the options the script reads; callbacks are methods", () => {
  const opts = members(decl, "JoinOptions");
  const read = [...script.matchAll(/\b_?opts\.(\w+)/g)].map((m) => m[1]);
  const called = [...script.matchAll(/_call\("(\w+)"/g)].map((m) => m[1]);
  assert.deepEqual(sorted(Object.keys(opts)), sorted([...read, ...called]));
  for (const name of called) {
    assert.equal(opts[name].kind, "method", `${name} is a callback`);
    assert.ok(opts[name].optional, `${name} is optional`);
    assert.equal(opts[name].returns, "void");
    assert.deepEqual(opts[name].params[0], { name: "this", optional: false, type: "Line" }, `${name} is called on the line`);
  }
  for (const name of read) assert.equal(opts[name].kind, "property", `${name} is a value`);
  assert.ok(!opts.room.optional, "room is required");
  assert.ok(!members(decl, "ResumeOptions").id.optional, "resume requires the id");
  assert.deepEqual(decl.interfaces.ResumeOptions.extends, ["JoinOptions"]);
  // The values the script tells apart.
  assert.deepEqual(sorted(literals(decl, opts.storage.type)), sorted(["local", "session", "none"]));
  assert.ok(script.includes('kind === "none"') && script.includes('kind === "session"'));
  assert.deepEqual(sorted(literals(decl, opts.transport.type)), ["poll", "sse"]);
  assert.ok(script.includes('opts.transport === "poll"'));
});

test("the Line declared is the line the script returns, in a real run", async (t) => {
  const room = roomName("decl-line");
  await putRoom(room, { capacity: 1, waiting_timeout: "30s" });
  const page = browser({ eventSource: "node" });
  const line = page.Waitroom.join({ room });
  t.after(() => line.close());
  fits(line, "Line", "line before ready");
  await line.ready;
  fits(line, "Line", "line");
  assert.equal(line.mode, "sse");

  const declared = members(decl, "Line");
  const proto = Object.getPrototypeOf(line);
  const publicMethods = Object.getOwnPropertyNames(proto).filter((n) => n !== "constructor" && !n.startsWith("_"));
  const publicFields = Object.keys(line).filter((n) => !n.startsWith("_"));
  for (const name of publicMethods) {
    assert.equal(declared[name]?.kind, "method", `line.${name}() is declared as a method`);
    assert.equal(proto[name].length, declared[name].params.length, `line.${name} takes ${declared[name].params.length} arguments`);
  }
  for (const name of publicFields) assert.equal(declared[name]?.kind, "property", `line.${name} is declared as a property`);
  assert.deepEqual(sorted(Object.keys(declared)), sorted([...publicMethods, ...publicFields]));
  for (const m of Object.values(declared)) {
    if (m.kind === "property") assert.ok(m.readonly, `line.${m.name} is readonly to callers`);
  }
  fits(await line.heartbeat(), declared.heartbeat.returns.replace(/^Promise<(.*)>$/, "$1"), "heartbeat()");
  fits(await line.leave(), declared.leave.returns.replace(/^Promise<(.*)>$/, "$1"), "leave()");
  fits(line, "Line", "line after leave");
  assert.equal(line.close(), undefined);
});

test("every callback gets what its declaration says, in a real run", async (t) => {
  const room = roomName("decl-calls");
  await putRoom(room, { capacity: 1, hold_places: true, claim_window: "2m", waiting_timeout: "30s", active_timeout: "0s" });
  const blocker = await joinDirect(room);
  const held = await joinDirect(room, { contact: "user-42" }, true);
  const page = browser({ eventSource: "refused" });
  const rec = recorder();
  const line = page.Waitroom.resume({ room, id: held.id, poll: 100, ...rec.callbacks });
  t.after(() => line.close());
  fits(await line.ready, "Session | ForgottenSession", "ready");
  await leaveDirect(room, blocker.id);
  await waitFor("onInvited", () => rec.of("onInvited")[0]);
  await must(200, "POST", `/v1/rooms/${room}/sessions/${held.id}/claim`);
  await waitFor("onAdmitted", () => rec.of("onAdmitted")[0]);
  await line.leave();

  // A forgotten session, a refused join, a challenge, a solved challenge.
  const gone = page.Waitroom.resume({ room, id: "forgotten", storage: "none", ...rec.callbacks });
  fits(await gone.ready, "ForgottenSession", "the forgotten stand-in");
  const missing = page.Waitroom.join({ room: roomName("decl-missing"), storage: "none", ...rec.callbacks });
  await missing.ready.catch(() => {});
  const pow = roomName("decl-pow");
  await putRoom(pow, { capacity: 5, challenge: "pow", challenge_min: 1000, challenge_max: 1000 });
  const refused = page.Waitroom.join({ room: pow, storage: "none", solve: false, ...rec.callbacks });
  await refused.ready.catch(() => {});
  const solver = browser({ worker: true });
  const solved = solver.Waitroom.join({ room: pow, storage: "none", ...rec.callbacks });
  t.after(() => solved.close());
  await solved.ready;

  const opts = members(decl, "JoinOptions");
  const seen = new Set();
  for (const c of rec.calls) {
    seen.add(c.name);
    const sig = opts[c.name];
    assert.ok(c.self === line || c.self === gone || c.self === missing || c.self === refused || c.self === solved);
    fits(c.arg, sig.params[1].type, `${c.name}'s argument`);
  }
  assert.deepEqual(sorted(seen), sorted(Object.keys(opts).filter((n) => opts[n].kind === "method")), "every callback ran");
  const errors = rec.of("onError");
  assert.ok(errors.some((e) => e.code === "stream_failed"));
  assert.ok(errors.some((e) => e.code === "room_not_found"));
  assert.ok(errors.some((e) => e.code === "challenge_required" && e.challenge));
  for (const e of errors) fits(e, "WaitroomError", `onError(${e.code})`);
});

// goStrings returns the quoted values of Go constants of a type, e.g.
// `StatusWaiting Status = "waiting"`.
function goConstants(source, type) {
  return [...source.matchAll(new RegExp(`^\\s*\\w+\\s+${type}\\s*=\\s*"([^"]+)"`, "gm"))].map((m) => m[1]);
}

test("the statuses, end reasons and error codes are the server's", () => {
  const session = goSource("session.go");
  assert.deepEqual(sorted(literals(decl, "Status")), sorted(goConstants(session, "Status")));
  assert.deepEqual(sorted(literals(decl, "EndReason")), sorted(goConstants(session, "Reason")));
  // The domain's codes (errors.go) and the HTTP-only ones of the one error
  // vocabulary (internal/apierror).
  const serverCodes = [...goConstants(goSource("errors.go"), "Code"), ...goConstants(goSource("internal/apierror/apierror.go"), "waitroom.Code")];
  assert.deepEqual(sorted(literals(decl, "ServerErrorCode")), sorted(serverCodes));
  const clientCodes = [...script.matchAll(/RequestError\(0, "(\w+)"/g)].map((m) => m[1]);
  assert.deepEqual(sorted(literals(decl, "ClientErrorCode")), sorted(clientCodes));
  assert.deepEqual(alternatives(decl.types.ErrorCode), ["ServerErrorCode", "ClientErrorCode", '""']);
  // The forgotten stand-in, as the script builds it.
  const gone = /_gone = function \(\) \{\s*return (\{[^}]*\});/.exec(script);
  assert.ok(gone, "the script's _gone");
  const keys = [...gone[1].matchAll(/(\w+):/g)].map((m) => m[1]);
  assert.deepEqual(sorted(keys), sorted(Object.keys(members(decl, "ForgottenSession"))));
  assert.match(gone[1], /status: "expired"/);
  assert.match(gone[1], /end_reason: "unknown"/);
});

test("the Session fields are those the server writes, and the challenge's those it sends", () => {
  const session = goSource("session.go");
  const start = session.indexOf("func (s Session) AppendJSON(");
  const body = session.slice(start, session.indexOf("\n}\n", start));
  const written = [...body.matchAll(/[{,]"(\w+)":/g)].map((m) => m[1]);
  assert.ok(written.length > 20, "read the Go writer");
  assert.deepEqual(sorted(Object.keys(members(decl, "Session"))), sorted(written));

  const ch = goSource("challenge/challenge.go");
  const struct = /type Challenge struct \{([^}]*)\}/.exec(ch)[1];
  const tags = [...struct.matchAll(/json:"(\w+)"/g)].map((m) => m[1]);
  assert.deepEqual(sorted(Object.keys(members(decl, "Challenge"))), sorted(tags));
});

test("real sessions of every kind fit Session, and show every field it declares", async () => {
  const seen = new Set();
  const sessions = [];
  const add = (what, s) => {
    fits(s, "Session", what);
    for (const k of Object.keys(s)) seen.add(k);
    sessions.push(s);
    return s;
  };

  // Waiting and active, with a key; ended.
  const plain = roomName("shape");
  await putRoom(plain, { capacity: 1, waiting_timeout: "30s", active_timeout: "0s" });
  const first = add("active", await joinDirect(plain, { key: "user-1" }, true));
  const waiting = add("waiting", await joinDirect(plain));
  add("moved to the front", await must(200, "POST", `/v1/rooms/${plain}/sessions/${waiting.id}/front`, { reason: "a test" }, true));
  add("extended", await must(200, "POST", `/v1/rooms/${plain}/sessions/${first.id}/extend`, { by: "10m" }, true));
  add("left", await leaveDirect(plain, first.id));
  add("admitted", await readDirect(plain, waiting.id));

  // A held place, invited.
  const hold = roomName("shape-held");
  await putRoom(hold, { capacity: 1, hold_places: true, claim_window: "2m" });
  add("invited", await joinDirect(hold, { contact: "mailto:ada@example.com" }, true));

  // An inventory, tiers, a pre-queue.
  const stock = roomName("shape-stock");
  await putRoom(stock, { capacity: 1, inventory: 5 });
  add("stocked, active", await joinDirect(stock));
  add("stocked, waiting", await joinDirect(stock));
  const tiers = roomName("shape-tiers");
  await putRoom(tiers, { capacity: 0, tiers: [{ name: "vip" }, { name: "public" }] });
  add("tiered", await joinDirect(tiers));
  const drop = roomName("shape-drop");
  await putRoom(drop, { capacity: 1, opens_at: new Date(Date.now() + 3600_000).toISOString() });
  add("pre-queue", await joinDirect(drop));

  // What a real run cannot show cheaply: an estimate needs a history of
  // admissions. The Go writer check covers it.
  const unseen = new Set(["eta_seconds", "eta_low_seconds", "eta_high_seconds"]);
  const declared = Object.keys(members(decl, "Session"));
  assert.deepEqual(
    declared.filter((k) => !seen.has(k) && !unseen.has(k)),
    [],
    "declared Session fields no real session showed",
  );
  for (const k of unseen) assert.ok(!seen.has(k), `${k} showed up: take it off the unseen list`);
});

// TypeScript runs from npx's cache, offline (never downloading it), in the
// exact version the declarations were checked with; where npx or that
// version is missing the test is skipped (node alone runs the rest).
const tsVersion = "5.6.3";

test(`TypeScript ${tsVersion} type-checks usage.ts against the declarations`, async (t) => {
  const run = (args) =>
    new Promise((resolve) => {
      const argv = ["--no-install", "-p", `typescript@${tsVersion}`, "tsc", ...args];
      // Offline: npm answers from its cache or not at all.
      const env = { ...process.env, npm_config_offline: "true", npm_config_update_notifier: "false" };
      execFile("npx", argv, { env }, (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, out: stdout + stderr }));
    });
  const version = await run(["--version"]);
  if (version.code !== 0 || !version.out.includes(tsVersion)) {
    t.skip(`typescript@${tsVersion} is not in npx's cache (npx -y -p typescript@${tsVersion} tsc --version fetches it)`);
    return;
  }
  const usage = path.join(path.dirname(fileURLToPath(import.meta.url)), "usage.ts");
  const r = await run(["--noEmit", "--strict", "--lib", "es2020,dom", usage]);
  assert.equal(r.code, 0, "tsc:\n" + r.out);
});
