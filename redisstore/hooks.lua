-- redisstore: a room's webhooks and the deliveries of their events
-- (hooks.go). The room script (room.lua) appends every event of a room with
-- webhooks to its outbox ob in the same run as the change; ClaimDeliveries
-- decodes the entries in Go (waitroom.HookMessages) and hands the messages
-- to this script, which takes the entries out of the outbox and makes the
-- deliveries in one run, so an entry becomes deliveries exactly once however
-- many processes claim at a time.
--
-- KEYS (the room's hash tag, so one Cluster slot):
--   1 room  HASH   the room (room.lua): hk = '1' while it has a webhook
--   2 wh    HASH   webhook name -> JSON of waitroom.Webhook
--   3 ob    STREAM the outbox: field e holds an event message (events.go)
--   4 hd    HASH   '<order> <webhook>' -> delivery record: attempts \t next
--                  (ms, 0 for none) \t dead at (ms, 0 while pending) \t
--                  replayed (ms of the last replay, 0 for none) \t message
--                  JSON \t last error (last: it may hold anything)
--   5 hx    ZSET   dead letters: '<dead at, 15 digits>:<order> <webhook>',
--                  all scored 0, so lexical order is oldest first
--   6 hs    HASH   per webhook, fields '<webhook>\t<f>': s the outbox id
--                  before it was made (older entries are not its), p and d
--                  its pending and dead deliveries, ok and fail its delivered
--                  and failed tries, okat, err and errat the last delivery
--                  and the last error with its time
-- and, derived from KEYS[1] as room.lua derives a room's other keys,
--   hq:<webhook> ZSET its pending deliveries: member <order>, scored by
--                  when due (unix ms), or by when their claim lapses; each
--                  webhook has its own, so claims per webhook never look past
--                  another's backlog
-- <order> is the message's place among the room's messages, fixed width so
-- it sorts as it counts (hooks.go's msgOrder): the outbox entry's id, then
-- the message's index in the entry.
--
-- ARGV 1 is the operation; the rest is the operation's.

local K_ROOM, K_WH, K_OB, K_HD, K_HX, K_HS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local PFX = string.sub(K_ROOM, 1, -5) -- KEYS[1] is <prefix>room
local OP = ARGV[1]

local function pending(hook) return PFX .. 'hq:' .. hook end

-- batch runs redis command cmd on key with the arguments of list, 1000 at
-- a time (unpack's limit; an even number, so pairs stay together).
local function batch(cmd, key, list)
  for i = 1, #list, 1000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
  end
end

-- split returns the order and the webhook of a delivery's name.
local function split(m) return string.match(m, '^([^ ]*) (.*)$') end

-- REC matches a delivery record (hd): attempts, next, dead at, replayed,
-- message and last error.
local REC = '^(%d+)\t(%-?%d+)\t(%-?%d+)\t(%-?%d+)\t([^\t]*)\t(.*)$'

local function record(attempts, nxt, dead, replayed, msg, err)
  return attempts .. '\t' .. nxt .. '\t' .. dead .. '\t' .. replayed .. '\t' .. msg .. '\t' .. err
end

local function deadName(at, m) return string.format('%015d', math.max(0, tonumber(at))) .. ':' .. m end

-- newer reports whether outbox id a comes after id b.
local function newer(a, b)
  local am, as = string.match(a, '^(%d+)%-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)%-(%d+)$')
  if tonumber(am) ~= tonumber(bm) then return tonumber(am) > tonumber(bm) end
  return tonumber(as) > tonumber(bs)
end

if OP == 'put' then
  -- ARGV 2 name, 3 its JSON as read before ('' for none: the caller kept
  -- created_at from it), 4 the new JSON, 5 the most webhooks a room has.
  -- Reply: { 'ok', 1 if created }, or room_not_found, too_many, or retry
  -- when the webhook changed since it was read.
  local name = ARGV[2]
  if redis.call('EXISTS', K_ROOM) == 0 then return { 'room_not_found' } end
  local cur = redis.call('HGET', K_WH, name)
  if (cur or '') ~= ARGV[3] then return { 'retry' } end
  local created = 0
  if not cur then
    if redis.call('HLEN', K_WH) >= tonumber(ARGV[5]) then return { 'too_many' } end
    -- Events already in the outbox came before this webhook: not its.
    local top, since = redis.call('XREVRANGE', K_OB, '+', '-', 'COUNT', 1), '0-0'
    if #top > 0 then since = top[1][1] end
    redis.call('HSET', K_HS, name .. '\ts', since)
    created = 1
  end
  redis.call('HSET', K_WH, name, ARGV[4])
  redis.call('HSET', K_ROOM, 'hk', '1')
  return { 'ok', created }
end

if OP == 'del' then
  -- ARGV 2 name. Reply: { 'ok', webhooks left } or { 'not_found' }.
  local name = ARGV[2]
  if redis.call('HDEL', K_WH, name) == 0 then return { 'not_found' } end
  local f = {}
  for _, k in ipairs({ 's', 'p', 'd', 'ok', 'fail', 'okat', 'err', 'errat' }) do f[#f + 1] = name .. '\t' .. k end
  redis.call('HDEL', K_HS, unpack(f))
  -- Its deliveries, pending and dead: O(its pending and the room's dead
  -- letters), rare.
  local recs, dead = {}, {}
  for _, o in ipairs(redis.call('ZRANGE', pending(name), 0, -1)) do recs[#recs + 1] = o .. ' ' .. name end
  redis.call('DEL', pending(name))
  local suffix = ' ' .. name
  for _, m in ipairs(redis.call('ZRANGE', K_HX, 0, -1)) do
    if string.sub(m, -#suffix) == suffix then
      dead[#dead + 1] = m
      recs[#recs + 1] = string.match(m, ':(.*)$')
    end
  end
  batch('ZREM', K_HX, dead)
  batch('HDEL', K_HD, recs)
  local left = redis.call('HLEN', K_WH)
  if left == 0 then
    -- No webhook wants what the outbox holds.
    redis.call('HDEL', K_ROOM, 'hk')
    redis.call('XTRIM', K_OB, 'MAXLEN', '0')
  end
  return { 'ok', left }
end

if OP == 'claim' then
  -- ARGV 2 now, 3 claimed until, 4 how many at most, 5 the webhook ('' for
  -- any), then outbox entries to take in first: id, time (ms), message
  -- count k, then k triples of type, order, message JSON. An entry no
  -- longer in the outbox was taken by another run: skipped. Each message
  -- goes to every webhook that wants its type and was made before the
  -- entry. Reply: name, record pairs of the deliveries claimed, due first,
  -- then in message order.
  local hooks
  local i = 6
  while i <= #ARGV do
    local id, at, k = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
    i = i + 3
    if redis.call('XDEL', K_OB, id) == 1 and k > 0 then
      if hooks == nil then
        hooks = {}
        local all = redis.call('HGETALL', K_WH)
        for j = 1, #all, 2 do
          local ok, w = pcall(cjson.decode, all[j + 1])
          local ev = {}
          if ok and type(w) == 'table' and type(w.events) == 'table' then
            for _, e in ipairs(w.events) do ev[e] = true end
          end
          hooks[#hooks + 1] = { name = all[j], ev = ev, since = redis.call('HGET', K_HS, all[j] .. '\ts') or '0-0' }
        end
      end
      local recs = {}
      for _, h in ipairs(hooks) do
        if newer(id, h.since) then
          local z = {}
          for j = i, i + 3 * (k - 1), 3 do
            if h.ev[ARGV[j]] or h.ev['*'] then
              z[#z + 1] = at; z[#z + 1] = ARGV[j + 1]
              recs[#recs + 1] = ARGV[j + 1] .. ' ' .. h.name
              recs[#recs + 1] = record(0, at, 0, 0, ARGV[j + 2], '')
            end
          end
          if #z > 0 then
            batch('ZADD', pending(h.name), z)
            redis.call('HINCRBY', K_HS, h.name .. '\tp', #z / 2)
          end
        end
      end
      batch('HSET', K_HD, recs)
    end
    i = i + 3 * k
  end
  local n = tonumber(ARGV[4])
  if n < 1 then return {} end
  local names = { ARGV[5] }
  if ARGV[5] == '' then names = redis.call('HKEYS', K_WH) end
  -- The due of each webhook, merged: the first n by (due, order, webhook).
  local due = {}
  for _, h in ipairs(names) do
    local v = redis.call('ZRANGEBYSCORE', pending(h), '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0, n)
    for j = 1, #v, 2 do due[#due + 1] = { o = v[j], at = tonumber(v[j + 1]), h = h } end
  end
  if #names > 1 then
    table.sort(due, function(a, b)
      if a.at ~= b.at then return a.at < b.at end
      if a.o ~= b.o then return a.o < b.o end
      return a.h < b.h
    end)
  end
  local out = {}
  for j = 1, math.min(n, #due) do
    local d = due[j]
    redis.call('ZADD', pending(d.h), ARGV[3], d.o)
    local m = d.o .. ' ' .. d.h
    out[#out + 1] = m
    out[#out + 1] = redis.call('HGET', K_HD, m) or ''
  end
  return out
end

if OP == 'settle' then
  -- ARGV 2 now, then quadruples: name ('<order> <webhook>'), outcome (ok,
  -- fail or dead), next (ms, 0 for none: due now), error. Deliveries no
  -- longer pending are left alone.
  local now = ARGV[2]
  for i = 3, #ARGV, 4 do
    local m, how, nxt, err = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
    local o, h = split(m)
    local a, _, dead, replayed, msg = string.match(redis.call('HGET', K_HD, m) or '', REC)
    if o and a and dead == '0' and redis.call('ZSCORE', pending(h), o) then
      if how == 'ok' then
        redis.call('ZREM', pending(h), o)
        redis.call('HDEL', K_HD, m)
        redis.call('HINCRBY', K_HS, h .. '\tp', -1)
        redis.call('HINCRBY', K_HS, h .. '\tok', 1)
        redis.call('HSET', K_HS, h .. '\tokat', now)
      else
        a = tonumber(a) + 1
        redis.call('HINCRBY', K_HS, h .. '\tfail', 1)
        redis.call('HSET', K_HS, h .. '\terr', err, h .. '\terrat', now)
        if how == 'dead' then
          redis.call('ZREM', pending(h), o)
          redis.call('ZADD', K_HX, 0, deadName(now, m))
          redis.call('HSET', K_HD, m, record(a, 0, now, replayed, msg, err))
          redis.call('HINCRBY', K_HS, h .. '\tp', -1)
          redis.call('HINCRBY', K_HS, h .. '\td', 1)
        else
          local score = nxt
          if nxt == '0' then score = now end
          redis.call('ZADD', pending(h), score, o)
          redis.call('HSET', K_HD, m, record(a, nxt, 0, replayed, msg, err))
        end
      end
    end
  end
  return 'OK'
end

if OP == 'dead' then
  -- ARGV 2 cursor (the last dead letter's hx member, '' for the start), 3
  -- page size. Reply: { next cursor ('' at the end), member, record, ... },
  -- newest first.
  local hi = '+'
  if ARGV[2] ~= '' then hi = '(' .. ARGV[2] end
  local size = tonumber(ARGV[3])
  local ms = redis.call('ZREVRANGEBYLEX', K_HX, hi, '-', 'LIMIT', 0, size + 1)
  local out = { '' }
  if #ms > size then
    ms[#ms] = nil
    out[1] = ms[#ms]
  end
  for _, dm in ipairs(ms) do
    local m = string.match(dm, ':(.*)$')
    out[#out + 1] = m
    out[#out + 1] = redis.call('HGET', K_HD, m) or ''
  end
  return out
end

if OP == 'replay' then
  -- ARGV 2 now, 3 'all' or 'ids', 4.. orders of the messages (ids). Each
  -- dead letter replayed is pending again, due now, attempts afresh,
  -- replayed now.
  -- Reply: how many.
  local now = ARGV[2]
  local dead = {}
  if ARGV[3] == 'all' then
    dead = redis.call('ZRANGE', K_HX, 0, -1)
  else
    local names = redis.call('HKEYS', K_WH)
    for i = 4, #ARGV do
      for _, name in ipairs(names) do
        local m = ARGV[i] .. ' ' .. name
        local _, _, at = string.match(redis.call('HGET', K_HD, m) or '', REC)
        if at and at ~= '0' then dead[#dead + 1] = deadName(at, m) end
      end
    end
  end
  local n, recs, counts = 0, {}, {}
  for _, dm in ipairs(dead) do
    local m = string.match(dm, ':(.*)$')
    local _, _, _, _, msg = string.match(redis.call('HGET', K_HD, m) or '', REC)
    if msg and redis.call('ZREM', K_HX, dm) == 1 then
      local o, h = split(m)
      redis.call('ZADD', pending(h), now, o)
      recs[#recs + 1] = m; recs[#recs + 1] = record(0, now, 0, now, msg, '')
      counts[h] = (counts[h] or 0) + 1
      n = n + 1
    end
  end
  batch('HSET', K_HD, recs)
  for h, c in pairs(counts) do
    redis.call('HINCRBY', K_HS, h .. '\tp', c)
    redis.call('HINCRBY', K_HS, h .. '\td', -c)
  end
  return n
end

return redis.error_reply('redisstore: unknown webhook operation ' .. tostring(OP))
