-- redisstore: every operation on one room is one run of this script, so it is
-- atomic however many processes share the room. It is memstore's state
-- machine (internal/engine: room.go, admission.go, presence.go) written
-- against Redis structures; keep the two in step.
--
-- KEYS (one hash tag, so one Cluster slot):
--   1 room    HASH   configuration, clock, token bucket, incarnation base,
--                    counts (mirrors of ZCARD wait/active and of seq) and a
--                    lower bound of the earliest due entry, so a request on a
--                    room with nothing due costs one read of it
--   2 seq     STRING ticket counter (INCR); never deleted, so tickets are never reused,
--                    and never below a ticket a process has seen (rewound, below)
--   3 wait    ZSET   waiting tickets scored by place: the ticket, the negative
--                    place an operator's move gave (operator.lua), or in a
--                    room with tiers the place its tier gave (tiers.lua), so
--                    the line is ZRANGE order and position = ZRANK + 1
--   4 active  ZSET   active and invited tickets (those holding a slot:
--                    holds.lua) scored by ticket
--   5 keys    HASH   key -> ticket of its live session
--   6 due     ZSET   ticket -> scheduled deadline (lazy, as memstore's heap)
--   7 hist    STREAM ended sessions, capped
--   8 lease   STRING the process that sweeps this room
-- Session hashes <prefix>s:<ticket> share the tag and are derived from KEYS[1],
-- as are the keys of a scheduled room (schedule.lua): eseq, pre, e2t, draw,
-- dlist, x:<entry> and dl, of a room with an inventory (stock.lua): hold,
-- and of token uses (tiers.lua): uc and ux. The room hash also holds the
-- tiers (tn, tp, tw) and their state (vt, fin, tm): tiers.lua; and the
-- holding of places (hp, cw) and telling sessions they are near (nat,
-- nsc): holds.lua.
-- Webhooks (hooks.lua and hooks.go): the room hash holds hk = '1' while the
-- room has a webhook, and then every event the room makes also goes, in the
-- same run, to the outbox ob (a STREAM, never deleted so its ids, which name
-- the messages, are never reused); wh (webhooks), hq:<webhook> (pending
-- deliveries), hd (their records), hx (dead letters) and hs (each
-- webhook's state) are hooks.lua's.
--
-- The script is this file, then fast.lua, machinery.lua, schedule.lua,
-- stock.lua, operator.lua, tiers.lua, holds.lua and ops.lua, run as one
-- (store.go joins them, in that order: a Lua local exists only after its
-- definition): this file holds the keys and what both paths share,
-- fast.lua the fast paths, machinery.lua the general path's state,
-- sessions, deadlines, admission, expiry, events and reply, schedule.lua
-- the pre-queue and the draw, stock.lua the inventory and the fairness counts,
-- operator.lua an operator's moves (QueueAll, Front, Extend, Lookup) and
-- the order of the line, tiers.lua the tiers and token uses, holds.lua
-- held sessions, Claim and telling sessions they are near, ops.lua the
-- operations.
--
-- ARGV: 1 op, 2 room name, 3 now (unix ms), 4 process id, 5 publish command
-- ('' for none), 6 channel, 7 '1' to return the event, 8 retention of ended
-- sessions (ms), 9 history length, 10 expiry batch, 11.. the op's arguments.
--
-- Reply: { status, event, ... }. status is 'ok', 'more' (the expiry batch was
-- used up before the work: call again), 'leased' (Sweep: another process
-- holds the lease), 'draw' (the room's draw is due or being applied: the
-- caller applies it, see schedule.go, and calls again) or an error code.
-- event is the operation's event, when asked for, else ''.
--
-- A session array (view) is { ticket, secret, status, key, joined, admitted,
-- ended, reason, position, waiting, active, capacity } and, for a session
-- that entered a pre-queue, its entry number, and for one still in it the
-- opening and the pre-queue's size (decodeSession); in a room with an
-- inventory it is padded to 15 and ends with the units remaining and
-- whether the session holds one (stockTail). A live session an operator
-- moved or extended, or of a room with tiers, is padded to 17 (the stock
-- fields nil without an inventory) and goes on with its place, extension
-- in ms and the ns past them (placeTail, operator.lua), and in a room with
-- tiers its tier's name (tiers.lua). A live held session is padded to 21
-- (the tier '' without tiers) and ends with its contact and, invited, when
-- its claim window ends (holdTail, holds.lua).

local K_ROOM, K_SEQ, K_WAIT, K_ACTIVE, K_KEYS, K_DUE, K_HIST, K_LEASE =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local PFX = string.sub(K_ROOM, 1, -5) -- KEYS[1] is <prefix>room

local OP, ROOM, ARGNOW, PID = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local PUB, CHAN, WANT_EV = ARGV[5], ARGV[6], ARGV[7] == '1'
-- ARGV 10 is the expiry batch, then, once the calling process has seen a
-- ticket or an entry number of the room, the highest of each it has seen
-- (its high-water marks: rewind.go), space-separated.
local RETAIN, HISTMAX = ARGV[8], ARGV[9]
local BATCH, MARK_T, MARK_E = tonumber(ARGV[10]), 0, 0
if not BATCH then
  local b, mt, me = string.match(ARGV[10], '^(%d+) (%d+) (%d+)$')
  BATCH, MARK_T, MARK_E = tonumber(b), tonumber(mt), tonumber(me)
end
local EV = PUB ~= '' or WANT_EV

-- Recent joins, secret -> ticket (a hash), oldest last in a list that caps
-- it: go-redis sends a script again when a connection broke before its
-- reply, and a join that finds its own secret here answers with the
-- session it made the first time instead of making a second one.
local K_RECENT, K_RECENTQ = PFX .. 'jr', PFX .. 'jq'
local RECENT_MAX = 20000

-- The pre-queue of a scheduled room before its draw: entry number ->
-- secret, joined and key, tab-separated (keys hold no control characters).
-- Entry numbers come from eseq, which, like seq, is never deleted.
local K_PRE, K_ESEQ, K_E2T = PFX .. 'pre', PFX .. 'eseq', PFX .. 'e2t'

-- The tickets of the active sessions holding a reserved unit of a room's
-- inventory, scored by ticket (stock.lua).
local K_HOLD = PFX .. 'hold'

-- The last configuration revision of a deleted room (a STRING, never
-- deleted, as seq): a room made again continues above it (bumpRev).
local K_RV = PFX .. 'rv'

-- The webhook outbox of a room with webhooks (hk = '1' in its hash).
local K_OB = PFX .. 'ob'

-- publish sends event message ev on the room's channel and, when hooked
-- (the room has webhooks), appends it to the outbox, so an event is there
-- exactly when its change is; it returns what the reply carries.
local function publish(ev, hooked)
  if PUB ~= '' then redis.call(PUB, CHAN, ev) end
  if hooked then redis.call('XADD', K_OB, '*', 'e', ev) end
  if WANT_EV then return ev end
  return ''
end

-- A record of a room with tiers ends with the entrant's tier (tiers.lua):
-- unpackEntrant returns it, or nil.
local ENTRANT = '^([^\t]*)\t([^\t]*)\t([^\t]*)\t?(%d*)$'
local function unpackEntrant(rec)
  local sec, j, key, tr = string.match(rec, ENTRANT)
  return sec, tonumber(j), key, tonumber(tr)
end

-- enter adds an entrant (of tier tr, nil without tiers) to the pre-queue
-- and returns its entry number. A keyed entrant holds its key in keys as
-- 'e<entry>' until the draw gives it a ticket, so a key is unique across
-- pre-queue and line.
local function enter(key, sec, ns, tr)
  local n = string.format('%d', redis.call('INCR', K_ESEQ))
  local rec = sec .. '\t' .. ns .. '\t' .. key
  if tr then rec = rec .. '\t' .. string.format('%d', tr) end
  redis.call('HSET', K_PRE, n, rec)
  if key ~= '' then redis.call('HSET', K_KEYS, key, 'e' .. n) end
  return n
end

-- entrantLine is an entrant's join in the event wire format (events.go).
local function entrantLine(n, sec, key, ns, w, a, c, opens, np)
  return table.concat({ '0', sec, '', 'waiting', key, ns, '0', '0', '', w, a, c, n, opens, np }, '\t')
end

local function remember(secs, tickets)
  local h = {}
  for i = 1, #secs do
    h[#h + 1] = secs[i]; h[#h + 1] = tickets[i]
  end
  redis.call('HSET', K_RECENT, unpack(h))
  local n = redis.call('LPUSH', K_RECENTQ, unpack(secs))
  if n > RECENT_MAX then
    redis.call('HDEL', K_RECENT, unpack(redis.call('RPOP', K_RECENTQ, n - RECENT_MAX)))
  end
end

-- tierOf is the name of tier index tr in tier names tn (the room hash's
-- tn), for the fast paths; the general path has tierName (tiers.lua).
local function tierOf(tn, tr)
  local i = 0
  for w in string.gmatch(tn, '[^ ]+') do
    if i == tr then return w end
    i = i + 1
  end
  return ''
end

-- A rewound room: Redis replicates asynchronously, so a failover (or a
-- replaced primary that went on taking writes for a while) can leave the
-- room as it was some writes ago, its counters below tickets and entry
-- numbers already handed out. Numbers must never go to a second person:
-- before any write, a counter below the calling process's mark of it (the
-- highest it has seen, ARGV 10) moves up to the mark, so the next number
-- follows every number the process saw; rw counts the room's rewinds
-- (never deleted), and the reply { 'rewound', '', ticket counter, its
-- mark, entry counter, its mark, rewinds } tells the caller, which logs
-- it and runs the operation again (rewind.go). Reads change nothing, and a
-- draw step applies a frozen draw, whose tickets follow its first.
local READS = { room = true, sessions = true, waiting = true, lookup = true, history = true, drawinfo = true,
  drawstep = true }
if (MARK_T > 0 or MARK_E > 0) and not READS[OP] then
  local seq = tonumber(redis.call('GET', K_SEQ) or '0')
  local eseq = 0
  if MARK_E > 0 then eseq = tonumber(redis.call('GET', K_ESEQ) or '0') end
  if seq < MARK_T or eseq < MARK_E then
    local fmt = string.format
    if seq < MARK_T then
      redis.call('SET', K_SEQ, fmt('%d', MARK_T))
      -- The room hash mirrors the counter (last): a freeze's first ticket follows it.
      if redis.call('EXISTS', K_ROOM) == 1 then redis.call('HSET', K_ROOM, 'last', fmt('%d', MARK_T)) end
    end
    if eseq < MARK_E then redis.call('SET', K_ESEQ, fmt('%d', MARK_E)) end
    local n = redis.call('INCR', PFX .. 'rw')
    return { 'rewound', '', seq, MARK_T, eseq, MARK_E, n }
  end
end
