-- The room script's general path: room state, sessions, deadlines,
-- admission, expiry, events and the reply (room.lua explains the split).

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
    'tn', 'tp', 'tw', 'vt', 'fin', 'tm', 'hk', 'clt', 'hp', 'cw', 'nat', 'nsc', 'rev')
  if not v[1] then return false end
  loadTiers(v[30], v[31], v[32], v[33], v[34], v[35])
  R = { mode = v[1], cap = tonumber(v[2]), rate = tonumber(v[3]), idle = tonumber(v[4]),
    maxs = tonumber(v[5]), wt = tonumber(v[6]), grace = tonumber(v[7]), paused = v[8] == '1',
    lastnow = tonumber(v[9]), base = tonumber(v[12]), cfg = v[13], tsig = v[14],
    sch = v[19] or '', opens = tonumber(v[20] or '0'), closes = tonumber(v[21] or '0'),
    ebase = tonumber(v[23] or '0'), stock = tonumber(v[27] or ''), hk = v[36] == '1',
    clt = tonumber(v[37] or '0'), hp = v[38] == '1', cw = tonumber(v[39] or '0'), nat = tonumber(v[40] or '0'),
    nsc = v[41] == '1', rev = tonumber(v[42] or '1') }
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

-- bumpRev counts a change of the room's configuration: R.rev is its
-- revision (waitroom.Room.Revision), 1 for a room made before revisions
-- were kept. A deleted room's last goes to K_RV (ops.lua), which is never
-- deleted, so a room made again continues above it.
local function bumpRev()
  R.rev = R.rev + 1
  redis.call('HSET', K_ROOM, 'rev', i2s(R.rev))
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
-- remaining (-1 without an inventory), revision } (decodeRoom).
local cfgOut
local function info()
  local entrants = 0
  if R.sch == 'pre' or R.sch == 'closing' then entrants = npre end
  local rem = -1
  if R.stock then rem = R.stock - sold - rsv end
  return { cfgOut(), nW, nA, last, R.lastnow, entrants, adm, invs, sold, rsv, rem, R.rev }
end

-- emit publishes the operation's event (and puts it in the outbox of a room
-- with webhooks) and returns it when asked to. The wire format is
-- decodeEvent's (events.go); the join fast path above writes the same.
-- Operations that changed no session publish nothing (config and delete
-- events, and a draw's, and the one that sold the inventory out, always go
-- out). The head's optional 14th field holds the change's flags: p (a config
-- event of a room paused before it), s (this change sold the inventory
-- out) and d (it completed the draw); the fast paths never make them. A
-- config event's head has a 15th, the room's revision after it.
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
  if flags ~= '' or kind == 'config' then head[14] = flags end
  if kind == 'config' then head[15] = i2s(R.rev) end
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
