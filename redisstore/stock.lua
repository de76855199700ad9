-- ---------------------------------------------------------------- stock
-- A room's inventory and its fairness counts (internal/engine/stock.go
-- and admission.go's count): every automatic admission reserves a unit for
-- the admitted session while one remains (canAdmit stops admission when
-- none does), a session that ends unsold gives its unit back, Stock sells
-- or releases units, and once everything is sold the line and the
-- pre-queue end with sold_out and joins are refused.
--
-- Keys (sharing the room's tag):
--   hold   ZSET   tickets of the active and invited sessions (holds.lua)
--                holding a reserved unit,
--                scored by ticket: Stock takes the units of the smallest
--                tickets first, in O(log n + k)
-- The room hash holds stock (the inventory; absent without one), sold, rsv
-- (reserved: ZCARD hold, mirrored), adm, invs and madm (admissions,
-- inversions and the largest ticket admitted), and, while a sold-out
-- pre-queue is being ended in batches, socur (the last entry number looked
-- at). A
-- session hash holds u = '1' while its session holds a unit. The
-- configuration blob (cfg) never holds the inventory: cfgOut adds it, so a
-- Stock set changes one field and not the JSON.

-- cfgOut is the room's configuration as JSON, with its inventory.
function cfgOut()
  if R.stock == nil then return R.cfg end
  return string.sub(R.cfg, 1, -2) .. ',"inventory":' .. i2s(R.stock) .. '}'
end

local function remaining() return R.stock - sold - rsv end

function stockTail(v, unit, line)
  if R.stock == nil then return v end
  local z, rem, u = 0, remaining(), 0
  if unit then u = 1 end
  if line then z, rem, u = '0', i2s(rem), i2s(u) end
  for i = #v + 1, 15 do v[i] = z end
  v[16], v[17] = rem, u
  return v
end

function lineTail(n)
  if R.stock == nil then return '' end
  return string.rep('\t0', 15 - n) .. '\t' .. i2s(remaining()) .. '\t0'
end

-- unitLine records, for the event, a unit taken from (or given to) an
-- active session outside a status change: 'u', ticket, 0 or 1.
local function unitLine(t, unit)
  if not EV then return end
  local u = '0'
  if unit then u = '1' end
  changes[#changes + 1] = 'u\t' .. i2s(t) .. '\t' .. u
end

-- reserve takes a unit for admitted session s if one remains; the caller
-- writes u to its hash.
function reserve(s)
  if R.stock == nil or remaining() <= 0 then return false end
  rsv = rsv + 1
  s.u = true
  redis.call('ZADD', K_HOLD, i2s(s.t), i2s(s.t))
  return true
end

-- release gives the unit of active session s, which is ending, back. Its
-- hash keeps u: an ended session's view never shows a unit.
function release(s)
  rsv = rsv - 1
  s.u = false
  redis.call('ZREM', K_HOLD, i2s(s.t))
end

-- count counts the admission (or service) of ticket t, and an inversion
-- when a larger ticket was let in before it. A session an operator moved
-- (place pl < 0) was put ahead on purpose: it counts as an admission only,
-- and does not raise the largest ticket let in. In a room with tiers (pl >
-- 0, tier tr) order is kept inside each tier (letInTier, tiers.lua).
function count(t, pl, tr)
  adm = adm + 1
  pl = pl or 0
  if pl < 0 then return end
  if pl > 0 then return letInTier(t, tr, pl) end
  if t < madm then invs = invs + 1 end
  if t > madm then madm = t end
end

local function soldOut() return R.stock ~= nil and sold >= R.stock end

-- soldOutPending reports whether a sold-out room still has a line or a
-- pre-queue to end.
local function soldOutPending()
  return soldOut() and (nW > 0 or (R.sch == 'pre' and npre > 0))
end

-- endEntrants ends up to left entrants of the pre-queue with sold_out, in
-- entry order, and returns how many it ended. A small pre-queue is read
-- whole; a large one from the cursor socur on, looking at a bounded number
-- of entry numbers per run.
local function endEntrants(left)
  if npre <= left then
    local all, ps = redis.call('HGETALL', K_PRE), {}
    for i = 1, #all, 2 do
      local sec, j, key = unpackEntrant(all[i + 1])
      ps[#ps + 1] = { n = tonumber(all[i]), sec = sec, j = j, key = key }
    end
    table.sort(ps, function(a, b) return a.n < b.n end)
    for _, p in ipairs(ps) do endEntrant(p, 'sold_out', true) end
    return #ps
  end
  local cur = tonumber(redis.call('HGET', K_ROOM, 'socur') or '') or R.ebase
  local top = tonumber(redis.call('GET', K_ESEQ) or '0')
  local n, budget = 0, math.max(10 * BATCH, 1000)
  while n < left and npre > 0 and cur < top and budget > 0 do
    local m = math.min(1000, top - cur, budget)
    local nums = {}
    for i = 1, m do nums[i] = i2s(cur + i) end
    local recs = redis.call('HMGET', K_PRE, unpack(nums))
    local i = 1
    while i <= m and n < left do
      if recs[i] then
        local sec, j, key = unpackEntrant(recs[i])
        endEntrant({ n = cur + i, sec = sec, j = j, key = key }, 'sold_out', true)
        n = n + 1
      end
      i = i + 1
    end
    cur, budget = cur + i - 1, budget - (i - 1)
  end
  redis.call('HSET', K_ROOM, 'socur', i2s(cur))
  return n
end

-- endSoldOut ends the line, then the pre-queue, of a room whose inventory
-- is all sold, at most BATCH sessions a run; more says some are left, and
-- the caller runs the script again (or, after its work, settles) until
-- none is. Until they have, every operation on the room, reads too, first
-- settles at the room's clock, the time it sold out (ops.lua), and answers
-- 'more': so they all end then, after what was due by then, however many
-- runs that takes, and no answer shows a waiting session of a room that
-- sold out.
function endSoldOut()
  if not soldOutPending() then return 0, false end
  local n = 0
  if nW > 0 then
    for _, ts in ipairs(redis.call('ZRANGE', K_WAIT, 0, BATCH - 1)) do
      finish(load(tonumber(ts)), 'sold_out', true)
      n = n + 1
    end
  end
  if n < BATCH and R.sch == 'pre' and npre > 0 then n = n + endEntrants(BATCH - n) end
  local more = soldOutPending()
  if not more then redis.call('HDEL', K_ROOM, 'socur') end
  return n, more
end

-- setStock makes n (nil for none) the room's inventory.
local function setStock(n)
  R.stock = n
  if n then
    redis.call('HSET', K_ROOM, 'stock', i2s(n))
  else
    redis.call('HDEL', K_ROOM, 'stock')
  end
end

-- restock follows a change of inventory from old: a room that stops
-- counting forgets its counts and units; one that starts counts from zero,
-- its active sessions holding no units.
local function restock(old)
  if (old == nil) == (R.stock == nil) then return end
  sold, rsv = 0, 0
  for _, ts in ipairs(redis.call('ZRANGE', K_HOLD, 0, -1)) do
    local t = tonumber(ts)
    redis.call('HSET', skey(t), 'u', '0')
    if cache[t] then cache[t].u = false end
    unitLine(t, false)
  end
  redis.call('DEL', K_HOLD)
end

-- takeUnit sells or releases the unit of active session s.
local function takeUnit(s, op)
  s.u = false
  redis.call('HSET', skey(s.t), 'u', '0')
  redis.call('ZREM', K_HOLD, i2s(s.t))
  rsv = rsv - 1
  if op == 'sold' then sold = sold + 1 end
  unitLine(s.t, false)
end

-- stockOp is Stock on a settled room. ARGV 11 sold, released or set, 12 n,
-- 13 '1' when a session is named, then 14 its ticket, 15 secret and 16
-- entry number (ticket and entry 0: the id was malformed). Reply: info
-- and whether a sold-out line is still being ended (the caller settles
-- and reads the room again), or stock_conflict with what conflicts.
local function stockOp()
  if R.stock == nil then return reply('stock_conflict', 'none') end
  local op, n = ARGV[11], tonumber(ARGV[12])
  if op == 'set' then
    if n < sold + rsv then return reply('stock_conflict', 'below', sold, rsv, n) end
    setStock(n)
    bumpRev()
    kind = 'config'
  elseif ARGV[13] == '1' then
    local t, en = tonumber(ARGV[14]), tonumber(ARGV[16])
    if t == 0 and en == 0 then return reply('invalid_session_id') end
    local p, s = lookup(t, ARGV[15], en)
    if p or (s and s.st == 'waiting') then return reply('stock_conflict', 'waiting') end
    -- An invited session holds its unit like an active one (holds.lua).
    if s == nil or not holding(s) then return reply('stock_not_found') end
    if not s.u then return reply('stock_conflict', 'no_unit') end
    takeUnit(s, op)
  else
    if n > rsv then return reply('stock_conflict', 'reserved', rsv, n, op) end
    if n > 0 then
      for _, ts in ipairs(redis.call('ZRANGE', K_HOLD, 0, n - 1)) do takeUnit(load(tonumber(ts)), op) end
    end
  end
  local _, _, more = settle()
  if kind == 'config' then cfgjson = cfgOut() end
  local m = 0
  if more then
    m = 1
    NEAR.later = true -- the caller settles: that run tells who is near
  end
  return reply('ok', info(), m)
end
