-- ---------------------------------------------------------------- schedule
-- A scheduled room (internal/engine/schedule.go): joins before the opening enter a
-- pre-queue without tickets, named by entry numbers; at the first operation
-- at or after the opening the draw gives every live entrant a ticket in the
-- order of HMAC-SHA256(seed, entry). Lua cannot compute that, so the draw
-- is applied in steps that the Go side (schedule.go) drives:
--
--   1. an operation that finds the draw due freezes the room ('closing':
--      the draw's time, its first ticket and its progress are fixed) and
--      answers 'draw'; while a room is closing every operation answers
--      'draw', so the pre-queue and the ticket counter stay as they are;
--   2. Go reads the seed and the frozen pre-queue, orders it, and sends the
--      order in steps (drawstep), each at the offset the room expects; a
--      step at another offset changes nothing, so any number of processes
--      may drive one draw, and all of them compute the same order;
--   3. the last step marks the room drawn; Go then runs the operation again.
--
-- Keys (all sharing the room's tag):
--   eseq        STRING entry counter; never deleted, so entry numbers are never reused
--   pre         HASH   live entrant: entry number -> secret \t joined \t key,
--                      in a room with tiers then \t tier index (tiers.lua)
--   e2t         HASH   after the draw: entry number -> ticket
--   draw        HASH   seed (hex); while closing dnow, dfirst, dnext; after
--                      the draw at, first, digest, count
--   dlist       LIST   after the draw: 'entry-number entry' in draw order
--   x:<entry>   HASH   an entrant that ended before the draw, kept for the retention
--   dl          STRING the process driving the draw (schedule.go)
-- The room hash holds sch ('' none, 'pre', 'closing', 'drawn'), opens (when
-- the pre-queue closes: opens_at, or the time it was cleared), closes
-- (closes_at, 0 for none), npre (live entrants) and ebase (eseq when this
-- incarnation of the room was made: smaller entry numbers are not its own).

local K_DRAW, K_DLIST, K_DLEASE = PFX .. 'draw', PFX .. 'dlist', PFX .. 'dl'

-- entrant returns live entrant n of the pre-queue, or nil.
local function entrant(n)
  if R.sch ~= 'pre' or n <= R.ebase then return nil end
  local rec = redis.call('HGET', K_PRE, i2s(n))
  if not rec then return nil end
  local sec, j, key, tr = unpackEntrant(rec)
  return { n = n, sec = sec, j = j, key = key, tr = tr }
end

-- entrantView is the reply form of live entrant p.
local function entrantView(p)
  return placeTail(stockTail({ 0, p.sec, 'waiting', p.key, p.j, 0, 0, '', 0, nW, nA, R.cap, p.n, R.opens, npre }, false), p)
end

-- endedEntrant returns entrant n that ended before the draw, as a session
-- without a ticket, if its secret is sec.
local function endedEntrant(n, sec)
  if n <= R.ebase then return nil end
  local v = redis.call('HMGET', PFX .. 'x:' .. i2s(n), 'sec', 'key', 'st', 'j', 'why', 'end')
  if v[1] ~= sec then return nil end
  return { t = 0, sec = v[1], key = v[2] or '', st = v[3], j = tonumber(v[4]), ad = 0, tc = 0, aw = 0,
    sch = 0, why = v[5], e = tonumber(v[6]), en = n }
end

-- lookup finds what an id names (ticket t, secret sec, entry number en):
-- a live entrant (first result) or a session, live or ended (second);
-- neither when the id names nothing of this room.
local function lookup(t, sec, en)
  if en == 0 then return nil, find(t, sec) end
  if en <= R.ebase then return nil, nil end
  if R.sch == 'pre' then
    local p = entrant(en)
    if p then
      if p.sec == sec then return p, nil end
      return nil, nil
    end
  elseif R.sch == 'drawn' then
    local dt = redis.call('HGET', K_E2T, i2s(en))
    if dt then return nil, find(tonumber(dt), sec) end
  end
  return nil, endedEntrant(en, sec)
end

-- endEntrant ends live entrant p before the draw. keep writes it to the
-- history and keeps it for the retention; without keep (the room is being
-- deleted) it goes with the pre-queue.
local function endEntrant(p, why, keep)
  npre = npre - 1
  local s = { t = 0, sec = p.sec, key = p.key, st = REASON_STATUS[why] or 'expired', j = p.j, ad = 0, tc = 0,
    aw = 0, sch = 0, why = why, e = now, en = p.n }
  if keep then
    redis.call('HDEL', K_PRE, i2s(p.n))
    if p.key ~= '' then redis.call('HDEL', K_KEYS, p.key) end
    local xk = PFX .. 'x:' .. i2s(p.n)
    redis.call('HSET', xk, 'sec', p.sec, 'key', p.key, 'st', s.st, 'j', i2s(p.j), 'why', why, 'end', i2s(now))
    redis.call('PEXPIRE', xk, RETAIN)
    redis.call('XADD', K_HIST, 'MAXLEN', '~', HISTMAX, '*', 't', '0', 'sec', p.sec, 'key', p.key,
      'st', s.st, 'why', why, 'j', i2s(p.j), 'ad', '0', 'e', i2s(now), 'en', i2s(p.n))
  end
  change(s, 'waiting')
  return s
end

-- enterNow adds an entrant of tier tr (nil without tiers) in the general
-- path.
local function enterNow(key, sec, tr)
  local ns = i2s(now)
  local n = enter(key, sec, ns, tr)
  npre = npre + 1
  remember({ sec }, { 'e' .. n })
  if EV then
    changes[#changes + 1] = entrantLine(n, sec, key, ns, i2s(nW), i2s(nA), i2s(R.cap), i2s(R.opens), i2s(npre)) ..
      liveTail(15, 0, tr)
  end
  return { n = tonumber(n), sec = sec, j = now, key = key, tr = tr }
end

-- applySchedule follows a configuration's opens_at (0 for none): a room
-- that gets one for the first time gets seed; before the draw the opening
-- may move, and clearing it closes the pre-queue at now. It returns the
-- draw's seed (hex) when the room is scheduled and not drawn, for this
-- process's config event (PutRoom attaches it; it is never published),
-- else ''.
local function applySchedule(opens, seed)
  if R.sch == '' then
    if opens == 0 then return '' end
    R.sch, R.opens = 'pre', opens
    redis.call('HSET', K_DRAW, 'seed', seed)
  elseif R.sch == 'pre' then
    if opens == 0 then R.opens = math.min(R.opens, now) else R.opens = opens end
    seed = redis.call('HGET', K_DRAW, 'seed')
  else
    return ''
  end
  redis.call('HSET', K_ROOM, 'sch', R.sch, 'opens', i2s(R.opens))
  return seed
end

local function drawDue() return R.sch == 'pre' and now >= R.opens end

-- freeze closes the pre-queue at now: the draw takes place at now and its
-- first ticket follows the last one issued.
local function freeze()
  R.sch = 'closing'
  redis.call('HSET', K_ROOM, 'sch', 'closing')
  redis.call('HSET', K_DRAW, 'dnow', i2s(now), 'dfirst', i2s(last + 1), 'dnext', '0')
end

-- drawInfo is the reply of the drawinfo read: { sch, opens, entrants, seed,
-- drawn at, first ticket, digest, count, draw time, next offset, last ticket }.
local function drawInfo()
  local d = redis.call('HMGET', K_DRAW, 'seed', 'at', 'first', 'digest', 'count', 'dnow', 'dfirst', 'dnext')
  return { 'ok', '', R.sch, R.opens, npre, d[1] or '', tonumber(d[2] or '0'), tonumber(d[3] or '0'), d[4] or '',
    tonumber(d[5] or '0'), tonumber(d[6] or '0'), tonumber(d[7] or '0'), tonumber(d[8] or '0'), last }
end

-- drawStep applies one step of the draw. ARGV 11 offset, 12 entrants in
-- all, 13 digest, 14 lease (ms), 15.. entry number, entry pairs in draw
-- order from offset. Each entrant gets the next ticket and waits at the
-- back, present as of the draw; a keyed one keeps its key. In a room with
-- tiers each keeps its tier and gets its place, in ticket order. Reply: 'ok' with
-- the next offset, 'skip' with the offset the room expects, or 'done' when
-- the room is not closing (the draw took place).
local function drawStep()
  if R.sch ~= 'closing' then return { 'done', '' } end
  if redis.call('GET', K_DLEASE) == PID then redis.call('PEXPIRE', K_DLEASE, ARGV[14]) end
  local d = redis.call('HMGET', K_DRAW, 'dnow', 'dfirst', 'dnext')
  local first, off, total = tonumber(d[2]), tonumber(ARGV[11]), tonumber(ARGV[12])
  if off ~= tonumber(d[3]) then return { 'skip', '', tonumber(d[3]) } end
  local k = (#ARGV - 14) / 2
  if total ~= npre or off + k > total then
    return redis.error_reply('redisstore: a draw step of ' .. k .. ' at ' .. off .. ' of ' .. total ..
      ' does not fit a pre-queue of ' .. npre)
  end
  now = tonumber(d[1])
  local ns = i2s(now)
  local sch, sch_s = 0, '0'
  if R.wt > 0 then
    sch = now + R.wt
    sch_s = i2s(sch)
    if dmin == 0 or sch < dmin then dmin = sch end
  end
  -- Sub-batches keep unpack within Lua's stack. This loop is the draw's
  -- cost, so it builds the event's lines itself (change's format) and
  -- keeps the joined time as the string it was stored as.
  local tail = '\t0\t0\t\t'
  local live = '\t' .. i2s(nA) .. '\t' .. i2s(R.cap) .. '\t'
  -- In a room with an inventory a line also holds the entrant's (unused)
  -- opening and pre-queue fields, the units remaining and no unit.
  local stail = lineTail(13)
  for b = 0, k - 1, 1000 do
    local m = math.min(1000, k - b)
    local nums = {}
    for i = 1, m do nums[i] = ARGV[13 + 2 * (b + i)] end
    local recs = redis.call('HMGET', K_PRE, unpack(nums))
    local wait, due, e2t, list, keys = {}, {}, {}, {}, {}
    for i = 1, m do
      local rec, n = recs[i], nums[i]
      if not rec then
        return redis.error_reply('redisstore: the draw names entrant ' .. n .. ', who is not in the pre-queue')
      end
      local sec, j, key, tr = string.match(rec, ENTRANT)
      local t = first + off + b + i - 1
      local ts = i2s(t)
      local f = { 'sec', sec, 'st', 'waiting', 'j', j, 'ad', '0', 'tc', ns, 'aw', '0', 'sch', sch_s, 'en', n }
      if key ~= '' then
        f[#f + 1] = 'key'; f[#f + 1] = key
        keys[#keys + 1] = key; keys[#keys + 1] = ts
      end
      local score, pl = ts, 0
      if tr ~= '' then
        tr = tonumber(tr)
        pl = placeFor(tr, t)
        score = i2s(pl)
        f[#f + 1] = 'pl'; f[#f + 1] = score
        f[#f + 1] = 'tr'; f[#f + 1] = i2s(tr)
      else
        tr = nil
      end
      redis.call('HSET', PFX .. 's:' .. ts, unpack(f))
      wait[#wait + 1] = score; wait[#wait + 1] = ts
      if sch > 0 then due[#due + 1] = sch_s; due[#due + 1] = ts end
      e2t[#e2t + 1] = n; e2t[#e2t + 1] = ts
      list[#list + 1] = n .. ' ' .. ARGV[14 + 2 * (b + i)]
      nW = nW + 1
      last = t
      if EV then
        local lt = stail
        if tr then lt = liveTail(13, pl, tr) end
        changes[#changes + 1] = ts .. '\t' .. sec .. '\twaiting\twaiting\t' .. key .. '\t' .. j .. tail ..
          i2s(nW) .. live .. n .. lt
      end
    end
    redis.call('ZADD', K_WAIT, unpack(wait))
    if #due > 0 then redis.call('ZADD', K_DUE, unpack(due)) end
    redis.call('HSET', K_E2T, unpack(e2t))
    redis.call('RPUSH', K_DLIST, unpack(list))
    if #keys > 0 then redis.call('HSET', K_KEYS, unpack(keys)) end
  end
  off = off + k
  -- The counter never goes down: a room rewound while closing had it
  -- raised past the tickets its processes saw (room.lua), which may lie
  -- beyond the draw's.
  if k > 0 and last > tonumber(redis.call('GET', K_SEQ) or '0') then redis.call('SET', K_SEQ, i2s(last)) end
  if off == total then
    -- The step that completes the draw: its event always goes out, flagged
    -- (emit).
    always, R.dd = true, true
    redis.call('HSET', K_DRAW, 'at', ns, 'first', i2s(first), 'digest', ARGV[13], 'count', i2s(total))
    redis.call('HDEL', K_DRAW, 'dnow', 'dfirst', 'dnext')
    redis.call('DEL', K_PRE)
    npre = 0
    R.sch = 'drawn'
    redis.call('HSET', K_ROOM, 'sch', 'drawn')
    -- The operation the draw holds up tells the first notify_at entrants
    -- they are near, once it has admitted (holds.lua).
    if R.nat > 0 then redis.call('HSET', K_ROOM, 'nsc', '1') end
  else
    redis.call('HSET', K_DRAW, 'dnext', i2s(off))
  end
  now = math.max(now, R.lastnow)
  return reply('ok', off)
end
