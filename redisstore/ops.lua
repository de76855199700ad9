-- ---------------------------------------------------------------- create

local exists = loadRoom()

-- PutRoom's reply is { created, info, more (expiry is not done), draw (the
-- draw is due: the caller applies it and settles), seed and opening of a
-- schedule it set or moved ('' and 0 for none) }.
if OP == 'putroom' and not exists then
  -- ARGV 11.. mode cap rate idle maxs wt grace paused cfg tsig opens closes seed inventory,
  -- 25.. tier names, policy, steps (tiers.lua), 28.. hold_places ('1' or
  -- '0'), claim window (ms), notify_at (holds.lua)
  local base = tonumber(redis.call('GET', K_SEQ) or '0')
  local ebase = tonumber(redis.call('GET', K_ESEQ) or '0')
  local rate = tonumber(ARGV[13])
  local full = math.max(1, math.floor((rate + 59) / 60)) * 60000
  -- Whatever a deleted incarnation left of its draw goes.
  redis.call('UNLINK', K_PRE, K_E2T, K_DRAW, K_DLIST, K_DLEASE, K_HOLD, K_UC, K_UX)
  redis.call('HSET', K_ROOM, 'mode', ARGV[11], 'cap', ARGV[12], 'rate', ARGV[13], 'idle', ARGV[14],
    'maxs', ARGV[15], 'wt', ARGV[16], 'grace', ARGV[17], 'paused', ARGV[18], 'cfg', ARGV[19],
    'tsig', ARGV[20], 'now', i2s(ARGNOW), 'units', i2s(full), 'uat', i2s(ARGNOW), 'base', i2s(base),
    'nw', '0', 'na', '0', 'last', i2s(base), 'dmin', '0', 'closes', ARGV[22], 'npre', '0', 'ebase', i2s(ebase),
    'adm', '0', 'invs', '0', 'madm', '0', 'sold', '0', 'rsv', '0', 'hp', ARGV[28], 'cw', ARGV[29], 'nat', ARGV[30],
    'rev', i2s(tonumber(redis.call('GET', K_RV) or '0') + 1))
  if ARGV[24] ~= '' then redis.call('HSET', K_ROOM, 'stock', ARGV[24]) end
  loadRoom()
  R.pb = false -- a room made now was not paused before (emit's flags)
  setTiers(ARGV[25], ARGV[26], ARGV[27])
  now, kind, cfgjson = ARGNOW, 'config', cfgOut()
  local seed = applySchedule(tonumber(ARGV[21]), ARGV[23])
  local drawnow = 0
  if drawDue() then
    freeze()
    drawnow = 1
    NEAR.later = true
  end
  return reply('ok', 1, info(), 0, drawnow, seed, R.opens)
end

if not exists then return { 'room_not_found', '' } end

-- A draw being applied holds up every operation but its own steps.
if OP == 'drawstep' then return drawStep() end
-- A sold-out line not yet ended comes first, reads included: the room
-- settles at its clock, when it sold out (only the operation that sold it
-- out leaves one), so what was due by then ends first and the rest with
-- sold_out, a batch a run; then the operation runs again. So nothing
-- reports a waiting session of a room that sold out (stock.lua).
if R.sch ~= 'closing' and soldOutPending() then
  now = R.lastnow
  local n = settle()
  return reply('more', n)
end
if OP == 'drawinfo' then
  -- ARGV 11 '1' to wait for a draw being applied
  if R.sch == '' then return { 'not_scheduled', '' } end
  if R.sch == 'closing' and ARGV[11] == '1' then return { 'draw', '' } end
  return drawInfo()
end
if R.sch == 'closing' then return { 'draw', '' } end

-- ---------------------------------------------------------------- reads
-- Reads take no now and change nothing: the state as of the last operation.

if OP == 'room' then
  return { 'ok', '', info() }
end

if OP == 'sessions' then
  -- ARGV 11.. ticket, secret, entry number triples
  local out = { 'ok', '' }
  for i = 11, #ARGV, 3 do
    local p, s = lookup(tonumber(ARGV[i]), ARGV[i + 1], tonumber(ARGV[i + 2]))
    if p then
      out[#out + 1] = entrantView(p)
    elseif s then
      out[#out + 1] = view(s, true)
    else
      out[#out + 1] = 0
    end
  end
  return out
end

if OP == 'waiting' then
  -- ARGV 11 after (the wait score of the last session listed: its place or
  -- ticket; '' for the start), 12 page size. The reply's cursor is a
  -- string, '' at the end.
  local after, size = ARGV[11], tonumber(ARGV[12])
  local lo = '-inf'
  if after ~= '' then lo = '(' .. after end
  local ts = redis.call('ZRANGEBYSCORE', K_WAIT, lo, '+inf', 'LIMIT', 0, size)
  local out = {}
  local pos = 0
  if #ts > 0 and after ~= '' then pos = redis.call('ZCOUNT', K_WAIT, '-inf', after) end
  local s
  for i, t in ipairs(ts) do
    pos = pos + 1
    s = load(tonumber(t))
    local v = view(s, false)
    v[9] = pos
    out[i] = v
  end
  local nxt = ''
  if #out == size and pos < nW then
    nxt = i2s(s.t)
    if s.pl ~= 0 then nxt = i2s(s.pl) end
  end
  return { 'ok', '', nxt, out }
end

if OP == 'lookup' then return lookupOp() end

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
        out[#out + 1] = stockTail({ tonumber(f.t), f.sec, f.st, f.key or '', tonumber(f.j), tonumber(f.ad),
          tonumber(f.e), f.why, 0, nW, nA, R.cap, tonumber(f.en or '0') }, false)
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

-- The draw comes first, as memstore's settle holds it first, and before
-- the sweep lease: any process's sweep may start a due draw (the draw has
-- a lease of its own), so the draw never waits for the lease holder.
if drawDue() then
  freeze()
  return reply('draw')
end

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

local exp, admitted, more = settle()
if more then return reply('more', exp) end

if OP == 'sweep' then
  return reply('ok', exp, admitted, nextDue())
end

if OP == 'stock' then return stockOp() end
if OP == 'queueall' then return queueAll() end

if OP == 'putroom' or OP == 'updateroom' then
  -- updateroom (UpdateRoom): ARGV 31 the revision the room must have (0:
  -- any), 32 the call's nonce. A run go-redis sent again after its reply
  -- was lost finds its own nonce and answers as the first run did.
  if OP == 'updateroom' then
    local want = tonumber(ARGV[31])
    if want > 0 and want ~= R.rev then
      if redis.call('HGET', K_ROOM, 'upn') == ARGV[32] then return reply('ok', 0, info(), 0, 0, '', R.opens) end
      return reply('precondition_failed', want, R.rev)
    end
  end
  local opens = tonumber(ARGV[21])
  if R.sch == 'drawn' and opens ~= 0 and opens ~= R.opens then
    return reply('draw_done', tonumber(redis.call('HGET', K_DRAW, 'at') or '0'), R.opens)
  end
  local stock = tonumber(ARGV[24])
  if stock and R.stock and stock < sold + rsv then return reply('stock_conflict', 'below', sold, rsv, stock) end
  if tiersRefused(ARGV[25], ARGV[26]) then return reply('tiers_changed') end
  local tsig = R.tsig
  R.mode, R.cap, R.rate = ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13])
  R.idle, R.maxs, R.wt, R.grace = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[17])
  R.paused, R.cfg, R.tsig = ARGV[18] == '1', ARGV[19], ARGV[20]
  redis.call('HSET', K_ROOM, 'mode', ARGV[11], 'cap', ARGV[12], 'rate', ARGV[13], 'idle', ARGV[14],
    'maxs', ARGV[15], 'wt', ARGV[16], 'grace', ARGV[17], 'paused', ARGV[18], 'cfg', ARGV[19], 'tsig', ARGV[20])
  R.closes = tonumber(ARGV[22])
  redis.call('HSET', K_ROOM, 'closes', ARGV[22], 'hp', ARGV[28], 'cw', ARGV[29], 'nat', ARGV[30])
  R.hp, R.cw = ARGV[28] == '1', tonumber(ARGV[29])
  -- A raised notify_at tells the sessions it newly covers (holds.lua).
  if tonumber(ARGV[30]) > R.nat then NEAR.all = true end
  R.nat = tonumber(ARGV[30])
  bumpRev()
  if OP == 'updateroom' then redis.call('HSET', K_ROOM, 'upn', ARGV[32]) end
  setTiers(ARGV[25], ARGV[26], ARGV[27])
  units, uat = burst() * 60000, now
  local old = R.stock
  setStock(stock)
  restock(old)
  local seed = applySchedule(opens, ARGV[23])
  if tsig ~= R.tsig then reschedule() end
  local again, drawnow = false, 0
  if drawDue() then
    -- Clearing or moving opens_at closed the pre-queue: the caller applies
    -- the draw, then settles.
    freeze()
    drawnow = 1
  else
    local _
    _, _, again = settle()
  end
  kind, cfgjson = 'config', cfgOut()
  local m = 0
  if again then m = 1 end
  -- The caller completes the draw or the expiries, then settles: that run
  -- tells who is near.
  if again or drawnow == 1 then NEAR.later = true end
  return reply('ok', 0, info(), m, drawnow, seed, R.opens)
end

if OP == 'deleteroom' then
  -- ARGV 11 force ('1')
  local n = nW + nA
  if R.sch == 'pre' then n = n + npre end
  if n > 0 and ARGV[11] ~= '1' then return reply('room_not_empty', n) end
  kind = 'deleted'
  for _, key in ipairs({ K_ACTIVE, K_WAIT }) do
    for _, ts in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      finish(load(tonumber(ts)), 'room_deleted', false)
    end
  end
  if R.sch == 'pre' and npre > 0 then
    -- Entrants end in entry order, as memstore ends them.
    local all, ps = redis.call('HGETALL', K_PRE), {}
    for i = 1, #all, 2 do
      local sec, j, key = unpackEntrant(all[i + 1])
      ps[#ps + 1] = { n = tonumber(all[i]), sec = sec, j = j, key = key }
    end
    table.sort(ps, function(a, b) return a.n < b.n end)
    for _, p in ipairs(ps) do endEntrant(p, 'room_deleted', false) end
  end
  local ev = reply('ok')
  redis.call('SET', K_RV, i2s(R.rev))
  -- The webhooks and their deliveries go too (room.lua's hk goes with the
  -- room hash). The outbox is emptied, not deleted: its ids name webhook
  -- messages, and a stream that stays never gives an id twice.
  redis.call('XTRIM', K_OB, 'MAXLEN', '0')
  for _, h in ipairs(redis.call('HKEYS', PFX .. 'wh')) do redis.call('UNLINK', PFX .. 'hq:' .. h) end
  redis.call('UNLINK', K_ROOM, K_WAIT, K_ACTIVE, K_KEYS, K_DUE, K_HIST, K_LEASE, K_RECENT, K_RECENTQ,
    K_PRE, K_E2T, K_DRAW, K_DLIST, K_DLEASE, K_HOLD, K_UC, K_UX,
    PFX .. 'wh', PFX .. 'hd', PFX .. 'hx', PFX .. 'hs')
  return ev
end

if OP == 'join' then
  -- ARGV 11 key, 12 secret; for a join with a tier, token uses or a
  -- contact 13 the tier ('' for the lowest), 14 the contact ('' for none:
  -- holds.lua), 15.. the uses (tiers.lua)
  local key, sec, contact = ARGV[11], ARGV[12], ARGV[14] or ''
  if R.closes > 0 and now >= R.closes then return reply('room_closed', R.closes) end
  if soldOut() then return reply('sold_out', R.stock) end
  local rt = redis.call('HGET', K_RECENT, sec)
  if rt then
    -- This join ran already (its reply was lost): answer as then, as the
    -- session is now. An entrant is remembered as e<entry>.
    local p0, s0
    if string.sub(rt, 1, 1) == 'e' then
      p0, s0 = lookup(0, sec, tonumber(string.sub(rt, 2)))
    else
      s0 = load(tonumber(rt))
    end
    if p0 then return reply('ok', entrantView(p0)) end
    if s0 and s0.sec == sec then
      settle()
      return reply('ok', view(s0, true))
    end
  end
  -- The key's live session, an entrant (p) or a ticketed one (ks).
  local p, ks = nil, nil
  if key ~= '' then
    local lt = redis.call('HGET', K_KEYS, key)
    if lt and string.sub(lt, 1, 1) == 'e' then
      p = entrant(tonumber(string.sub(lt, 2)))
    elseif lt then
      ks = load(tonumber(lt))
    end
  end
  -- This very join, run again by a retry the recent list forgot: its own
  -- session (its secret was made for this call), whatever its tokens say.
  if p and p.sec == sec then return reply('ok', entrantView(p)) end
  if ks and ks.sec == sec then
    settle()
    return reply('ok', view(ks, true))
  end
  -- A spent token is refused before its key counts: already_joined carries
  -- the key's session, which a forwarded invite link whose uses are gone
  -- must not reach.
  local used = usedUp(15)
  if used then return reply('token_used', used) end
  if p then return reply('already_joined', entrantView(p)) end
  if ks then return reply('already_joined', view(ks, true)) end
  local refused = heldRefused(contact)
  if refused then return reply('not_held', refused) end
  local tr = joinTier(ARGV[13] or '')
  if tr == nil then return reply('no_tier') end
  spend(15)
  if not tiered() then tr = nil end
  if R.sch == 'pre' then
    return reply('ok', entrantView(enterNow(key, sec, tr)))
  end
  local t = redis.call('INCR', K_SEQ)
  last = t
  local pl = 0
  if tr then pl = placeFor(tr, t) end
  local s = { t = t, sec = sec, key = key, j = now, ad = 0, tc = now, aw = 0, sch = 0, why = '', e = 0, en = 0,
    u = false, pl = pl, tr = tr, ct = contact, nt = false }
  local ts = i2s(t)
  if nW == 0 and canAdmit() and takeToken() then
    -- A held join is invited (holds.lua).
    s.st, s.ad = 'active', now
    if contact ~= '' then s.st = 'invited' end
    redis.call('ZADD', K_ACTIVE, ts, ts)
    nA = nA + 1
    reserve(s)
    count(t, pl, tr)
  else
    s.st = 'waiting'
    local score = ts
    if pl ~= 0 then score = i2s(pl) end
    redis.call('ZADD', K_WAIT, score, ts)
    nW = nW + 1
    NEAR.new[#NEAR.new + 1] = t
  end
  cache[t] = s
  local d = deadline(s)
  if d ~= 0 then due(s, d) end
  local f = { 'sec', sec, 'st', s.st, 'j', i2s(now), 'ad', i2s(s.ad), 'tc', i2s(now), 'aw', '0', 'sch', i2s(s.sch) }
  if s.u then f[#f + 1] = 'u'; f[#f + 1] = '1' end
  if contact ~= '' then f[#f + 1] = 'ct'; f[#f + 1] = contact end
  if tr then
    f[#f + 1] = 'pl'; f[#f + 1] = i2s(pl)
    f[#f + 1] = 'tr'; f[#f + 1] = i2s(tr)
  end
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
      count(s.t, s.pl, s.tr)
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

-- The remaining operations name a session: ARGV 11 ticket, 12 secret, 13
-- entry number (ticket and entry 0: the id was malformed). They settle
-- first even then, as memstore does.
local t, en = tonumber(ARGV[11]), tonumber(ARGV[13])
if t == 0 and en == 0 then return reply('invalid_session_id') end
local p, s = lookup(t, ARGV[12], en)
if OP == 'front' or OP == 'extend' then return moveOp(p, s) end
if OP == 'claim' then return claimOp(p, s) end
if p then
  -- A live entrant needs no presence before the draw, so Away changes
  -- nothing for it.
  if OP == 'leave' then return reply('ok', view(endEntrant(p, ARGV[14], true), false)) end
  if OP == 'away' then return reply('ok') end
  return reply('ok', entrantView(p))
end
if s == nil then return reply('session_not_found') end

if OP == 'session' or OP == 'heartbeat' then
  if not live(s) then return reply('ok', view(s, false)) end
  -- An invited session needs no presence: nothing changes.
  if s.st == 'invited' then return reply('ok', view(s, true)) end
  if (s.st == 'waiting' or OP == 'heartbeat') and s.tc ~= now or s.aw ~= 0 then
    if s.st == 'waiting' or OP == 'heartbeat' then s.tc = now end
    s.aw = 0
    redis.call('HSET', skey(s.t), 'tc', i2s(s.tc), 'aw', '0')
  end
  if s.sch == 0 then schedule(s) end
  return reply('ok', view(s, true))
end

if OP == 'away' then
  if live(s) and not needsNoPresence(s) then
    s.aw = now + R.grace
    if s.aw == 0 then s.aw = 1 end -- now is the epoch: keep away distinguishable from present
    redis.call('HSET', skey(s.t), 'aw', i2s(s.aw))
    schedule(s)
    settle()
  end
  return reply('ok')
end

if OP == 'leave' then
  -- ARGV 14 reason
  if live(s) then
    finish(s, ARGV[14], true)
    settle()
  end
  return reply('ok', view(s, false))
end

return redis.error_reply('redisstore: unknown operation ' .. OP)
