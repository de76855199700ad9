/*
 * waitroom: a Web Worker that solves a proof-of-work challenge (ALTCHA v1,
 * as issued by the Go package challenge) off the page's main thread.
 *
 * The page posts {challenge: {algorithm, challenge, maxnumber, salt,
 * signature}}. The worker looks for the number n in [0, maxnumber] with
 * SHA-256(salt + decimal n) = challenge and posts {progress: 0..1} about
 * every 50 ms while it works, then either {payload, number, ms}, where
 * payload is the base64 solution the server's join takes (the same the
 * ALTCHA widget sends), or {error: message}. One challenge at a time: the
 * search runs to its end without reading messages, so to give up, the page
 * terminates the worker.
 *
 * Speed is the point, so SHA-256 is written out here rather than awaited
 * from crypto.subtle.digest once per number: the salt's whole 64-byte
 * blocks are hashed once, the number is an ASCII decimal counter written
 * into the last one or two blocks, and only the bytes that change are
 * rewritten. Plain ES2017 with no modules and no eval, for the page's CSP.
 */
'use strict';

// SHA-256 round constants (FIPS 180-4, 4.2.2).
var K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
]);

// The initial hash value (FIPS 180-4, 5.3.3).
var IV = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
]);

// The message schedule, shared by every call.
var W = new Int32Array(64);

// compress hashes the 16 big-endian words M[off..off+15] into the state H
// and writes the new state to out (which may be H).
function compress(H, M, off, out) {
  var a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  var w = W, i, x, y, t1, t2, wi;
  for (i = 0; i < 64; i++) {
    if (i < 16) {
      wi = M[off + i];
    } else {
      x = w[i - 15];
      y = w[i - 2];
      wi = (((x >>> 7 | x << 25) ^ (x >>> 18 | x << 14) ^ (x >>> 3)) +
        ((y >>> 17 | y << 15) ^ (y >>> 19 | y << 13) ^ (y >>> 10)) +
        w[i - 7] + w[i - 16]) | 0;
    }
    w[i] = wi;
    t1 = (h + ((e >>> 6 | e << 26) ^ (e >>> 11 | e << 21) ^ (e >>> 25 | e << 7)) +
      ((e & f) ^ (~e & g)) + K[i] + wi) | 0;
    t2 = (((a >>> 2 | a << 30) ^ (a >>> 13 | a << 19) ^ (a >>> 22 | a << 10)) +
      ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  out[0] = (H[0] + a) | 0;
  out[1] = (H[1] + b) | 0;
  out[2] = (H[2] + c) | 0;
  out[3] = (H[3] + d) | 0;
  out[4] = (H[4] + e) | 0;
  out[5] = (H[5] + f) | 0;
  out[6] = (H[6] + g) | 0;
  out[7] = (H[7] + h) | 0;
}

// utf8 returns the UTF-8 bytes of s.
function utf8(s) {
  var out = [], i, c, d;
  for (i = 0; i < s.length; i++) {
    c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c >= 0xd800 && c < 0xe000) {
      c = 0xfffd; // a lone surrogate, as TextEncoder writes it
    }
    if (c < 0x80) {
      out.push(c);
    } else if (c < 0x800) {
      out.push(0xc0 | c >> 6, 0x80 | c & 63);
    } else if (c < 0x10000) {
      out.push(0xe0 | c >> 12, 0x80 | c >> 6 & 63, 0x80 | c & 63);
    } else {
      out.push(0xf0 | c >> 18, 0x80 | c >> 12 & 63, 0x80 | c >> 6 & 63, 0x80 | c & 63);
    }
  }
  return out;
}

// setByte writes byte v at byte offset p of the big-endian words M.
function setByte(M, p, v) {
  var s = 24 - 8 * (p & 3);
  M[p >> 2] = (M[p >> 2] & ~(0xff << s)) | (v << s);
}

// sha256 returns the hash of the bytes (an array) as 8 words: the plain,
// general form, used to check a solution the fast search found.
function sha256(bytes) {
  var n = bytes.length, blocks = ((n + 8) >> 6) + 1, i;
  var M = new Int32Array(blocks * 16), H = new Int32Array(IV);
  for (i = 0; i < n; i++) {
    setByte(M, i, bytes[i]);
  }
  setByte(M, n, 0x80);
  M[blocks * 16 - 2] = Math.floor(n / 0x20000000); // the bit length, high word
  M[blocks * 16 - 1] = (n << 3) | 0;
  for (i = 0; i < blocks; i++) {
    compress(H, M, i * 16, H);
  }
  return H;
}

// hexWords parses 64 hex digits into 8 words, or returns null.
function hexWords(s) {
  if (typeof s !== 'string' || !/^[0-9a-fA-F]{64}$/.test(s)) {
    return null;
  }
  var out = new Int32Array(8), i;
  for (i = 0; i < 8; i++) {
    out[i] = parseInt(s.substr(i * 8, 8), 16) | 0;
  }
  return out;
}

// base64 returns the standard base64 of the bytes, as btoa would.
function base64(bytes) {
  var s = '', i;
  for (i = 0; i < bytes.length; i++) {
    s += String.fromCharCode(bytes[i]);
  }
  return btoa(s);
}

// now returns a time in milliseconds.
function now() {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

// solve searches for the challenge's number, calling progress(fraction)
// about every 50 ms, and returns {payload, number, ms}; it throws an Error
// whose message can be shown to a person when there is none.
function solve(ch, progress) {
  var start = now();
  if (!ch || typeof ch !== 'object') {
    throw new Error('No challenge was given.');
  }
  if (ch.algorithm !== 'SHA-256') {
    throw new Error('The challenge uses an unsupported algorithm.');
  }
  var target = hexWords(ch.challenge);
  if (target === null || typeof ch.salt !== 'string' || typeof ch.signature !== 'string') {
    throw new Error('The challenge is malformed.');
  }
  var max = ch.maxnumber === undefined ? 1e6 : ch.maxnumber; // the ALTCHA widget's default
  if (!Number.isSafeInteger(max) || max < 0) {
    throw new Error('The challenge is malformed.');
  }

  var salt = utf8(ch.salt);
  var full = salt.length >> 6; // whole blocks of salt, hashed once
  var tail = salt.length & 63; // salt bytes left for the last block(s)
  var mid = new Int32Array(IV), M = new Int32Array(32), tmp = new Int32Array(8), out = new Int32Array(8);
  var i, b;
  for (b = 0; b < full; b++) {
    M.fill(0);
    for (i = 0; i < 64; i++) {
      setByte(M, i, salt[b * 64 + i]);
    }
    compress(mid, M, 0, mid);
  }

  // The last block(s): the salt's tail, the digits, 0x80, zeros and the
  // bit length. layout() rebuilds them when the digits grow by one.
  var digits = [48]; // ASCII of the number, most significant first
  var nd = 1, two = false;
  // When the last block is the second of two, the first changes only when
  // a digit inside it does: with many digits, rarely. Its hash is kept in
  // tmp and redone only when dirty.
  var dirty = true;
  function layout() {
    var len = tail + nd, total = salt.length + nd;
    M.fill(0);
    for (i = 0; i < tail; i++) {
      setByte(M, i, salt[full * 64 + i]);
    }
    for (i = 0; i < nd; i++) {
      setByte(M, tail + i, digits[i]);
    }
    setByte(M, len, 0x80);
    two = len + 9 > 64;
    var last = two ? 31 : 15;
    M[last - 1] = Math.floor(total / 0x20000000);
    M[last] = (total << 3) | 0;
    dirty = true;
  }
  layout();

  var t0 = target[0], n = 0, lastPost = start, j, d;
  for (;;) {
    if (two) {
      if (dirty) {
        compress(mid, M, 0, tmp);
        dirty = false;
      }
      compress(tmp, M, 16, out);
    } else {
      compress(mid, M, 0, out);
    }
    if (out[0] === t0 && out[1] === target[1] && out[2] === target[2] && out[3] === target[3] &&
        out[4] === target[4] && out[5] === target[5] && out[6] === target[6] && out[7] === target[7]) {
      break;
    }
    if (n >= max) {
      throw new Error('No number up to the challenge\'s maximum solves it.');
    }
    n++;
    // Count up in ASCII: usually one byte changes.
    for (j = nd - 1; j >= 0 && digits[j] === 57; j--) {
      digits[j] = 48;
      setByte(M, tail + j, 48);
    }
    if (j < 0) {
      digits.unshift(49);
      nd++;
      layout();
    } else {
      d = ++digits[j];
      setByte(M, tail + j, d);
      if (tail + j < 64) {
        dirty = true; // the carry went no further left than this
      }
    }
    if ((n & 8191) === 0 && progress) {
      var t = now();
      if (t - lastPost >= 50) {
        lastPost = t;
        progress(max > 0 ? n / max : 1);
      }
    }
  }

  // Check the fast search's answer with the plain hash before sending it.
  var check = sha256(utf8(ch.salt + n));
  for (i = 0; i < 8; i++) {
    if (check[i] !== target[i]) {
      throw new Error('The proof-of-work search failed its own check.');
    }
  }
  var json = JSON.stringify({
    algorithm: ch.algorithm,
    challenge: ch.challenge,
    number: n,
    salt: ch.salt,
    signature: ch.signature
  });
  return { payload: base64(utf8(json)), number: n, ms: Math.round(now() - start) };
}

self.onmessage = function (e) {
  var data = e.data || {};
  try {
    var r = solve(data.challenge, function (p) {
      self.postMessage({ progress: p });
    });
    self.postMessage(r);
  } catch (err) {
    self.postMessage({ error: err && err.message ? err.message : String(err) });
  }
};
