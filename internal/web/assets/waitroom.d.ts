/*
 * waitroom.d.ts: TypeScript declarations of /waitroom.js, the JavaScript
 * client of a waitroom server (served next to it at /waitroom.d.ts).
 *
 * With the script loaded by a <script> tag, Waitroom is a global:
 *
 *   /// <reference path="./waitroom.d.ts" />
 *   const line = Waitroom.join({ room: "shop", onAdmitted(s) { location.href = "/checkout"; } });
 *
 * In a module, read it from window (window.Waitroom), or import it where a
 * bundler loads waitroom.js as a CommonJS module (it sets module.exports).
 *
 * The Session fields are those of the HTTP API's Session object (README,
 * "HTTP API v1"). web/jstest checks these declarations against the script
 * and against a real server's answers.
 */

declare namespace Waitroom {
  /** The version of the client script's API. */
  const version: string;

  /**
   * Resumes the session whose id is stored for this room (or opts.id) while
   * it is live, and joins the room otherwise. Updates follow until the
   * session ends or close() is called.
   */
  function join(opts: JoinOptions): Line;

  /**
   * Follows the session opts.id and never joins. A session the server no
   * longer knows is delivered as a ForgottenSession.
   */
  function resume(opts: ResumeOptions): Line;

  /** Where a session stands: waiting, invited and active are live; served, left and expired final. */
  type Status = "waiting" | "invited" | "active" | "served" | "left" | "expired";

  /** Why a session ended: the server's reasons. */
  type EndReason =
    | "left"
    | "revoked"
    | "served"
    | "idle"
    | "max_session"
    | "no_presence"
    | "gone"
    | "room_deleted"
    | "sold_out"
    | "unclaimed";

  /** The API's Session object, as the server sends it. */
  interface Session {
    id: string;
    room: string;
    status: Status;
    /** The place in the room's order; 0 in a scheduled room's pre-queue until the draw. */
    ticket: number;
    /** The identity a trusted backend gave at join. */
    key?: string;
    /** 1-based rank among waiting sessions (waiting only). */
    position?: number;
    /** Waiting sessions ahead of this one (waiting only). */
    ahead?: number;
    /** The room's totals when the session was read. */
    waiting: number;
    active: number;
    capacity: number;
    /** The estimated wait and its 90% range, in seconds (waiting, when an estimate exists). */
    eta_seconds?: number;
    eta_low_seconds?: number;
    eta_high_seconds?: number;
    /** Why a waiting session in line has no estimate yet: "starting" (its room has not freed slots often enough yet to tell how fast the line moves), "paused", "stalled" (no slot freed for ten minutes). */
    eta_unknown?: "starting" | "paused" | "stalled";
    /** The public name of a session that entered a pre-queue, as the published draw lists it. */
    entry?: string;
    /** Units neither sold nor reserved (a room with an inventory). */
    remaining?: number;
    /** Whether this active session holds a reserved unit (a room with an inventory). */
    unit?: boolean;
    /** The opening of a scheduled room (waiting in its pre-queue), RFC 3339. */
    opens_at?: string;
    /** How many wait in the pre-queue (with opens_at). */
    entrants?: number;
    /** What the trusted backend that joined a held place gave to reach its person. */
    contact?: string;
    /** When an invited session's slot goes to the next in line unless claimed, RFC 3339 (invited only). */
    claim_by?: string;
    /** The session's tier in a room with tiers. */
    tier?: string;
    /** Orders the line: negative after an operator's move, from the tier in a room with tiers. */
    place?: number;
    /** How much longer than max_session an operator let it stay, a duration such as "15m". */
    extended?: string;
    /** RFC 3339 times; admitted_at and ended_at once they happened. */
    joined_at: string;
    admitted_at?: string;
    ended_at?: string;
    /** Why a final session ended. */
    end_reason?: EndReason;
    /** The signed pass of an active session (a JWT the gate and the app check). */
    pass?: string;
  }

  /**
   * What the client hands on for a session the server no longer knows (or
   * an id it never issued): it ended, for a reason the client cannot know.
   * Tell it from a Session by end_reason === "unknown" or by "ticket" in s.
   */
  interface ForgottenSession {
    id: string;
    room: string;
    status: "expired";
    end_reason: "unknown";
  }

  /** The codes of the server's error answers (README, "Errors"). */
  type ServerErrorCode =
    | "invalid_request"
    | "invalid_json"
    | "invalid_room_name"
    | "invalid_session_id"
    | "invalid_config"
    | "invalid_key"
    | "unauthorized"
    | "forbidden"
    | "not_found"
    | "method_not_allowed"
    | "room_not_found"
    | "session_not_found"
    | "queue_empty"
    | "already_joined"
    | "room_not_empty"
    | "body_too_large"
    | "rate_limited"
    | "room_full"
    | "room_closed"
    | "draw_done"
    | "sold_out"
    | "stock_conflict"
    | "invite_required"
    | "invite_invalid"
    | "invite_expired"
    | "invite_wrong_room"
    | "invite_used"
    | "challenge_required"
    | "challenge_invalid"
    | "challenge_expired"
    | "challenge_wrong_room"
    | "challenge_used"
    | "not_invited"
    | "precondition_failed"
    | "unavailable"
    | "internal"
    | "header_too_large"
    | "expectation_failed";

  /**
   * The codes the client makes itself (status 0): the live stream failed
   * and it polls instead, or the proof-of-work worker failed.
   */
  type ClientErrorCode = "stream_failed" | "challenge_failed";

  /** An error's code: the server's, the client's, or "" for an answer without one. */
  type ErrorCode = ServerErrorCode | ClientErrorCode | "";

  /** A proof-of-work challenge (ALTCHA v1), in a challenge_required error. */
  interface Challenge {
    algorithm: string;
    challenge: string;
    maxnumber: number;
    salt: string;
    signature: string;
  }

  /** A failed request (an Error named "WaitroomError"). */
  interface WaitroomError extends Error {
    name: "WaitroomError";
    /** The HTTP status; 0 for the client's own errors. */
    status: number;
    code: ErrorCode;
    /** The challenge to solve, with challenge_required or challenge_expired. */
    challenge?: Challenge;
  }

  /**
   * The options of join (and resume). Callbacks are called with the Line
   * as this; an exception in one is rethrown asynchronously and does not
   * stop the client.
   */
  interface JoinOptions {
    /** The room's name. Required. */
    room: string;
    /** The waitroom server's origin; "" (the default) when this page is served by it. */
    base?: string;
    /** Follow this session (while live) instead of the stored one. */
    id?: string;
    /** Where the session id is kept per room: localStorage (the default), sessionStorage (one per tab), or nowhere. */
    storage?: "local" | "session" | "none";
    /** "poll" reads the session every poll ms instead of opening the Server-Sent Events stream. */
    transport?: "sse" | "poll";
    /** Milliseconds between reads while polling (default 3000). */
    poll?: number;
    /** Milliseconds between heartbeats while active (default 30000; 0 for none). */
    heartbeat?: number;
    /** false: do not tell the server on pagehide, nor reconnect on pageshow. */
    beacon?: boolean;
    /** An invite token ("wr1.…") to join with, into its tier. */
    invite?: string;
    /** false: never solve a proof-of-work challenge (it reaches onError). */
    solve?: boolean;
    /** Every update, the forgotten stand-in included. */
    onUpdate?(this: Line, s: Session | ForgottenSession): void;
    /** Every update while waiting. */
    onPosition?(this: Line, s: Session): void;
    /** Once, when a held place is invited to claim its slot before s.claim_by (its claim page is /claim/{room}/{id}). */
    onInvited?(this: Line, s: Session): void;
    /** Once, when the session becomes active (or served, in a manual room). */
    onAdmitted?(this: Line, s: Session): void;
    /** Once, when the session reaches a final status (served, left, expired). */
    onEnded?(this: Line, s: Session | ForgottenSession): void;
    /** A request failed (the client keeps trying); a network failure is the fetch's own Error. */
    onError?(this: Line, err: WaitroomError | Error): void;
    /** Progress of solving a proof-of-work challenge, 0 to 1. */
    onSolving?(this: Line, fraction: number): void;
  }

  /** The options of resume: those of join, with the id required. */
  interface ResumeOptions extends JoinOptions {
    id: string;
  }

  /** One session followed by the client. */
  interface Line {
    readonly room: string;
    /** The base option without trailing slashes. */
    readonly base: string;
    /** The session's id once known. */
    readonly id: string | null;
    /** The latest session delivered. */
    readonly session: Session | ForgottenSession | null;
    /** How updates arrive once subscribed. */
    readonly mode: "sse" | "poll" | null;
    /** The first session; rejects when the join or the first read fails. */
    readonly ready: Promise<Session | ForgottenSession>;
    /** Presence and (while active) activity; the session as it is now. */
    heartbeat(): Promise<Session>;
    /** Gives up the place or slot now; the final session, the line's `session` (the one `onEnded` had). */
    leave(): Promise<Session>;
    /** Stops following the session without leaving it. */
    close(): void;
  }
}

declare global {
  interface Window {
    Waitroom: typeof Waitroom;
  }
}

export = Waitroom;
export as namespace Waitroom;
