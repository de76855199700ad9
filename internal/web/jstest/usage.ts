// usage.ts: an app's use of /waitroom.js, type-checked against
// waitroom.d.ts by declarations.test.mjs (tsc --strict, when npx has
// TypeScript at hand). Never run. Lines marked @ts-expect-error must stay
// errors: they are misuses the declarations must refuse.

/// <reference path="../assets/waitroom.d.ts" />

const line: Waitroom.Line = Waitroom.join({
  room: "shop",
  base: "https://wait.example.com",
  storage: "session",
  transport: "poll",
  poll: 1000,
  heartbeat: 0,
  beacon: false,
  invite: "wr1.token",
  solve: false,
  onUpdate(s) {
    const status: Waitroom.Status = s.status;
    console.log(status, this.id);
  },
  onPosition(s) {
    const position: number | undefined = s.position;
    console.log(position, s.ahead, s.eta_seconds, s.eta_low_seconds, s.eta_high_seconds, s.waiting, s.capacity);
  },
  onInvited(s) {
    if (s.claim_by !== undefined) console.log(new Date(s.claim_by), `/claim/${s.room}/${s.id}`, s.contact);
  },
  onAdmitted(s) {
    const pass: string | undefined = s.pass;
    console.log(pass, s.admitted_at, s.unit, s.remaining, this.mode);
  },
  onEnded(s) {
    if (s.end_reason === "unknown") {
      const forgotten: Waitroom.ForgottenSession = s;
      console.log(forgotten.status);
    } else {
      const reason: Waitroom.EndReason | undefined = s.end_reason;
      console.log(reason, s.ticket, s.ended_at);
    }
  },
  onError(err) {
    if ("code" in err) {
      const code: Waitroom.ErrorCode = err.code;
      if (code === "challenge_required" && err.challenge) {
        const maxnumber: number = err.challenge.maxnumber;
        console.log(maxnumber, err.status);
      }
    } else {
      console.log(err.message);
    }
  },
  onSolving(fraction) {
    console.log(fraction.toFixed(2));
  },
});

line.ready.then((s) => {
  if ("ticket" in s) console.log(s.ticket, s.joined_at, s.tier, s.place, s.extended, s.opens_at, s.entrants, s.entry, s.key);
});
line.heartbeat().then((s: Waitroom.Session) => s.active);
line.leave().then((s) => s.status);
line.close();
const mode: "sse" | "poll" | null = line.mode;
const current: Waitroom.Session | Waitroom.ForgottenSession | null = line.session;
const version: string = Waitroom.version;
const same: typeof Waitroom = window.Waitroom;
const resumed = Waitroom.resume({ room: "shop", id: "9f2c" });
console.log(mode, current, version, same, resumed.id, resumed.base, resumed.room);

// @ts-expect-error resume needs the id
Waitroom.resume({ room: "shop" });
// @ts-expect-error join needs the room
Waitroom.join({ base: "" });
// @ts-expect-error storage is local, session or none
Waitroom.join({ room: "shop", storage: "disk" });
// @ts-expect-error transport is sse or poll
Waitroom.join({ room: "shop", transport: "websocket" });
// @ts-expect-error no such option
Waitroom.join({ room: "shop", onAdmit() {} });
Waitroom.join({
  room: "shop",
  onPosition(s) {
    // @ts-expect-error position is only there while waiting
    s.position.toFixed();
  },
});
// @ts-expect-error the line is not writable
line.id = "x";
// @ts-expect-error no such status
const bad: Waitroom.Status = "admitted";
console.log(bad);
