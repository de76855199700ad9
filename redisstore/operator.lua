-- ---------------------------------------------------------------- operator
-- An operator's moves (internal/engine/operator.go): QueueAll sends every active
-- session back to the front of the line and pauses the room, Front moves one
-- waiting session to the front, Extend gives an active session more time,
-- Lookup finds a session by ticket or key.
--
-- The line is ordered by place: a moved session's place is negative, taken
-- from the room's counter front (room hash field 'front': starts at 0, only
-- decreases, never reset while the room exists), an unmoved one's is its
-- ticket, or in a room with tiers the positive place its tier gave
-- (tiers.lua). The wait sorted set is scored by place, so ZRANGE is the line and
-- ZRANK the position, and admission takes the lowest score. A session hash
-- holds pl (its place: negative once moved; positive in a room with tiers;
-- else absent or 0; an admitted session keeps it, so a moved one's
-- admission is no inversion: count in stock.lua; a moved session keeps its
-- tier), and ex and exn
-- (how long an operator extended it: whole ms and the ns past them; the
-- max-session deadline is admitted + max_session + ex, rounded up by exn:
-- deadline in machinery.lua).

-- placeTail ends array (or, with line, event line) v of live session s
-- (or entrant) with its place and extension when it has either, or a tier:
-- v is padded to 17 (without an inventory the stock fields are nil, or ''
-- in a line), then place, extension in ms, ns past them, and in a room
-- with tiers the tier's name (tiers.lua).
function placeTail(v, s, line)
  local pl, ex, exn, name = s.pl or 0, s.ex or 0, s.exn or 0, tierName(s.tr)
  if pl == 0 and ex == 0 and exn == 0 and name == '' then return v end
  local z, none = 0, false
  if line then z, none = '0', '' end
  for i = #v + 1, 15 do v[i] = z end
  if #v < 17 then v[16], v[17] = none, none end
  if line then
    v[18], v[19], v[20] = i2s(pl), i2s(ex), i2s(exn)
  else
    v[18], v[19], v[20] = pl, ex, exn
  end
  if name ~= '' then v[21] = name end
  return v
end

local function frontCounter() return tonumber(redis.call('HGET', K_ROOM, 'front') or '0') end

-- queueAll is QueueAll on a settled room: the room is paused (its stored
-- configuration too, as PutRoom stores it), and the active and invited
-- sessions, by ticket, wait again at places front-k .. front-1, their units
-- given back, present as of now, marked as told they are near (they had
-- their turn: holds.lua); a held one keeps its contact. One config event
-- carries the pause and their changes.
-- Reply: info, the moved sessions in line order, and 1 when a sold-out line
-- is still being ended (the caller settles and reads the room again).
local function queueAll()
  R.paused = true
  -- json.Marshal writes paused (never omitted) before any string a user
  -- gave, and a JSON string cannot hold an unescaped quote: the first
  -- match is the field.
  R.cfg = (string.gsub(R.cfg, '"paused":false', '"paused":true', 1))
  redis.call('HSET', K_ROOM, 'paused', '1', 'cfg', R.cfg)
  bumpRev()
  kind = 'config'
  local ts = redis.call('ZRANGE', K_ACTIVE, 0, -1)
  local k, front = #ts, frontCounter()
  local moved = {}
  for i, x in ipairs(ts) do
    local s = load(tonumber(x))
    local from, pl = s.st, front - k + i - 1
    redis.call('ZREM', K_ACTIVE, x)
    nA = nA - 1
    if s.u then release(s) end
    redis.call('ZADD', K_WAIT, i2s(pl), x)
    nW = nW + 1
    redis.call('ZREM', K_DUE, x)
    s.st, s.pl, s.ad, s.tc, s.sch, s.nt = 'waiting', pl, 0, now, 0, true
    redis.call('HSET', skey(s.t), 'st', 'waiting', 'pl', i2s(pl), 'ad', '0', 'tc', i2s(now), 'sch', '0', 'u', '0',
      'nt', '1')
    schedule(s)
    change(s, from)
    moved[i] = s
  end
  if k > 0 then redis.call('HSET', K_ROOM, 'front', i2s(front - k)) end
  local _, _, more = settle()
  cfgjson = cfgOut()
  local out = {}
  for i, s in ipairs(moved) do out[i] = view(s, true) end
  local m = 0
  if more then
    m = 1
    NEAR.later = true -- the caller settles: that run tells who is near
  end
  return reply('ok', info(), out, m)
end

-- moveOp is Front or Extend of the session an id names (p a live entrant,
-- s a session; neither: unknown) on a settled room. Front: ARGV 14 unused;
-- Extend: ARGV 14 by in ms, 15 the ns past them.
local function moveOp(p, s)
  if p == nil and s == nil then return reply('session_not_found') end
  local st = 'pre'
  if s then st = s.st end
  if OP == 'front' then
    if p or st ~= 'waiting' then return reply('not_waiting', st) end
    local pl = frontCounter() - 1
    redis.call('HSET', K_ROOM, 'front', i2s(pl))
    s.pl, s.tc = pl, now
    redis.call('ZADD', K_WAIT, i2s(pl), i2s(s.t))
    redis.call('HSET', skey(s.t), 'pl', i2s(pl), 'tc', i2s(now))
    schedule(s)
    change(s, 'waiting')
    NEAR.new[#NEAR.new + 1] = s.t -- it may now stand within notify_at
  else
    if p or st ~= 'active' then return reply('not_active', st) end
    local ex, exn = (s.ex or 0) + tonumber(ARGV[14]), (s.exn or 0) + tonumber(ARGV[15])
    if exn >= 1000000 then ex, exn = ex + 1, exn - 1000000 end
    -- The idle timer restarts and an away period ends, as with Heartbeat;
    -- the deadline moves later, so it is planned afresh.
    s.ex, s.exn, s.tc, s.aw, s.sch = ex, exn, now, 0, 0
    redis.call('ZREM', K_DUE, i2s(s.t))
    local d = deadline(s)
    if d ~= 0 then due(s, d) end
    redis.call('HSET', skey(s.t), 'ex', i2s(ex), 'exn', i2s(exn), 'tc', i2s(now), 'aw', '0', 'sch', i2s(s.sch))
    change(s, 'active')
  end
  settle()
  return reply('ok', view(s, true))
end

-- lookupOp is Lookup, a read: ARGV 11 ticket (> 0: that session of this
-- incarnation, live or ended while its hash is kept), else 12 key (its live
-- session or pre-queue entrant).
local function lookupOp()
  local t, key = tonumber(ARGV[11]), ARGV[12]
  if t > 0 then
    local s = nil
    if t > R.base then s = load(t) end
    if s == nil then return { 'session_not_found', '' } end
    return { 'ok', '', view(s, true) }
  end
  local lt = nil
  if key ~= '' then lt = redis.call('HGET', K_KEYS, key) end
  if not lt then return { 'session_not_found', '' } end
  if string.sub(lt, 1, 1) == 'e' then
    local p = entrant(tonumber(string.sub(lt, 2)))
    if p == nil then return { 'session_not_found', '' } end
    return { 'ok', '', entrantView(p) }
  end
  local s = load(tonumber(lt))
  if s == nil then return { 'session_not_found', '' } end
  return { 'ok', '', view(s, true) }
end
