-- redisstore: every operation on one room is one run of this script, so it is
-- atomic however many processes share the room. It is memstore's state
-- machine (memstore/room.go) written against Redis structures; keep the two
-- in step.
--
-- KEYS (one hash tag, so one Cluster slot):
--   1 room    HASH   configuration, clock, token bucket, incarnation base,
--                    counts (mirrors of ZCARD wait/active and of seq) and a
--                    lower bound of the earliest due entry, so a request on a
--                    room with nothing due costs one read of it
--   2 seq     STRING ticket counter (INCR); never deleted, so tickets are never reused
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
-- The script is this file, then schedule.lua, stock.lua, operator.lua,
-- tiers.lua, holds.lua and ops.lua, run as one (store.go joins them): this
-- file holds the fast paths and the general machinery, schedule.lua the
-- pre-queue and the draw, stock.lua the inventory and the fairness counts,
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
local RETAIN, HISTMAX, BATCH = ARGV[8], ARGV[9], tonumber(ARGV[10])
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

-- ---------------------------------------------------------------- fast paths
-- Presence, and a join that waits, are most of the traffic. When nothing is
-- due and nobody can be admitted (memstore's presenceShared makes the same
-- check), they need none of the general machinery below, whose closures,
-- made afresh on every run, cost more than their work. Whatever else they
-- meet they leave to the general path, which is the reference: the results
-- are the same either way.

if OP == 'session' or OP == 'heartbeat' or OP == 'join' or OP == 'joins' then
  local v = redis.call('HMGET', K_ROOM, 'mode', 'cap', 'rate', 'paused', 'now', 'units', 'uat',
    'base', 'nw', 'na', 'dmin', 'wt', 'idle', 'maxs', 'sch', 'opens', 'closes', 'npre', 'ebase', 'last',
    'stock', 'sold', 'rsv', 'adm', 'invs', 'madm', 'tn', 'hk', 'clt', 'nat', 'nsc')
  if v[1] then
    local fmt = string.format
    -- A room with webhooks makes its events whatever the caller asked.
    local hooked = v[28] == '1'
    if hooked then EV = true end
    local now = math.max(ARGNOW, tonumber(v[5]))
    local cap, nw, na, dmin = tonumber(v[2]), tonumber(v[9]), tonumber(v[10]), tonumber(v[11])
    -- A room with an inventory admits only while a unit remains; rem is
    -- -1 without one.
    local stock, sold = tonumber(v[21] or ''), tonumber(v[22] or '0')
    local rem = -1
    if stock then rem = stock - sold - tonumber(v[23] or '0') end
    local open = v[1] == 'auto' and v[4] ~= '1' and na < cap and (stock == nil or rem > 0)
    local quiet = dmin == 0 or dmin > now
    if quiet and open and nw > 0 then
      -- Admission is open: only the rate can hold it back.
      local rate = tonumber(v[3])
      local elapsed = now - tonumber(v[7])
      if rate == 0 or elapsed > 60000 or tonumber(v[6]) + elapsed * rate >= 60000 then quiet = false end
    end
    -- A scheduled room: pre is true while the pre-queue takes joins. A draw
    -- that is due, or being applied, comes before anything else, so it
    -- takes the general path. Joins at or after closes_at are refused there.
    local sch, opens, np = v[15] or '', tonumber(v[16] or '0'), tonumber(v[18] or '0')
    if sch == 'closing' or (sch == 'pre' and now >= opens) then quiet = false end
    local pre = sch == 'pre'
    local closes = tonumber(v[17] or '0')
    local closed = closes > 0 and now >= closes
    -- The first operation at or after closes_at tells it (emit), in the
    -- general path.
    if closed and tonumber(v[29] or '0') ~= closes then quiet = false end
    -- notify_at (holds.lua): a join within it is told it is near, in the
    -- general path; and sessions a draw or a batched run left to tell (nsc)
    -- are told by the next operation there.
    local nat = tonumber(v[30] or '0')
    if v[31] == '1' then quiet = false end
    -- Sold out: a line not yet ended is ended in the general path; with
    -- nothing else to do, a join is refused at once.
    local soldout = stock ~= nil and sold >= stock
    -- A room with tiers: tn lists its tiers' names. Joins there, and joins
    -- with a tier or token uses, take the general path (tiers.lua).
    local tn = v[27] or ''
    local plain = tn == '' and (OP ~= 'join' or #ARGV == 12)
    if soldout and (nw > 0 or np > 0) then quiet = false end
    if soldout and quiet and not closed and OP == 'join' then
      if now ~= tonumber(v[5]) then redis.call('HSET', K_ROOM, 'now', fmt('%d', now)) end
      return { 'sold_out', '', stock }
    end
    -- stk pads a session array to a stocked room's form (stockTail), and
    -- lt12 and lt15 end an event line of a live session without a unit,
    -- 12 or 15 fields long, so (lineTail).
    local function stk(r, unit)
      if stock then
        for i = #r + 1, 15 do r[i] = 0 end
        r[16] = rem; r[17] = unit
      end
      return r
    end
    -- The end of an event's head: the fairness counts and the units sold,
    -- which a fast path leaves as they are.
    local counts = table.concat({ v[24] or '0', v[25] or '0', v[26] or '0', v[22] or '0' }, '\t')
    local lt12, lt15 = '', ''
    if stock then
      lt15 = '\t' .. fmt('%d', rem) .. '\t0'
      lt12 = '\t0\t0\t0' .. lt15
    end

    if quiet and OP ~= 'join' and OP ~= 'joins' then
      -- ARGV 11 ticket, 12 secret, 13 entry number (idArgs).
      local t, en = tonumber(ARGV[11]), tonumber(ARGV[13])
      if t == 0 and en > tonumber(v[19] or '0') then
        if pre then
          -- An entrant needs no presence before the draw: only the clock moves.
          local rec = redis.call('HGET', K_PRE, ARGV[13])
          if rec then
            local sec, j, key, tr = unpackEntrant(rec)
            if sec == ARGV[12] then
              if now ~= tonumber(v[5]) then redis.call('HSET', K_ROOM, 'now', fmt('%d', now)) end
              local r = stk({ 0, sec, 'waiting', key, j, 0, 0, '', 0, nw, na, cap, en, opens, np }, 0)
              if tr then
                if not stock then r[16], r[17] = false, false end
                r[18], r[19], r[20], r[21] = 0, 0, 0, tierOf(tn, tr)
              end
              return { 'ok', '', r }
            end
          end
        elseif sch == 'drawn' then
          -- A drawn entrant keeps its entry id: find its ticket.
          t = tonumber(redis.call('HGET', K_E2T, ARGV[13]) or '0')
        end
      end
      if t > tonumber(v[8]) then
        local ts = fmt('%d', t)
        local sk = PFX .. 's:' .. ts
        local s = redis.call('HMGET', sk, 'sec', 'st', 'tc', 'aw', 'sch', 'key', 'j', 'ad', 'en', 'u', 'pl', 'ex', 'exn',
          'tr', 'ct')
        local st = s[2]
        -- A held session (its contact, ct) has no deadline while it waits.
        local timer = (st == 'waiting' and tonumber(v[12]) > 0 and not s[15]) or
          (st == 'active' and (tonumber(v[13]) > 0 or tonumber(v[14]) > 0))
        -- A live session of this incarnation whose deadline is scheduled.
        if s[1] == ARGV[12] and (st == 'waiting' or st == 'active') and not (s[5] == '0' and timer) then
          local tc = tonumber(s[3])
          if st == 'waiting' or OP == 'heartbeat' then tc = now end
          if tc ~= tonumber(s[3]) or s[4] ~= '0' then
            redis.call('HSET', sk, 'tc', fmt('%d', tc), 'aw', '0')
          end
          if now ~= tonumber(v[5]) then redis.call('HSET', K_ROOM, 'now', fmt('%d', now)) end
          local pos = 0
          if st == 'waiting' then pos = redis.call('ZRANK', K_WAIT, ts) + 1 end
          local unit = 0
          if st == 'active' and s[10] == '1' then unit = 1 end
          local r = stk({ t, s[1], st, s[6] or '', tonumber(s[7]), tonumber(s[8]), 0, '', pos, nw, na, cap,
            tonumber(s[9] or '0') }, unit)
          -- A place, an extension or a tier (operator.lua's placeTail).
          local pl, ex, exn = tonumber(s[11] or '0'), tonumber(s[12] or '0'), tonumber(s[13] or '0')
          if pl ~= 0 or ex ~= 0 or exn ~= 0 or s[14] then
            for i = #r + 1, 15 do r[i] = 0 end
            if not stock then r[16], r[17] = false, false end
            r[18], r[19], r[20] = pl, ex, exn
            if s[14] then r[21] = tierOf(tn, tonumber(s[14])) end
          end
          -- A held session's contact (holds.lua's holdTail); an invited
          -- one took the general path.
          if s[15] then
            for i = #r + 1, 15 do r[i] = 0 end
            if #r < 17 then r[16], r[17] = false, false end
            for i = #r + 1, 20 do r[i] = 0 end
            if #r < 21 then r[21] = '' end
            r[22], r[23] = s[15], 0
          end
          return { 'ok', '', r }
        end
      end
    end

    -- Many joins that wait, in arrival order (ARGV 11.. key, secret
    -- pairs): the store's pipeliner sends the joins that queued up together
    -- as one run, so the fixed cost of a run is paid once. Each join is
    -- what the single join below does; an entry whose key already holds a
    -- session, or whose secret already joined (a resent batch), answers 0
    -- and is run again on its own. When the fast path does not apply, the
    -- whole batch is 'slow': each join then runs on its own, through the
    -- general path. The reply is { 'ok', event, { now, waiting before,
    -- active, capacity }, { ticket or 0, ... } }: each join waits at the
    -- back, so the caller knows the rest of its session. In a pre-queue the
    -- head also holds the opening and the pre-queue's size before, and each
    -- join that entered answers its entry number, negated. In a room with an
    -- inventory the head is { now, waiting, active, capacity, opening or 0,
    -- pre-queue or 0, units remaining }.
    if OP == 'joins' then
      if not quiet or closed or soldout or not plain then return { 'slow', '' } end
      if pre then
        local head = { now, nw, na, cap, opens, np }
        if stock then head[7] = rem end
        local ns, nw_s, na_s = fmt('%d', now), fmt('%d', nw), fmt('%d', na)
        local cap_s, opens_s = fmt('%d', cap), fmt('%d', opens)
        local asked = {}
        for i = 12, #ARGV, 2 do asked[#asked + 1] = ARGV[i] end
        local seen = redis.call('HMGET', K_RECENT, unpack(asked))
        local out, lines, secs, marks = {}, {}, {}, {}
        for i = 11, #ARGV, 2 do
          local key, sec = ARGV[i], ARGV[i + 1]
          if seen[(i - 9) / 2] or (key ~= '' and redis.call('HEXISTS', K_KEYS, key) == 1) then
            out[#out + 1] = 0
          else
            local n = enter(key, sec, ns)
            np = np + 1
            out[#out + 1] = -tonumber(n)
            secs[#secs + 1] = sec; marks[#marks + 1] = 'e' .. n
            if EV then lines[#lines + 1] = entrantLine(n, sec, key, ns, nw_s, na_s, cap_s, opens_s, fmt('%d', np)) .. lt15 end
          end
        end
        if #secs == 0 then return { 'ok', '', head, out } end
        remember(secs, marks)
        redis.call('HSET', K_ROOM, 'now', ns, 'npre', fmt('%d', np))
        local ev = ''
        if EV then
          ev = publish(table.concat({ '1', PID, ROOM, 'sessions', ns, nw_s, na_s, v[20], '', counts }, '\t') .. '\n' ..
            table.concat(lines, '\n'), hooked)
        end
        return { 'ok', ev, head, out }
      end
      -- Joins within notify_at are told they are near: the general path.
      if not (nw > 0 or not open) or nw < nat then return { 'slow', '' } end
      local head = { now, nw, na, cap }
      if stock then head[5], head[6], head[7] = 0, 0, rem end
      local ns, na_s, cap_s = fmt('%d', now), fmt('%d', na), fmt('%d', cap)
      local wt = tonumber(v[12])
      local sch, sch_s = 0, '0'
      if wt > 0 then
        sch = now + wt
        sch_s = fmt('%d', sch)
        if dmin == 0 or sch < dmin then dmin = sch end
      end
      local out, lines, wait, due, secs, tickets = {}, {}, {}, {}, {}, {}
      local asked = {}
      for i = 12, #ARGV, 2 do asked[#asked + 1] = ARGV[i] end
      local seen = redis.call('HMGET', K_RECENT, unpack(asked))
      local lastts = nil
      for i = 11, #ARGV, 2 do
        local key, sec = ARGV[i], ARGV[i + 1]
        if seen[(i - 9) / 2] or (key ~= '' and redis.call('HEXISTS', K_KEYS, key) == 1) then
          out[#out + 1] = 0
        else
          local t = redis.call('INCR', K_SEQ)
          local ts = fmt('%d', t)
          nw = nw + 1
          wait[#wait + 1] = ts; wait[#wait + 1] = ts
          if sch > 0 then due[#due + 1] = sch_s; due[#due + 1] = ts end
          if key ~= '' then
            redis.call('HSET', PFX .. 's:' .. ts, 'sec', sec, 'st', 'waiting', 'j', ns, 'ad', '0', 'tc', ns,
              'aw', '0', 'sch', sch_s, 'key', key)
            redis.call('HSET', K_KEYS, key, ts)
          else
            redis.call('HSET', PFX .. 's:' .. ts, 'sec', sec, 'st', 'waiting', 'j', ns, 'ad', '0', 'tc', ns,
              'aw', '0', 'sch', sch_s)
          end
          secs[#secs + 1] = sec; tickets[#tickets + 1] = ts
          out[#out + 1] = t
          if EV then
            lines[#lines + 1] = ts .. '\t' .. sec .. '\t\twaiting\t' .. key .. '\t' .. ns .. '\t0\t0\t\t' ..
              nw .. '\t' .. na_s .. '\t' .. cap_s .. lt12
          end
          lastts = ts
        end
      end
      if lastts == nil then return { 'ok', '', head, out } end
      redis.call('ZADD', K_WAIT, unpack(wait))
      if #due > 0 then redis.call('ZADD', K_DUE, unpack(due)) end
      remember(secs, tickets)
      redis.call('HSET', K_ROOM, 'now', ns, 'nw', fmt('%d', nw), 'last', lastts, 'dmin', fmt('%d', dmin))
      local ev = ''
      if EV then
        ev = publish(table.concat({ '1', PID, ROOM, 'sessions', ns, fmt('%d', nw), na_s, lastts, '', counts }, '\t') ..
          '\n' .. table.concat(lines, '\n'), hooked)
      end
      return { 'ok', ev, head, out }
    end

    -- A join that enters the pre-queue.
    if quiet and plain and pre and not closed and OP == 'join' then
      local key, sec = ARGV[11], ARGV[12]
      if (key == '' or not redis.call('HGET', K_KEYS, key)) and redis.call('HEXISTS', K_RECENT, sec) == 0 then
        local ns = fmt('%d', now)
        local n = enter(key, sec, ns)
        np = np + 1
        remember({ sec }, { 'e' .. n })
        redis.call('HSET', K_ROOM, 'now', ns, 'npre', fmt('%d', np))
        local ev = ''
        if EV then
          local w, a = fmt('%d', nw), fmt('%d', na)
          ev = publish(table.concat({ '1', PID, ROOM, 'sessions', ns, w, a, v[20], '', counts }, '\t') .. '\n' ..
            entrantLine(n, sec, key, ns, w, a, fmt('%d', cap), fmt('%d', opens), fmt('%d', np)) .. lt15, hooked)
        end
        return { 'ok', ev, stk({ 0, sec, 'waiting', key, now, 0, 0, '', 0, nw, na, cap, tonumber(n), opens, np }, 0) }
      end
    end

    -- A join that waits: someone already does, or admission is closed;
    -- and it waits past notify_at, so nobody is told anything.
    if quiet and plain and not pre and not closed and OP == 'join' and (nw > 0 or not open) and nw >= nat then
      local key, sec = ARGV[11], ARGV[12]
      if (key == '' or not redis.call('HGET', K_KEYS, key)) and redis.call('HEXISTS', K_RECENT, sec) == 0 then
        local t = redis.call('INCR', K_SEQ)
        local ts, ns = fmt('%d', t), fmt('%d', now)
        nw = nw + 1
        redis.call('ZADD', K_WAIT, ts, ts)
        local sch, wt = 0, tonumber(v[12])
        if wt > 0 then
          sch = now + wt
          redis.call('ZADD', K_DUE, fmt('%d', sch), ts)
          if dmin == 0 or sch < dmin then dmin = sch end
        end
        local f = { 'sec', sec, 'st', 'waiting', 'j', ns, 'ad', '0', 'tc', ns, 'aw', '0', 'sch', fmt('%d', sch) }
        if key ~= '' then
          f[#f + 1] = 'key'; f[#f + 1] = key
          redis.call('HSET', K_KEYS, key, ts)
        end
        redis.call('HSET', PFX .. 's:' .. ts, unpack(f))
        remember({ sec }, { ts })
        redis.call('HSET', K_ROOM, 'now', ns, 'nw', fmt('%d', nw), 'last', ts, 'dmin', fmt('%d', dmin))
        local ev = ''
        if EV then
          local w, a = fmt('%d', nw), fmt('%d', na)
          ev = publish(table.concat({ '1', PID, ROOM, 'sessions', ns, w, a, ts, '', counts }, '\t') .. '\n' ..
            table.concat({ ts, sec, '', 'waiting', key, ns, '0', '0', '', w, a, fmt('%d', cap) }, '\t') .. lt12, hooked)
        end
        -- The newest ticket is last in line: its position is the count.
        return { 'ok', ev, stk({ t, sec, 'waiting', key, now, 0, 0, '', nw, nw, na, cap }, 0) }
      end
    end
  end
end

-- ---------------------------------------------------------------- general path

local function i2s(n) return string.format('%d', n) end
local function skey(t) return PFX .. 's:' .. i2s(t) end

-- Room state, loaded once (one HMGET) and saved once at the end; the
-- counters are kept in step with every change.
-- npre counts the live entrants of a pre-queue. R.sch is the room's
-- schedule (schedule.lua): '' (none), 'pre', 'closing' or 'drawn'.
-- R.stock is the inventory (nil for none); sold and rsv count its units
-- sold and reserved, and adm, invs and madm are the fairness counts
-- (stock.lua).
-- T is the room's tiers (tiers.lua).
local R, T, now, nW, nA, last, units, uat, dmin, npre
-- Defined in tiers.lua: loadTiers and saveTiers read and write T,
-- tierName names a tier, placeFor gives a ticket its tiered place,
-- letInTier counts a tiered admission, liveTail ends an event line.
local loadTiers, saveTiers, tierName, placeFor, letInTier, liveTail
local adm, invs, madm, sold, rsv
local changes, kind, cfgjson = {}, 'sessions', ''
-- What the operation did to the line, for telling sessions they are near
-- at its end (holds.lua's tellNear): k waiting sessions left it (admitted
-- or ended), new lists tickets that entered it or moved up (a join, a
-- Front) and may stand within notify_at, all asks for a scan of the whole
-- of positions 1..notify_at, and later says the caller runs the script
-- again to finish the operation, so telling waits for that run.
local NEAR = { k = 0, new = {}, all = false, later = false }
-- always makes a sessions event go out without changes: a draw's.
local always = false

local function loadRoom()
  local v = redis.call('HMGET', K_ROOM, 'mode', 'cap', 'rate', 'idle', 'maxs', 'wt', 'grace',
    'paused', 'now', 'units', 'uat', 'base', 'cfg', 'tsig', 'nw', 'na', 'last', 'dmin',
    'sch', 'opens', 'closes', 'npre', 'ebase', 'adm', 'invs', 'madm', 'stock', 'sold', 'rsv',
    'tn', 'tp', 'tw', 'vt', 'fin', 'tm', 'hk', 'clt', 'hp', 'cw', 'nat', 'nsc')
  if not v[1] then return false end
  loadTiers(v[30], v[31], v[32], v[33], v[34], v[35])
  R = { mode = v[1], cap = tonumber(v[2]), rate = tonumber(v[3]), idle = tonumber(v[4]),
    maxs = tonumber(v[5]), wt = tonumber(v[6]), grace = tonumber(v[7]), paused = v[8] == '1',
    lastnow = tonumber(v[9]), base = tonumber(v[12]), cfg = v[13], tsig = v[14],
    sch = v[19] or '', opens = tonumber(v[20] or '0'), closes = tonumber(v[21] or '0'),
    ebase = tonumber(v[23] or '0'), stock = tonumber(v[27] or ''), hk = v[36] == '1',
    clt = tonumber(v[37] or '0'), hp = v[38] == '1', cw = tonumber(v[39] or '0'), nat = tonumber(v[40] or '0'),
    nsc = v[41] == '1' }
  -- Telling left pending by an earlier run (holds.lua) scans all of 1..nat.
  NEAR.all = R.nsc
  -- A room with webhooks makes its events whatever the caller asked: they
  -- go to its outbox (emit).
  if R.hk then EV = true end
  units, uat = tonumber(v[10]), tonumber(v[11])
  nW, nA, last, dmin = tonumber(v[15]), tonumber(v[16]), tonumber(v[17]), tonumber(v[18])
  npre = tonumber(v[22] or '0')
  adm, invs, madm = tonumber(v[24] or '0'), tonumber(v[25] or '0'), tonumber(v[26] or '0')
  sold, rsv = tonumber(v[28] or '0'), tonumber(v[29] or '0')
  -- What emit's flags compare with: paused and sold out before the change
  -- (a room being created sets pb false: ops.lua). R.dd is set by the step
  -- that completes the draw (schedule.lua).
  R.pb, R.so = R.paused, R.stock ~= nil and sold >= R.stock
  -- What save compares with, to write only what changed.
  R.saved = { now = R.lastnow, units = units, uat = uat, nw = nW, na = nA, last = last, dmin = dmin, npre = npre,
    adm = adm, invs = invs, madm = madm, sold = sold, rsv = rsv }
  return true
end

-- A session: t ticket, sec secret (hex), key, st status, j joined, ad
-- admitted, tc last seen (waiting) or last active (active), aw away until
-- (0: present), sch scheduled deadline (0: none), why end reason, e ended,
-- en entry number (0 unless it entered a pre-queue and was drawn), u
-- whether it holds a reserved unit (stock.lua), pl its place in the line
-- (the wait score: negative once an operator moved it, positive in a room
-- with tiers, else 0 and the ticket is the score), ex and exn how long
-- an operator extended it, in ms and the ns past them (operator.lua), tr
-- its tier's index in a room with tiers (nil otherwise: tiers.lua), ct
-- the contact of a held session ('' for none) and nt whether it was told
-- it is near (holds.lua).
-- Loaded sessions are cached for the run, so every change goes through one
-- table and nothing is read twice.
local cache = {}
local function load(t)
  local s = cache[t]
  if s then return s end
  local v = redis.call('HMGET', skey(t), 'sec', 'key', 'st', 'j', 'ad', 'tc', 'aw', 'sch', 'why', 'end', 'en', 'u',
    'pl', 'ex', 'exn', 'tr', 'ct', 'nt')
  if not v[1] then return nil end
  s = { t = t, sec = v[1], key = v[2] or '', st = v[3], j = tonumber(v[4]) or 0,
    ad = tonumber(v[5]) or 0, tc = tonumber(v[6]) or 0, aw = tonumber(v[7]) or 0,
    sch = tonumber(v[8]) or 0, why = v[9] or '', e = tonumber(v[10]) or 0, en = tonumber(v[11]) or 0,
    u = v[12] == '1', pl = tonumber(v[13] or '0'), ex = tonumber(v[14] or '0'), exn = tonumber(v[15] or '0'),
    tr = tonumber(v[16] or ''), ct = v[17] or '', nt = v[18] == '1' }
  cache[t] = s
  return s
end

-- live reports whether s is waiting, invited or active; holding whether
-- it holds a slot (active or invited: an invited session's is reserved).
local function live(s) return s.st == 'waiting' or s.st == 'active' or s.st == 'invited' end
local function holding(s) return s.st == 'active' or s.st == 'invited' end

-- find returns the session with ticket t of this incarnation of the room
-- whose secret is sec, or nil.
local function find(t, sec)
  if t <= R.base then return nil end
  local s = load(t)
  if s == nil or s.sec ~= sec then return nil end
  return s
end

-- Defined in stock.lua: stockTail pads a session array (or, with line, the
-- fields of an event line) to a stocked room's form, and lineTail ends an
-- event line of a live session without a unit so; reserve gives an
-- admitted session a unit if one remains; release gives an ending
-- session's unit back; count counts an admission; endSoldOut ends the line
-- of a sold-out room.
local stockTail, lineTail, reserve, release, count, endSoldOut
-- Defined in operator.lua: placeTail adds a live session's place,
-- extension and tier to its array or event line.
local placeTail
-- Defined in holds.lua: holdTail adds a held session's contact and claim
-- window (and a near change's position) to its array or event line;
-- tellNear tells the sessions that reached notify_at at the end of an
-- operation.
local holdTail, tellNear

-- view is the reply form of a session with the room's totals now.
local function view(s, pos)
  local p = 0
  if pos and s.st == 'waiting' then p = redis.call('ZRANK', K_WAIT, i2s(s.t)) + 1 end
  local unit = s.u and holding(s)
  local v = { s.t, s.sec, s.st, s.key, s.j, s.ad, s.e, s.why, p, nW, nA, R.cap }
  if (s.en or 0) ~= 0 then v[13] = s.en end
  v = stockTail(v, unit)
  if live(s) then v = holdTail(placeTail(v, s), s) end
  return v
end

-- change records a status change for the event. Live sessions carry the
-- totals of that moment, and in a room with an inventory the units
-- remaining and their own; ended ones none (as memstore). A held session's
-- carries its contact, ended too (a webhook tells it why it ended). With
-- pos it is a near change of waiting s at that position (holds.lua).
local function change(s, from, pos)
  if not EV then return end
  local w, a, c = 0, 0, 0
  if live(s) then w, a, c = nW, nA, R.cap end
  local f = { i2s(s.t), s.sec, from, s.st, s.key, i2s(s.j), i2s(s.ad), i2s(s.e), s.why, i2s(w), i2s(a), i2s(c) }
  if (s.en or 0) ~= 0 then f[13] = i2s(s.en) end
  if live(s) then f = placeTail(stockTail(f, s.u and holding(s), true), s, true) end
  changes[#changes + 1] = table.concat(holdTail(f, s, true, pos), '\t')
end

-- deadline returns when s is due and why; 0 when it has no deadline. On a
-- tie the first considered wins: the contract's order.
local function deadline(s)
  local at, why = 0, ''
  -- An invited session is due when its claim window ends, and at nothing
  -- else; a held one needs no presence while it waits (holds.lua).
  if s.st == 'invited' then return s.ad + R.cw, 'unclaimed' end
  if s.st == 'waiting' and (s.ct or '') ~= '' then return 0, '' end
  if s.st == 'waiting' then
    if R.wt > 0 then at, why = s.tc + R.wt, 'no_presence' end
  else
    if R.maxs > 0 then
      -- An extension's ns past its ms round the deadline up: due at a
      -- whole ms at or after it.
      at, why = s.ad + R.maxs + (s.ex or 0), 'max_session'
      if (s.exn or 0) > 0 then at = at + 1 end
    end
    if R.idle > 0 and (at == 0 or s.tc + R.idle < at) then at, why = s.tc + R.idle, 'idle' end
  end
  if s.aw ~= 0 and (at == 0 or s.aw < at) then at, why = s.aw, 'gone' end
  return at, why
end

-- schedule makes sure s's due entry is no later than its deadline. Later
-- deadlines are left to the lazy check when the entry comes due, so
-- presence costs no sorted-set work.
-- due adds (or moves) s's entry at d and keeps dmin a lower bound.
local function due(s, d)
  s.sch = d
  redis.call('ZADD', K_DUE, i2s(d), i2s(s.t))
  if dmin == 0 or d < dmin then dmin = d end
end

local function schedule(s)
  local d = deadline(s)
  if d == 0 then return end
  if s.sch == 0 or d < s.sch then
    due(s, d)
    redis.call('HSET', skey(s.t), 'sch', i2s(d))
  end
end

local REASON_STATUS = { left = 'left', revoked = 'left', served = 'served' }

-- finish ends live session s for why. keep writes it to the history and
-- keeps its hash for the retention; without keep (the room is being
-- deleted) the hash goes.
local function finish(s, why, keep)
  local from, ts, sk = s.st, i2s(s.t), skey(s.t)
  if holding(s) then
    redis.call('ZREM', K_ACTIVE, ts)
    nA = nA - 1
    if s.u then release(s) end
  else
    redis.call('ZREM', K_WAIT, ts)
    nW = nW - 1
    NEAR.k = NEAR.k + 1
  end
  redis.call('ZREM', K_DUE, ts)
  if s.key ~= '' then redis.call('HDEL', K_KEYS, s.key) end
  s.st, s.why, s.e, s.sch = REASON_STATUS[why] or 'expired', why, now, 0
  if keep then
    redis.call('HSET', sk, 'st', s.st, 'why', why, 'end', i2s(now), 'sch', '0')
    redis.call('PEXPIRE', sk, RETAIN)
    local h = { 't', ts, 'sec', s.sec, 'key', s.key, 'st', s.st, 'why', why, 'j', i2s(s.j), 'ad', i2s(s.ad),
      'e', i2s(now) }
    if (s.en or 0) ~= 0 then h[#h + 1] = 'en'; h[#h + 1] = i2s(s.en) end
    redis.call('XADD', K_HIST, 'MAXLEN', '~', HISTMAX, '*', unpack(h))
  else
    redis.call('UNLINK', sk)
  end
  change(s, from)
end

-- The token bucket in units where one token is 60,000 and each
-- millisecond adds rate units: memstore's exact integer arithmetic.
local function burst() return math.max(1, math.floor((R.rate + 59) / 60)) end

local function refill()
  local full = burst() * 60000
  local elapsed = now - uat
  if elapsed > 0 then
    if elapsed >= math.floor(full / R.rate) + 1 then
      units = full
    else
      units = math.min(full, units + elapsed * R.rate)
    end
  end
  uat = now
end

local function takeToken()
  if R.rate == 0 then return true end
  refill()
  if units < 60000 then return false end
  units = units - 60000
  return true
end

-- canAdmit reports whether automatic admission is open at all: in a room
-- with an inventory, only while a unit remains to reserve.
local function canAdmit()
  return R.mode == 'auto' and not R.paused and nA < R.cap and (R.stock == nil or R.stock - sold - rsv > 0)
end

-- activate admits waiting session s: active, or invited when it is held
-- (it then holds its slot, and a unit, for its claim: holds.lua).
local function activate(s)
  local ts = i2s(s.t)
  redis.call('ZREM', K_WAIT, ts)
  nW = nW - 1
  NEAR.k = NEAR.k + 1
  redis.call('ZADD', K_ACTIVE, ts, ts)
  nA = nA + 1
  redis.call('ZREM', K_DUE, ts)
  local st = 'active'
  if s.ct ~= '' then st = 'invited' end
  s.st, s.ad, s.tc, s.sch = st, now, now, 0
  if reserve(s) then
    redis.call('HSET', skey(s.t), 'st', st, 'ad', i2s(now), 'tc', i2s(now), 'sch', '0', 'u', '1')
  else
    redis.call('HSET', skey(s.t), 'st', st, 'ad', i2s(now), 'tc', i2s(now), 'sch', '0')
  end
  schedule(s)
  change(s, 'waiting')
  count(s.t, s.pl, s.tr)
end

-- admit moves the head of the line into free slots.
local function admit()
  local n = 0
  while nW > 0 and canAdmit() and takeToken() do
    local head = redis.call('ZRANGE', K_WAIT, 0, 0)
    activate(load(tonumber(head[1])))
    n = n + 1
  end
  return n
end

-- settle expires what is due at now in (deadline, ticket) order, then
-- admits, then ends the line of a room that sold out. It handles at most
-- BATCH due entries; when more remain it returns more = true without
-- admitting, and the caller runs the script again, so one run never blocks
-- Redis for long and the end result is memstore's. Ending a sold-out line
-- is batched the same way (endSoldOut).
local function settle()
  local exp = 0
  -- dmin is at most the earliest entry: past it nothing can be due.
  if dmin == 0 or dmin > now then
    local a = admit()
    local n, more = endSoldOut()
    return n, a, more
  end
  local batch = redis.call('ZRANGEBYSCORE', K_DUE, '-inf', i2s(now), 'WITHSCORES', 'LIMIT', 0, BATCH)
  if #batch > 0 then
    local es = {}
    for i = 1, #batch, 2 do es[#es + 1] = { t = tonumber(batch[i]), at = tonumber(batch[i + 1]) } end
    table.sort(es, function(a, b)
      if a.at ~= b.at then return a.at < b.at end
      return a.t < b.t
    end)
    for _, x in ipairs(es) do
      local s = load(x.t)
      if s == nil or not live(s) then
        redis.call('ZREM', K_DUE, i2s(x.t))
      else
        local d, why = deadline(s)
        if d == 0 then
          s.sch = 0
          redis.call('HSET', skey(s.t), 'sch', '0')
          redis.call('ZREM', K_DUE, i2s(s.t))
        elseif d > now then
          s.sch = d
          redis.call('HSET', skey(s.t), 'sch', i2s(d))
          redis.call('ZADD', K_DUE, i2s(d), i2s(s.t))
        else
          finish(s, why, true)
          exp = exp + 1
        end
      end
    end
    if #es >= BATCH and #redis.call('ZRANGEBYSCORE', K_DUE, '-inf', i2s(now), 'LIMIT', 0, 1) > 0 then
      return exp, 0, true
    end
  end
  local first = redis.call('ZRANGE', K_DUE, 0, 0, 'WITHSCORES')
  dmin = 0
  if #first > 0 then dmin = tonumber(first[2]) end
  local a = admit()
  local n, more = endSoldOut()
  return exp + n, a, more
end

-- nextDue is the earliest time something may be due: the first due entry
-- (possibly early: lazy), the opening of a pre-queue, or the next token
-- when only the rate holds admission back. 0 for none.
local function nextDue()
  local at = 0
  local first = redis.call('ZRANGE', K_DUE, 0, 0, 'WITHSCORES')
  if #first > 0 then at = tonumber(first[2]) end
  if R.sch == 'pre' and (at == 0 or R.opens < at) then at = R.opens end
  if R.rate > 0 and nW > 0 and canAdmit() and units < 60000 then
    local t = uat + math.floor((60000 - units + R.rate - 1) / R.rate)
    if at == 0 or t < at then at = t end
  end
  return at
end

-- reschedule plans every live session's deadline afresh after the timeouts
-- changed. O(n); configuration changes are rare.
local function reschedule()
  redis.call('DEL', K_DUE)
  dmin = 0
  for _, key in ipairs({ K_WAIT, K_ACTIVE }) do
    for _, ts in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      local s = load(tonumber(ts))
      s.sch = 0
      redis.call('HSET', skey(s.t), 'sch', '0')
      schedule(s)
    end
  end
end

-- info is a room's reply form: { configuration, waiting, active, last
-- ticket, clock, entrants, admissions, inversions, sold, reserved,
-- remaining (-1 without an inventory) } (decodeRoom).
local cfgOut
local function info()
  local entrants = 0
  if R.sch == 'pre' or R.sch == 'closing' then entrants = npre end
  local rem = -1
  if R.stock then rem = R.stock - sold - rsv end
  return { cfgOut(), nW, nA, last, R.lastnow, entrants, adm, invs, sold, rsv, rem }
end

-- emit publishes the operation's event (and puts it in the outbox of a room
-- with webhooks) and returns it when asked to. The wire format is
-- decodeEvent's (events.go); the join fast path above writes the same.
-- Operations that changed no session publish nothing (config and delete
-- events, and a draw's, and the one that sold the inventory out, always go
-- out). The head's optional 14th field holds the change's flags: p (a config
-- event of a room paused before it), s (this change sold the inventory
-- out) and d (it completed the draw); the fast paths never make them.
local function emit()
  local flags = ''
  -- The first operation at or after closes_at tells it, once for each
  -- closes_at (clt in the room hash: the one told).
  local closing = kind ~= 'deleted' and R.closes > 0 and now >= R.closes and R.clt ~= R.closes
  if closing then
    R.clt = R.closes
    redis.call('HSET', K_ROOM, 'clt', i2s(R.closes))
    flags = 'c'
  end
  if kind == 'config' and R.pb then flags = flags .. 'p' end
  local soldout = R.stock ~= nil and sold >= R.stock and not R.so
  if soldout then flags = flags .. 's' end
  if R.dd then flags = flags .. 'd' end
  if not EV or (#changes == 0 and kind == 'sessions' and not always and not soldout and not closing) then return '' end
  local head = { '1', PID, ROOM, kind, i2s(now), i2s(nW), i2s(nA), i2s(last), cfgjson,
    i2s(adm), i2s(invs), i2s(madm), i2s(sold) }
  if flags ~= '' then head[14] = flags end
  local msg = table.concat(head, '\t')
  if #changes > 0 then msg = msg .. '\n' .. table.concat(changes, '\n') end
  return publish(msg, R.hk)
end

local function save()
  local f, old = {}, R.saved
  local names = { 'now', 'units', 'uat', 'nw', 'na', 'last', 'dmin', 'npre', 'adm', 'invs', 'madm', 'sold', 'rsv' }
  local vals = { now, units, uat, nW, nA, last, dmin, npre, adm, invs, madm, sold, rsv }
  for i = 1, #names do
    if vals[i] ~= old[names[i]] then
      f[#f + 1] = names[i]
      f[#f + 1] = i2s(vals[i])
    end
  end
  if #f > 0 then redis.call('HSET', K_ROOM, unpack(f)) end
  saveTiers()
end

-- reply finishes a writing operation: it tells the sessions that reached
-- notify_at (unless the operation goes on in another run: more, draw),
-- saves the clock and bucket and emits the event, whatever the status.
local function reply(status, ...)
  tellNear(status ~= 'more' and status ~= 'draw' and not NEAR.later)
  save()
  return { status, emit(), ... }
end

