/*
 * waitroom.js: the JavaScript client of a waitroom server. No dependencies.
 *
 *   <script src="https://wait.example.com/waitroom.js"></script>
 *   const line = Waitroom.join({
 *     room: "shop",
 *     base: "",                 // the server's origin; "" when this page is served by it
 *     onPosition(s) { show(s.position, s.ahead, s.eta_seconds); },
 *     onAdmitted(s) { location.href = "/checkout"; },
 *     onEnded(s) { console.log("session ended:", s.status, s.end_reason); },
 *   });
 *   line.ready.then(s => ...);  // the first Session
 *   line.leave();               // give up the place or slot (a Promise of the final Session)
 *
 * Waitroom.join({room, base}) resumes the session whose id it stored for this
 * room (localStorage by default; storage: "session" keeps one per tab,
 * "none" nothing) while that session is live, and joins the room otherwise.
 * Waitroom.resume({room, base, id}) follows a session whose id you hold and
 * never joins. Updates come from the server's Server-Sent Events stream;
 * where EventSource is missing or keeps failing, the client reads the
 * session every few seconds instead (poll, default 3000 ms).
 *
 * Callbacks get the API's Session object: onUpdate(s) on every update,
 * onPosition(s) while waiting, onInvited(s) once when a held place (one a
 * trusted backend joined with a contact) is invited to claim its slot
 * before s.claim_by (its claim page is /claim/{room}/{id}), onAdmitted(s)
 * once when the session becomes active (or served, in a manual room),
 * onEnded(s) once when it reaches a
 * final status (left, expired, served), and onError(err) when a request
 * fails (the client keeps trying). While active, the client sends a
 * heartbeat every heartbeat ms (default 30000; 0 for none) so the slot does
 * not idle out. On pagehide it tells the server the page is going away
 * (navigator.sendBeacon; beacon: false to turn off) and on a return from the
 * back/forward cache it reconnects. close() stops everything without leaving.
 *
 * A room with a door: invite: "wr1…" joins with that invite (into its
 * tier); in a room that asks for proof of work the client solves the
 * challenge in a Web Worker (onSolving(fraction) reports progress; solve:
 * false turns it off) when the page is on the waitroom server's origin,
 * and otherwise reports challenge_required through onError, with the
 * challenge in err.challenge: send the visitor to the waiting page then.
 *
 * Cross-origin use needs the server to allow CORS for its /v1 API (for
 * example through the reverse proxy in front of it).
 */
(function (global) {
  "use strict";

  var LIVE = { waiting: true, invited: true, active: true };
  var FINAL = { served: true, left: true, expired: true };

  function noop() {}

  function pickStorage(kind) {
    try {
      if (kind === "none") return null;
      if (kind === "session") return global.sessionStorage || null;
      return global.localStorage || null;
    } catch (e) {
      return null; // storage can be blocked (privacy settings)
    }
  }

  function RequestError(status, code, message) {
    var err = new Error(message || "waitroom request failed (" + status + ")");
    err.name = "WaitroomError";
    err.status = status;
    err.code = code || "";
    return err;
  }

  // answer turns a fetch Response into its JSON body, or a WaitroomError.
  function answer(res) {
    return res.text().then(function (text) {
      var body = null;
      try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
      if (res.ok) return body;
      var e = body && body.error;
      var err = RequestError(res.status, e && e.code, e && e.message);
      if (body && body.challenge) err.challenge = body.challenge;
      throw err;
    });
  }

  function Line(opts, resumeOnly) {
    if (!opts || !opts.room) throw new Error("Waitroom: the room option is required");
    if (resumeOnly && !opts.id) throw new Error("Waitroom.resume: the id option is required");
    var self = this;
    this.room = opts.room;
    this.base = String(opts.base || "").replace(/\/+$/, "");
    this.id = opts.id || null;
    this.session = null;
    this.mode = null; // "sse" or "poll" once subscribed
    this._opts = opts;
    this._storage = pickStorage(opts.storage);
    this._key = "waitroom:" + (this.base || global.location.origin) + ":" + this.room;
    this._es = null;
    this._poll = 0;
    this._beat = 0;
    this._closed = false;
    this._ended = false;
    this._admitted = false;
    this._invited = false;
    this._hidden = false;
    this._failures = 0;
    this._sseBroken = opts.transport === "poll" || typeof global.EventSource !== "function";
    this._onHide = function () { self._pagehide(); };
    this._onShow = function (e) { self._pageshow(e); };
    if (opts.beacon !== false) {
      global.addEventListener("pagehide", this._onHide);
      global.addEventListener("pageshow", this._onShow);
    }
    this.ready = this._start(resumeOnly);
    // A failed start is reported through onError; ready still rejects.
    this.ready.catch(noop);
  }

  Line.prototype._call = function (name, arg) {
    var f = this._opts[name];
    if (typeof f !== "function") return;
    try { f.call(this, arg); } catch (e) { setTimeout(function () { throw e; }); }
  };

  Line.prototype._url = function (suffix) {
    var u = this.base + "/v1/rooms/" + encodeURIComponent(this.room) + "/sessions";
    if (this.id) u += "/" + encodeURIComponent(this.id);
    return u + (suffix || "");
  };

  Line.prototype._fetch = function (method, suffix, keepalive, body) {
    var init = {
      method: method,
      headers: { Accept: "application/json" },
      cache: "no-store",
      credentials: "same-origin",
      keepalive: !!keepalive,
    };
    if (body) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return global.fetch(this._url(suffix), init).then(answer);
  };

  // _join joins, with the invite of the options, and solves the room's
  // proof-of-work challenge when it asks for one (at most three times: a
  // rush can make a challenge stale while it is solved). Solving needs the
  // worker script from the waitroom server's origin, so only a page of
  // that origin solves; elsewhere the challenge_required error (with
  // err.challenge) reaches onError, and the app can send the visitor to
  // the waiting page, which solves it.
  Line.prototype._join = function (tries) {
    var self = this;
    var body = {};
    if (this._opts.invite) body.invite = String(this._opts.invite);
    if (this._solution) body.challenge = this._solution;
    return this._fetch("POST", "", false, body).catch(function (err) {
      var stale = err.code === "challenge_required" || err.code === "challenge_expired";
      if (!stale || !err.challenge || tries >= 3 || self._opts.solve === false || !self._sameOrigin()) throw err;
      return self._solve(err.challenge).then(function (payload) {
        self._solution = payload;
        return self._join(tries + 1);
      });
    });
  };

  Line.prototype._sameOrigin = function () {
    if (!this.base) return true;
    try { return new URL(this.base, global.location.href).origin === global.location.origin; } catch (e) { return false; }
  };

  // _solve solves a challenge in a Web Worker, telling onSolving(fraction)
  // how far it got.
  Line.prototype._solve = function (challenge) {
    var self = this;
    return new Promise(function (resolve, reject) {
      var w;
      try { w = new global.Worker(self.base + "/waitroom/pow-worker.js"); } catch (e) { reject(e); return; }
      w.onmessage = function (e) {
        var d = e.data || {};
        if (typeof d.progress === "number") self._call("onSolving", d.progress);
        if (d.payload) { w.terminate(); self._call("onSolving", 1); resolve(d.payload); }
        if (d.error) { w.terminate(); reject(RequestError(0, "challenge_failed", String(d.error))); }
      };
      w.onerror = function () { w.terminate(); reject(RequestError(0, "challenge_failed", "The proof-of-work worker failed.")); };
      w.postMessage({ challenge: challenge });
    });
  };

  Line.prototype._load = function () {
    try { return this._storage ? this._storage.getItem(this._key) : null; } catch (e) { return null; }
  };

  Line.prototype._save = function (id) {
    try { if (this._storage) this._storage.setItem(this._key, id); } catch (e) { /* full or blocked */ }
  };

  Line.prototype._forget = function () {
    try { if (this._storage) this._storage.removeItem(this._key); } catch (e) { /* blocked */ }
  };

  // _read reads the session (presence); null when the server no longer
  // knows it (or the id is not one it issues).
  Line.prototype._read = function () {
    return this._fetch("GET").catch(function (err) {
      if (err.status === 404 || err.status === 400) return null;
      throw err;
    });
  };

  // _gone stands for a session the server has forgotten.
  Line.prototype._gone = function () {
    return { id: this.id, room: this.room, status: "expired", end_reason: "unknown" };
  };

  Line.prototype._start = function (resumeOnly) {
    var self = this;
    if (!this.id) this.id = this._load();
    var first = this.id ? this._read() : Promise.resolve(null);
    return first.then(function (s) {
      if (resumeOnly) return s || self._gone();
      if (s && LIVE[s.status]) return s;
      self.id = null;
      return self._join(0);
    }).then(function (s) {
      self._deliver(s);
      if (!self._ended && !self._closed) self._subscribe();
      return s;
    }, function (err) {
      self._call("onError", err);
      throw err;
    });
  };

  Line.prototype._deliver = function (s) {
    if (!s || this._ended || this._closed) return;
    this.session = s;
    this.id = s.id || this.id;
    if (LIVE[s.status]) this._save(this.id);
    this._call("onUpdate", s);
    if (s.status === "waiting") {
      this._call("onPosition", s);
    } else if (s.status === "invited") {
      if (!this._invited) {
        this._invited = true;
        this._call("onInvited", s);
      }
    } else if (s.status === "active" || s.status === "served") {
      if (!this._admitted) {
        this._admitted = true;
        this._call("onAdmitted", s);
      }
      if (s.status === "active") this._startBeat();
    }
    if (FINAL[s.status]) {
      this._ended = true;
      this._stop();
      this._forget();
      this._call("onEnded", s);
    }
  };

  Line.prototype._subscribe = function () {
    if (this._closed || this._ended || this._hidden) return;
    if (this._sseBroken) this._startPoll(0);
    else this._startSSE();
  };

  Line.prototype._startSSE = function () {
    var self = this;
    var es = new global.EventSource(this._url("/events"));
    this._es = es;
    this.mode = "sse";
    es.addEventListener("session", function (e) {
      if (self._es !== es) return;
      self._failures = 0;
      var s;
      try { s = JSON.parse(e.data); } catch (x) { return; }
      self._deliver(s);
    });
    es.onerror = function () {
      if (self._es !== es) return;
      // The browser retries a dropped stream by itself; a stream refused
      // outright (CLOSED) or one that keeps failing means polling instead.
      if (es.readyState === 2 || ++self._failures >= 3) {
        es.close();
        self._es = null;
        self._sseBroken = true;
        self._call("onError", RequestError(0, "stream_failed", "The live update stream failed; reading the session every few seconds instead."));
        self._startPoll(0);
      }
    };
  };

  Line.prototype._startPoll = function (first) {
    var self = this;
    var every = this._opts.poll > 0 ? this._opts.poll : 3000;
    this.mode = "poll";
    clearTimeout(this._poll);
    var tick = function () {
      self._poll = 0;
      if (self._closed || self._ended || self._hidden) return;
      self._read().then(function (s) {
        self._deliver(s || self._gone());
        schedule(every);
      }, function (err) {
        self._call("onError", err);
        schedule(Math.min(every * 4, 30000));
      });
    };
    var schedule = function (ms) {
      if (!self._closed && !self._ended && !self._hidden) self._poll = setTimeout(tick, ms);
    };
    schedule(first);
  };

  Line.prototype._startBeat = function () {
    var every = this._opts.heartbeat === undefined ? 30000 : this._opts.heartbeat;
    if (this._beat || !(every > 0) || this._closed || this._hidden) return;
    var self = this;
    this._beat = setInterval(function () { self.heartbeat().catch(noop); }, every);
  };

  Line.prototype._stop = function () {
    if (this._es) {
      this._es.close();
      this._es = null;
    }
    clearTimeout(this._poll);
    this._poll = 0;
    clearInterval(this._beat);
    this._beat = 0;
  };

  Line.prototype._pagehide = function () {
    if (this._closed || this._ended || !this.id) return;
    this._hidden = true;
    this._stop();
    // "I am leaving the page": the server keeps the place for its grace period.
    if (global.navigator && typeof global.navigator.sendBeacon === "function") {
      try { global.navigator.sendBeacon(this._url("/away")); } catch (e) { /* best effort */ }
    }
  };

  Line.prototype._pageshow = function (e) {
    if (!e.persisted || !this._hidden || this._closed || this._ended) return;
    // Back from the back/forward cache: reading the session is presence
    // again, and the updates resume.
    var self = this;
    this._hidden = false;
    this._read().then(function (s) {
      self._deliver(s || self._gone());
      if (!self._ended) self._subscribe();
    }, function (err) {
      self._call("onError", err);
      self._subscribe();
    });
  };

  // heartbeat tells the server the session is present and (when active) in
  // use. It returns a Promise of the Session.
  Line.prototype.heartbeat = function () {
    var self = this;
    return this.ready.then(function () {
      return self._fetch("POST", "/heartbeat");
    }).then(function (s) {
      self._deliver(s);
      return s;
    }, function (err) {
      self._call("onError", err);
      throw err;
    });
  };

  // leave gives up the place (or slot) now. It returns a Promise of the
  // final Session: the line's, the one onEnded had, even when the stream
  // told the end before the leave's own answer came.
  Line.prototype.leave = function () {
    var self = this;
    return this.ready.then(function () {
      return self._fetch("DELETE", "", true);
    }).then(function (s) {
      self._deliver(s);
      return self._ended && self.session ? self.session : s;
    });
  };

  // close stops following the session without leaving it.
  Line.prototype.close = function () {
    this._closed = true;
    this._stop();
    global.removeEventListener("pagehide", this._onHide);
    global.removeEventListener("pageshow", this._onShow);
  };

  var Waitroom = {
    version: "1",
    join: function (opts) { return new Line(opts, false); },
    resume: function (opts) { return new Line(opts, true); },
  };

  global.Waitroom = Waitroom;
  if (typeof module === "object" && module && module.exports) module.exports = Waitroom;
})(typeof window !== "undefined" ? window : this);
