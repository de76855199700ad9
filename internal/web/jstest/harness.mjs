// The harness of the Node tests of /waitroom.js: the real script,
// evaluated in a vm context that stands in for a browser window, talking
// to a real `waitroom serve` over real HTTP.
//
// The server is started by cmd/waitroom's TestWaitroomJS, which runs
//
//   node --test web/jstest/*.test.mjs
//
// with WAITROOM_JSTEST_URL (the server's origin) and
// WAITROOM_JSTEST_ADMIN_TOKEN in the environment. By hand:
//
//   waitroom serve --addr 127.0.0.1:8080 --join-limit 0 &
//   WAITROOM_JSTEST_URL=http://127.0.0.1:8080 \
//   WAITROOM_JSTEST_ADMIN_TOKEN=$(cat waitroom-data/admin-token) \
//   node --test web/jstest/*.test.mjs
//
// Node has fetch, timers and URL; the window gives the script what a
// browser would (location, storage, navigator.sendBeacon, page events) and,
// per test, an EventSource or a Web Worker built on Node's own streams and
// worker_threads, or none (the script then polls, as it does in a browser
// without EventSource).

import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";
import { Worker as ThreadWorker } from "node:worker_threads";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Paths of the files under test and of the Go sources the checks read. */
export const paths = {
  script: path.join(here, "..", "assets", "waitroom.js"),
  types: path.join(here, "..", "assets", "waitroom.d.ts"),
  repo: path.join(here, "..", "..", ".."),
};

function env(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(
      `${name} is not set: these tests need a running waitroom server ` +
        "(go test -run TestWaitroomJS ./cmd/waitroom starts one and runs them)",
    );
  }
  return v;
}

/** The server's origin, without a trailing slash. */
export const server = env("WAITROOM_JSTEST_URL").replace(/\/+$/, "");
const adminToken = env("WAITROOM_JSTEST_ADMIN_TOKEN");

let rooms = 0;

/** A room name no other test (or test file) uses. */
export function roomName(prefix) {
  rooms++;
  return `${prefix}-${process.pid}-${rooms}-${Math.random().toString(36).slice(2, 8)}`.slice(0, 64);
}

/**
 * call makes one request to the server's API, with the admin token when
 * admin is true, and returns the status and the decoded body.
 */
export async function call(method, urlPath, body, admin = false) {
  const headers = { Accept: "application/json" };
  if (admin) headers.Authorization = "Bearer " + adminToken;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(server + urlPath, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.status, body: json, headers: res.headers };
}

/** must is call that fails the test unless the answer has status want. */
export async function must(want, method, urlPath, body, admin = false) {
  const r = await call(method, urlPath, body, admin);
  if (r.status !== want) {
    throw new Error(`${method} ${urlPath}: ${r.status} ${JSON.stringify(r.body)}, want ${want}`);
  }
  return r.body;
}

/** putRoom creates a room with cfg (the API's room configuration). */
export async function putRoom(name, cfg) {
  return must(201, "PUT", `/v1/rooms/${name}`, cfg, true);
}

/** joinDirect joins room over the API (no script), as someone else would. */
export async function joinDirect(room, body, admin = false) {
  return must(201, "POST", `/v1/rooms/${room}/sessions`, body, admin);
}

/** readDirect reads a session over the API. */
export async function readDirect(room, id) {
  return must(200, "GET", `/v1/rooms/${room}/sessions/${id}`);
}

/** leaveDirect ends a session over the API. */
export async function leaveDirect(room, id) {
  return must(200, "DELETE", `/v1/rooms/${room}/sessions/${id}`);
}

/**
 * waitFor polls cond every 20ms until it returns something truthy, which it
 * returns; after timeout ms it throws, naming what it waited for.
 */
export async function waitFor(what, cond, timeout = 10000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout}ms waiting for ${what}`);
    await sleep(20);
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** plain copies a value out of the script's realm (for deepStrictEqual). */
export function plain(v) {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}

/**
 * recorder returns the callbacks of a join's options, each recording its
 * calls: {name, arg, self} in order.
 */
export function recorder() {
  const calls = [];
  const cb = (name) =>
    function (arg) {
      calls.push({ name, arg, self: this });
    };
  return {
    calls,
    callbacks: {
      onUpdate: cb("onUpdate"),
      onPosition: cb("onPosition"),
      onInvited: cb("onInvited"),
      onAdmitted: cb("onAdmitted"),
      onEnded: cb("onEnded"),
      onError: cb("onError"),
      onSolving: cb("onSolving"),
    },
    /** of returns the arguments of the calls of one callback. */
    of(name) {
      return calls.filter((c) => c.name === name).map((c) => c.arg);
    },
    /** names lists the callbacks called, in order, without onUpdate. */
    names() {
      return calls.filter((c) => c.name !== "onUpdate").map((c) => c.name);
    },
  };
}

class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  getItem(k) {
    return this.items.has(k) ? this.items.get(k) : null;
  }
  setItem(k, v) {
    this.items.set(k, String(v));
  }
  removeItem(k) {
    this.items.delete(k);
  }
}

/**
 * NodeEventSource is the part of the browser's EventSource the script uses,
 * on Node's fetch: it reads the Server-Sent Events stream, dispatches each
 * event by its name, and reconnects (with Last-Event-ID) when the stream
 * ends, as browsers do; a refused stream (not 200 text/event-stream) closes
 * it for good.
 */
class NodeEventSource {
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.onerror = null;
    this.onopen = null;
    this.events = []; // every event received: {type, data}
    this._listeners = new Map();
    this._lastId = "";
    this._abort = new AbortController();
    this._connect();
  }

  addEventListener(type, fn) {
    if (!this._listeners.has(type)) this._listeners.set(type, []);
    this._listeners.get(type).push(fn);
  }

  close() {
    this.readyState = 2;
    this._abort.abort();
  }

  _dispatch(type, data) {
    this.events.push({ type, data });
    const e = { type, data, lastEventId: this._lastId };
    for (const fn of this._listeners.get(type) || []) fn.call(this, e);
    if (type === "message" && this.onmessage) this.onmessage(e);
  }

  _error() {
    if (this.onerror) this.onerror({ type: "error" });
  }

  async _connect() {
    while (this.readyState !== 2) {
      let res;
      try {
        const headers = { Accept: "text/event-stream", "Cache-Control": "no-cache" };
        if (this._lastId) headers["Last-Event-ID"] = this._lastId;
        res = await fetch(this.url, { headers, signal: this._abort.signal });
      } catch {
        if (this.readyState === 2) return;
        this.readyState = 0;
        this._error();
        await sleep(500);
        continue;
      }
      if (res.status !== 200 || !String(res.headers.get("content-type")).startsWith("text/event-stream")) {
        await res.body?.cancel().catch(() => {});
        if (this.readyState === 2) return;
        this.readyState = 2;
        this._error();
        return;
      }
      this.readyState = 1;
      if (this.onopen) this.onopen({ type: "open" });
      try {
        await this._read(res.body);
      } catch {
        // the connection broke, or close() aborted it
      }
      if (this.readyState === 2) return;
      this.readyState = 0;
      this._error();
      await sleep(500);
    }
  }

  async _read(body) {
    const decoder = new TextDecoder();
    let buf = "";
    let type = "";
    let data = [];
    for await (const chunk of body) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length > 0 && this.readyState !== 2) this._dispatch(type || "message", data.join("\n"));
          type = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") type = value;
        else if (field === "data") data.push(value);
        else if (field === "id") this._lastId = value;
      }
    }
  }
}

// The prelude that gives the proof-of-work worker script the Web Worker
// globals it uses (self.onmessage, self.postMessage) on a worker thread.
const workerPrelude = `
const { parentPort } = require("node:worker_threads");
globalThis.self = globalThis;
self.postMessage = (m) => parentPort.postMessage(m);
parentPort.on("message", (data) => { if (typeof self.onmessage === "function") self.onmessage({ data }); });
`;

/**
 * browser makes a window for the script and loads waitroom.js into it.
 *
 *   origin       the page's origin (default: the server's, as for a page it serves)
 *   eventSource  "none" (default; the script polls), "node" (NodeEventSource)
 *                or "refused" (an EventSource whose stream is refused at once)
 *   worker       true: a Web Worker on worker_threads (for proof of work)
 *   module       true: a CommonJS module object in scope, as a bundler gives
 *   fetchGate    (method, url) => a Promise, or undefined: the answer to that
 *                fetch reaches the script only once the Promise settles (a
 *                slow network, to order an answer after a stream's event)
 *
 * It returns the script's Waitroom, the window, and what the page did:
 * requests (every fetch: "METHOD url"), beacons, event sources, workers.
 */
export function browser(opts = {}) {
  const origin = new URL(opts.origin || server).origin;
  const href = origin + "/app/";
  const resolve = (u) => new URL(String(u), href).href;
  const listeners = new Map();
  const requests = [];
  const beacons = [];
  const sources = [];
  const workers = [];

  const win = {
    location: { origin, href, protocol: new URL(origin).protocol },
    localStorage: new MemoryStorage(),
    sessionStorage: new MemoryStorage(),
    navigator: {
      sendBeacon(u) {
        const url = resolve(u);
        requests.push("BEACON " + url);
        beacons.push({ url, status: fetch(url, { method: "POST", keepalive: true }).then((r) => r.status) });
        return true;
      },
    },
    addEventListener(type, fn) {
      if (!listeners.has(type)) listeners.set(type, new Set());
      listeners.get(type).add(fn);
    },
    removeEventListener(type, fn) {
      listeners.get(type)?.delete(fn);
    },
    fetch(u, init) {
      const url = resolve(u);
      const method = (init && init.method) || "GET";
      requests.push(method + " " + url);
      const answer = fetch(url, init);
      const gate = opts.fetchGate && opts.fetchGate(method, url);
      return gate ? answer.then((r) => gate.then(() => r, () => r)) : answer;
    },
    setTimeout,
    clearTimeout,
    setInterval,
    clearInterval,
    URL,
    console,
  };
  win.window = win;

  if (opts.eventSource === "node") {
    win.EventSource = class extends NodeEventSource {
      constructor(u) {
        super(resolve(u));
        requests.push("STREAM " + this.url);
        sources.push(this);
      }
    };
  } else if (opts.eventSource === "refused") {
    win.EventSource = class {
      constructor(u) {
        this.url = resolve(u);
        this.readyState = 0;
        this.onerror = null;
        sources.push(this);
        setTimeout(() => {
          if (this.readyState === 2) return;
          this.readyState = 2;
          if (this.onerror) this.onerror({ type: "error" });
        }, 10);
      }
      addEventListener() {}
      close() {
        this.readyState = 2;
      }
    };
  }

  if (opts.worker) {
    win.Worker = class {
      constructor(u) {
        this.url = resolve(u);
        this.onmessage = null;
        this.onerror = null;
        this._queue = [];
        this._thread = null;
        this._dead = false;
        workers.push(this);
        fetch(this.url)
          .then((r) => {
            if (r.status !== 200) throw new Error(`GET ${this.url}: ${r.status}`);
            return r.text();
          })
          .then((src) => {
            if (this._dead) return;
            const t = new ThreadWorker(workerPrelude + src, { eval: true });
            t.on("message", (data) => this.onmessage && this.onmessage({ data }));
            t.on("error", (e) => this.onerror && this.onerror(e));
            this._thread = t;
            for (const m of this._queue) t.postMessage(m);
          })
          .catch((e) => this.onerror && this.onerror(e));
      }
      postMessage(m) {
        // Out of the script's realm before it crosses to the thread.
        m = JSON.parse(JSON.stringify(m));
        if (this._thread) this._thread.postMessage(m);
        else this._queue.push(m);
      }
      terminate() {
        this._dead = true;
        if (this._thread) this._thread.terminate();
      }
    };
  }

  if (opts.module) win.module = { exports: {} };

  const ctx = vm.createContext(win);
  vm.runInContext(fs.readFileSync(paths.script, "utf8"), ctx, { filename: paths.script });
  return {
    Waitroom: win.Waitroom,
    window: win,
    origin,
    requests,
    beacons,
    sources,
    workers,
    /** fire dispatches a page event (pagehide, pageshow) to the script. */
    fire(type, props = {}) {
      for (const fn of [...(listeners.get(type) || [])]) fn({ type, ...props });
    },
    listenerCount(type) {
      return listeners.get(type)?.size || 0;
    },
    /** storageKey is the key under which the script keeps a room's session id. */
    storageKey(room, base = "") {
      return "waitroom:" + (base.replace(/\/+$/, "") || origin) + ":" + room;
    },
  };
}

/** ended reports whether a line's latest session is final. */
export function final(s) {
  return s && (s.status === "served" || s.status === "left" || s.status === "expired");
}
