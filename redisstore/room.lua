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
--   3 wait    ZSET   waiting tickets scored by ticket: position = ZRANK + 1
--   4 active  ZSET   active tickets scored by ticket
--   5 keys    HASH   key -> ticket of its live session
--   6 due     ZSET   ticket -> scheduled deadline (lazy, as memstore's heap)
--   7 hist    STREAM ended sessions, capped
--   8 lease   STRING the process that sweeps this room
-- Session hashes <prefix>s:<ticket> share the tag and are derived from KEYS[1].
--
-- ARGV: 1 op, 2 room name, 3 now (unix ms), 4 process id, 5 publish command
-- ('' for none), 6 channel, 7 '1' to return the event, 8 retention of ended
-- sessions (ms), 9 history length, 10 expiry batch, 11.. the op's arguments.
--
-- Reply: { status, event, ... }. status is 'ok', 'more' (the expiry batch was
-- used up before the work: call again), 'leased' (Sweep: another process
-- holds the lease) or an error code. event is the operation's event, when
-- asked for, else ''.

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

-- ---------------------------------------------------------------- fast paths
-- Presence, and a join that waits, are most of the traffic. When nothing is
-- due and nobody can be admitted (memstore's presenceShared makes the same
-- check), they need none of the general machinery below, whose closures,
-- made afresh on every run, cost more than their work. Whatever else they
-- meet they leave to the general path, which is the reference: the results
-- are the same either way.

if OP == 'session' or OP == 'heartbeat' or OP == 'join' or OP == 'joins' then
  local v = redis.call('HMGET', K_ROOM, 'mode', 'cap', 'rate', 'paused', 'now', 'units', 'uat',
    'base', 'nw', 'na', 'dmin', 'wt', 'idle', 'maxs')
  if v[1] then
    local fmt = string.format
    local now = math.max(ARGNOW, tonumber(v[5]))
    local cap, nw, na, dmin = tonumber(v[2]), tonumber(v[9]), tonumber(v[10]), tonumber(v[11])
    local open = v[1] == 'auto' and v[4] ~= '1' and na < cap
    local quiet = dmin == 0 or dmin > now
    if quiet and open and nw > 0 then
      -- Admission is open: only the rate can hold it back.
      local rate = tonumber(v[3])
      local elapsed = now - tonumber(v[7])
      if rate == 0 or elapsed > 60000 or tonumber(v[6]) + elapsed * rate >= 60000 then quiet = false end
    end

    if quiet and OP ~= 'join' and OP ~= 'joins' then
      local t = tonumber(ARGV[11])
      if t > tonumber(v[8]) then
        local sk = PFX .. 's:' .. ARGV[11]
        local s = redis.call('HMGET', sk, 'sec', 'st', 'tc', 'aw', 'sch', 'key', 'j', 'ad')
        local st = s[2]
        local timer = (st == 'waiting' and tonumber(v[12]) > 0) or
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
          if st == 'waiting' then pos = redis.call('ZRANK', K_WAIT, ARGV[11]) + 1 end
          return { 'ok', '', { t, s[1], st, s[6] or '', tonumber(s[7]), tonumber(s[8]), 0, '', pos, nw, na, cap } }
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
    -- back, so the caller knows the rest of its session.
    if OP == 'joins' then
      if not (quiet and (nw > 0 or not open)) then return { 'slow', '' } end
      local head = { now, nw, na, cap }
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
              nw .. '\t' .. na_s .. '\t' .. cap_s
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
        ev = table.concat({ '1', PID, ROOM, 'sessions', ns, fmt('%d', nw), na_s, lastts, '' }, '\t') .. '\n' ..
          table.concat(lines, '\n')
        if PUB ~= '' then redis.call(PUB, CHAN, ev) end
        if not WANT_EV then ev = '' end
      end
      return { 'ok', ev, head, out }
    end

    -- A join that waits: someone already does, or admission is closed.
    if quiet and OP == 'join' and (nw > 0 or not open) then
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
          ev = table.concat({ '1', PID, ROOM, 'sessions', ns, w, a, ts, '' }, '\t') .. '\n' ..
            table.concat({ ts, sec, '', 'waiting', key, ns, '0', '0', '', w, a, fmt('%d', cap) }, '\t')
          if PUB ~= '' then redis.call(PUB, CHAN, ev) end
          if not WANT_EV then ev = '' end
        end
        -- The newest ticket is last in line: its position is the count.
        return { 'ok', ev, { t, sec, 'waiting', key, now, 0, 0, '', nw, nw, na, cap } }
      end
    end
  end
end

-- ---------------------------------------------------------------- general path

local function i2s(n) return string.format('%d', n) end
local function skey(t) return PFX .. 's:' .. i2s(t) end

-- Room state, loaded once (one HMGET) and saved once at the end; the
-- counters are kept in step with every change.
local R, now, nW, nA, last, units, uat, dmin
local changes, kind, cfgjson = {}, 'sessions', ''

local function loadRoom()
  local v = redis.call('HMGET', K_ROOM, 'mode', 'cap', 'rate', 'idle', 'maxs', 'wt', 'grace',
    'paused', 'now', 'units', 'uat', 'base', 'cfg', 'tsig', 'nw', 'na', 'last', 'dmin')
  if not v[1] then return false end
  R = { mode = v[1], cap = tonumber(v[2]), rate = tonumber(v[3]), idle = tonumber(v[4]),
    maxs = tonumber(v[5]), wt = tonumber(v[6]), grace = tonumber(v[7]), paused = v[8] == '1',
    lastnow = tonumber(v[9]), base = tonumber(v[12]), cfg = v[13], tsig = v[14] }
  units, uat = tonumber(v[10]), tonumber(v[11])
  nW, nA, last, dmin = tonumber(v[15]), tonumber(v[16]), tonumber(v[17]), tonumber(v[18])
  -- What save compares with, to write only what changed.
  R.saved = { now = R.lastnow, units = units, uat = uat, nw = nW, na = nA, last = last, dmin = dmin }
  return true
end

-- A session: t ticket, sec secret (hex), key, st status, j joined, ad
-- admitted, tc last seen (waiting) or last active (active), aw away until
-- (0: present), sch scheduled deadline (0: none), why end reason, e ended.
-- Loaded sessions are cached for the run, so every change goes through one
-- table and nothing is read twice.
local cache = {}
local function load(t)
  local s = cache[t]
  if s then return s end
  local v = redis.call('HMGET', skey(t), 'sec', 'key', 'st', 'j', 'ad', 'tc', 'aw', 'sch', 'why', 'end')
  if not v[1] then return nil end
  s = { t = t, sec = v[1], key = v[2] or '', st = v[3], j = tonumber(v[4]) or 0,
    ad = tonumber(v[5]) or 0, tc = tonumber(v[6]) or 0, aw = tonumber(v[7]) or 0,
    sch = tonumber(v[8]) or 0, why = v[9] or '', e = tonumber(v[10]) or 0 }
  cache[t] = s
  return s
end

local function live(s) return s.st == 'waiting' or s.st == 'active' end

-- find returns the session with ticket t of this incarnation of the room
-- whose secret is sec, or nil.
local function find(t, sec)
  if t <= R.base then return nil end
  local s = load(t)
  if s == nil or s.sec ~= sec then return nil end
  return s
end

-- view is the reply form of a session with the room's totals now.
local function view(s, pos)
  local p = 0
  if pos and s.st == 'waiting' then p = redis.call('ZRANK', K_WAIT, i2s(s.t)) + 1 end
  return { s.t, s.sec, s.st, s.key, s.j, s.ad, s.e, s.why, p, nW, nA, R.cap }
end

-- change records a status change for the event. Live sessions carry the
-- totals of that moment; ended ones none (as memstore).
local function change(s, from)
  if not EV then return end
  local w, a, c = 0, 0, 0
  if live(s) then w, a, c = nW, nA, R.cap end
  changes[#changes + 1] = table.concat({ i2s(s.t), s.sec, from, s.st, s.key, i2s(s.j), i2s(s.ad),
    i2s(s.e), s.why, i2s(w), i2s(a), i2s(c) }, '\t')
end

-- deadline returns when s is due and why; 0 when it has no deadline. On a
-- tie the first considered wins: the contract's order.
local function deadline(s)
  local at, why = 0, ''
  if s.st == 'waiting' then
    if R.wt > 0 then at, why = s.tc + R.wt, 'no_presence' end
  else
    if R.maxs > 0 then at, why = s.ad + R.maxs, 'max_session' end
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
  if from == 'active' then
    redis.call('ZREM', K_ACTIVE, ts)
    nA = nA - 1
  else
    redis.call('ZREM', K_WAIT, ts)
    nW = nW - 1
  end
  redis.call('ZREM', K_DUE, ts)
  if s.key ~= '' then redis.call('HDEL', K_KEYS, s.key) end
  s.st, s.why, s.e, s.sch = REASON_STATUS[why] or 'expired', why, now, 0
  if keep then
    redis.call('HSET', sk, 'st', s.st, 'why', why, 'end', i2s(now), 'sch', '0')
    redis.call('PEXPIRE', sk, RETAIN)
    redis.call('XADD', K_HIST, 'MAXLEN', '~', HISTMAX, '*', 't', ts, 'sec', s.sec, 'key', s.key,
      'st', s.st, 'why', why, 'j', i2s(s.j), 'ad', i2s(s.ad), 'e', i2s(now))
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

local function canAdmit()
  return R.mode == 'auto' and not R.paused and nA < R.cap
end

local function activate(s)
  local ts = i2s(s.t)
  redis.call('ZREM', K_WAIT, ts)
  nW = nW - 1
  redis.call('ZADD', K_ACTIVE, ts, ts)
  nA = nA + 1
  redis.call('ZREM', K_DUE, ts)
  s.st, s.ad, s.tc, s.sch = 'active', now, now, 0
  redis.call('HSET', skey(s.t), 'st', 'active', 'ad', i2s(now), 'tc', i2s(now), 'sch', '0')
  schedule(s)
  change(s, 'waiting')
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
-- admits. It handles at most BATCH due entries; when more remain it returns
-- more = true without admitting, and the caller runs the script again, so
-- one run never blocks Redis for long and the end result is memstore's.
local function settle()
  local exp = 0
  -- dmin is at most the earliest entry: past it nothing can be due.
  if dmin == 0 or dmin > now then return exp, admit(), false end
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
  return exp, admit(), false
end

-- nextDue is the earliest time something may be due: the first due entry
-- (possibly early: lazy) or the next token when only the rate holds
-- admission back. 0 for none.
local function nextDue()
  local at = 0
  local first = redis.call('ZRANGE', K_DUE, 0, 0, 'WITHSCORES')
  if #first > 0 then at = tonumber(first[2]) end
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

local function info()
  return { R.cfg, nW, nA, last, R.lastnow }
end

-- emit publishes the operation's event and returns it when asked to. The
-- wire format is decodeEvent's (events.go); the join fast path above
-- writes the same.
-- Operations that changed no session publish nothing (config and delete
-- events always go out).
local function emit()
  if not EV or (#changes == 0 and kind == 'sessions') then return '' end
  local msg = table.concat({ '1', PID, ROOM, kind, i2s(now), i2s(nW), i2s(nA), i2s(last), cfgjson }, '\t')
  if #changes > 0 then msg = msg .. '\n' .. table.concat(changes, '\n') end
  if PUB ~= '' then redis.call(PUB, CHAN, msg) end
  if WANT_EV then return msg end
  return ''
end

local function save()
  local f, old = {}, R.saved
  local names = { 'now', 'units', 'uat', 'nw', 'na', 'last', 'dmin' }
  local vals = { now, units, uat, nW, nA, last, dmin }
  for i = 1, 7 do
    if vals[i] ~= old[names[i]] then
      f[#f + 1] = names[i]
      f[#f + 1] = i2s(vals[i])
    end
  end
  if #f > 0 then redis.call('HSET', K_ROOM, unpack(f)) end
end

-- reply finishes a writing operation: it saves the clock and bucket and
-- emits the event, whatever the status.
local function reply(status, ...)
  save()
  return { status, emit(), ... }
end

-- ---------------------------------------------------------------- create

local exists = loadRoom()

if OP == 'putroom' and not exists then
  -- ARGV 11.. mode cap rate idle maxs wt grace paused cfg tsig
  local base = tonumber(redis.call('GET', K_SEQ) or '0')
  local rate = tonumber(ARGV[13])
  local full = math.max(1, math.floor((rate + 59) / 60)) * 60000
  redis.call('HSET', K_ROOM, 'mode', ARGV[11], 'cap', ARGV[12], 'rate', ARGV[13], 'idle', ARGV[14],
    'maxs', ARGV[15], 'wt', ARGV[16], 'grace', ARGV[17], 'paused', ARGV[18], 'cfg', ARGV[19],
    'tsig', ARGV[20], 'now', i2s(ARGNOW), 'units', i2s(full), 'uat', i2s(ARGNOW), 'base', i2s(base),
    'nw', '0', 'na', '0', 'last', i2s(base), 'dmin', '0')
  loadRoom()
  now, kind, cfgjson = ARGNOW, 'config', ARGV[19]
  return reply('ok', 1, info(), 0)
end

if not exists then return { 'room_not_found', '' } end

-- ---------------------------------------------------------------- reads
-- Reads take no now and change nothing: the state as of the last operation.

if OP == 'room' then
  return { 'ok', '', info() }
end

if OP == 'sessions' then
  -- ARGV 11.. ticket, secret pairs
  local out = { 'ok', '' }
  for i = 11, #ARGV, 2 do
    local s = find(tonumber(ARGV[i]), ARGV[i + 1])
    if s == nil then
      out[#out + 1] = 0
    else
      out[#out + 1] = view(s, true)
    end
  end
  return out
end

if OP == 'waiting' then
  -- ARGV 11 after (ticket), 12 page size
  local after, size = ARGV[11], tonumber(ARGV[12])
  local ts = redis.call('ZRANGEBYSCORE', K_WAIT, '(' .. after, '+inf', 'LIMIT', 0, size)
  local out = {}
  local pos = 0
  if #ts > 0 then pos = redis.call('ZCOUNT', K_WAIT, '-inf', after) end
  for i, t in ipairs(ts) do
    pos = pos + 1
    local v = view(load(tonumber(t)), false)
    v[9] = pos
    out[i] = v
  end
  local nxt = 0
  if #out == size and pos < nW then nxt = tonumber(ts[#ts]) end
  return { 'ok', '', nxt, out }
end

if OP == 'history' then
  -- ARGV 11 status ('' for all), 12 cursor (stream id, '' for the start), 13 page size
  local status, cursor, size = ARGV[11], ARGV[12], tonumber(ARGV[13])
  local start = '+'
  if cursor ~= '' then start = '(' .. cursor end
  local out, lastid = {}, nil
  local chunk = math.max(size, 64)
  while #out < size do
    local es = redis.call('XREVRANGE', K_HIST, start, '-', 'COUNT', chunk)
    for _, e in ipairs(es) do
      local f = {}
      for i = 1, #e[2], 2 do f[e[2][i]] = e[2][i + 1] end
      if status == '' or f.st == status then
        out[#out + 1] = { tonumber(f.t), f.sec, f.st, f.key or '', tonumber(f.j), tonumber(f.ad),
          tonumber(f.e), f.why, 0, nW, nA, R.cap }
        lastid = e[1]
        if #out == size then break end
      end
    end
    if #es < chunk or #out == size then break end
    start = '(' .. es[#es][1]
  end
  local nxt = ''
  if #out == size and lastid and #redis.call('XREVRANGE', K_HIST, '(' .. lastid, '-', 'COUNT', 1) > 0 then
    nxt = lastid
  end
  return { 'ok', '', nxt, out }
end

-- ---------------------------------------------------------------- writes

now = math.max(ARGNOW, R.lastnow)

if OP == 'sweep' then
  -- ARGV 11 lease (ms; 0: none). Only the lease holder sweeps, so many
  -- processes do not all sweep every room; requests settle by themselves.
  local lease = tonumber(ARGV[11])
  if lease > 0 then
    local holder = redis.call('GET', K_LEASE)
    if holder and holder ~= PID then
      return { 'leased', '', redis.call('PTTL', K_LEASE) }
    end
    redis.call('SET', K_LEASE, PID, 'PX', lease)
  end
end

local exp, adm, more = settle()
if more then return reply('more', exp) end

if OP == 'sweep' then
  return reply('ok', exp, adm, nextDue())
end

if OP == 'putroom' then
  local tsig = R.tsig
  R.mode, R.cap, R.rate = ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13])
  R.idle, R.maxs, R.wt, R.grace = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[17])
  R.paused, R.cfg, R.tsig = ARGV[18] == '1', ARGV[19], ARGV[20]
  redis.call('HSET', K_ROOM, 'mode', ARGV[11], 'cap', ARGV[12], 'rate', ARGV[13], 'idle', ARGV[14],
    'maxs', ARGV[15], 'wt', ARGV[16], 'grace', ARGV[17], 'paused', ARGV[18], 'cfg', ARGV[19], 'tsig', ARGV[20])
  units, uat = burst() * 60000, now
  if tsig ~= R.tsig then reschedule() end
  local _, _, again = settle()
  kind, cfgjson = 'config', R.cfg
  local m = 0
  if again then m = 1 end
  return reply('ok', 0, info(), m)
end

if OP == 'deleteroom' then
  -- ARGV 11 force ('1')
  local n = nW + nA
  if n > 0 and ARGV[11] ~= '1' then return reply('room_not_empty', n) end
  kind = 'deleted'
  for _, key in ipairs({ K_ACTIVE, K_WAIT }) do
    for _, ts in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      finish(load(tonumber(ts)), 'room_deleted', false)
    end
  end
  local ev = reply('ok')
  redis.call('UNLINK', K_ROOM, K_WAIT, K_ACTIVE, K_KEYS, K_DUE, K_HIST, K_LEASE, K_RECENT, K_RECENTQ)
  return ev
end

if OP == 'join' then
  -- ARGV 11 key, 12 secret
  local key, sec = ARGV[11], ARGV[12]
  local rt = redis.call('HGET', K_RECENT, sec)
  if rt then
    -- This join ran already (its reply was lost): answer as then, as the
    -- session is now.
    local s0 = load(tonumber(rt))
    if s0 and s0.sec == sec then
      settle()
      return reply('ok', view(s0, true))
    end
  end
  if key ~= '' then
    local lt = redis.call('HGET', K_KEYS, key)
    if lt then return reply('already_joined', view(load(tonumber(lt)), true)) end
  end
  local t = redis.call('INCR', K_SEQ)
  last = t
  local s = { t = t, sec = sec, key = key, j = now, ad = 0, tc = now, aw = 0, sch = 0, why = '', e = 0 }
  local ts = i2s(t)
  if nW == 0 and canAdmit() and takeToken() then
    s.st, s.ad = 'active', now
    redis.call('ZADD', K_ACTIVE, ts, ts)
    nA = nA + 1
  else
    s.st = 'waiting'
    redis.call('ZADD', K_WAIT, ts, ts)
    nW = nW + 1
  end
  cache[t] = s
  local d = deadline(s)
  if d ~= 0 then due(s, d) end
  local f = { 'sec', sec, 'st', s.st, 'j', i2s(now), 'ad', i2s(s.ad), 'tc', i2s(now), 'aw', '0', 'sch', i2s(s.sch) }
  if key ~= '' then
    f[#f + 1] = 'key'; f[#f + 1] = key
    redis.call('HSET', K_KEYS, key, ts)
  end
  redis.call('HSET', skey(t), unpack(f))
  remember({ sec }, { ts })
  change(s, '')
  settle()
  return reply('ok', view(s, true))
end

if OP == 'advance' then
  -- ARGV 11 n
  if nW == 0 then return reply('queue_empty') end
  local moved = {}
  for _, ts in ipairs(redis.call('ZRANGE', K_WAIT, 0, tonumber(ARGV[11]) - 1)) do
    local s = load(tonumber(ts))
    if R.mode == 'manual' then
      finish(s, 'served', true)
    else
      activate(s)
    end
    moved[#moved + 1] = s
  end
  settle()
  local out = {}
  for i, s in ipairs(moved) do out[i] = view(s, false) end
  return reply('ok', out)
end

-- The remaining operations name a session: ARGV 11 ticket (0: the id was
-- malformed), 12 secret. They settle first even then, as memstore does.
local t = tonumber(ARGV[11])
if t == 0 then return reply('invalid_session_id') end
local s = find(t, ARGV[12])
if s == nil then return reply('session_not_found') end

if OP == 'session' or OP == 'heartbeat' then
  if not live(s) then return reply('ok', view(s, false)) end
  if (s.st == 'waiting' or OP == 'heartbeat') and s.tc ~= now or s.aw ~= 0 then
    if s.st == 'waiting' or OP == 'heartbeat' then s.tc = now end
    s.aw = 0
    redis.call('HSET', skey(t), 'tc', i2s(s.tc), 'aw', '0')
  end
  if s.sch == 0 then schedule(s) end
  return reply('ok', view(s, true))
end

if OP == 'away' then
  if live(s) then
    s.aw = now + R.grace
    if s.aw == 0 then s.aw = 1 end -- now is the epoch: keep away distinguishable from present
    redis.call('HSET', skey(t), 'aw', i2s(s.aw))
    schedule(s)
    settle()
  end
  return reply('ok')
end

if OP == 'leave' then
  -- ARGV 13 reason
  if live(s) then
    finish(s, ARGV[13], true)
    settle()
  end
  return reply('ok', view(s, false))
end

return redis.error_reply('redisstore: unknown operation ' .. OP)
