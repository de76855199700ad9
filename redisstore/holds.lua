-- ---------------------------------------------------------------- holds
-- Holding places and telling sessions they are near (internal/engine/holds.go,
-- the rules in holds.go of package waitroom).
--
-- A held session is one joined with a contact (JoinRequest.Contact) in a
-- room with hold_places: its hash holds ct, the contact. While it waits it
-- needs no presence (deadline in machinery.lua gives it none, and Away
-- leaves it alone). Its admission (activate, or a join into a free slot) makes it
-- invited instead of active: it sits in the active sorted set, so it holds
-- a slot and counts in na, reserves a unit like any admission, and is due
-- at its invitation (ad) plus the claim window (cw in the room hash, in ms:
-- RoomConfig.HeldWindow) with reason unclaimed. Claim makes it active.
--
-- Near: with notify_at (nat in the room hash) above 0, every waiting
-- session that stands at a position of at most nat at the end of an
-- operation and was never told is told, once in its life: a near change
-- (change with a position) after the operation's status changes, in line
-- order; its hash then holds nt = '1'. QueueAll marks the sessions it
-- sends back as told: they had their turn.
--
-- After every operation all of positions 1..nat are told, so an operation
-- only has to look where untold sessions may have come in: a session that
-- entered the line or moved up in it (a join, a Front: NEAR.new), and, when
-- k waiting sessions left the line (NEAR.k), positions nat-k+1..nat, where
-- the sessions behind moved up to; insertions only ever push sessions back.
-- A raised notify_at, and a draw (which adds every entrant at once), scan
-- all of 1..nat. A room without notify_at pays nothing. An operation that
-- goes on in another run (a batch of expiries ran out: 'more'; a draw is
-- due: 'draw'; or the caller settles again after: NEAR.later) leaves its
-- telling to the run that ends it, by setting nsc = '1' in the room hash:
-- the next operation in the general path scans all of 1..nat (the fast
-- paths (fast.lua) leave a room with nsc to it).

-- holdTail ends array (or, with line, event line) v of session s with its
-- contact and, for an invited session, when its claim window ends; pos
-- (only in a line) makes it a near change at that position. v is padded to
-- 21 (placeTail's form: the stock fields nil without an inventory, or ''
-- in a line), then contact, claim by (unix ms, 0 for none) and the
-- position. A session without a contact, outside a near change, is left
-- as it is.
function holdTail(v, s, line, pos)
  local ct = s.ct or ''
  if ct == '' and pos == nil then return v end
  local z, none = 0, false
  if line then z, none = '0', '' end
  for i = #v + 1, 15 do v[i] = z end
  if #v < 17 then v[16], v[17] = none, none end
  for i = #v + 1, 20 do v[i] = z end
  if #v < 21 then v[21] = '' end
  local by = 0
  if s.st == 'invited' then by = s.ad + R.cw end
  if line then
    v[22], v[23] = ct, i2s(by)
    if pos then v[24] = i2s(pos) end
  else
    v[22], v[23] = ct, by
  end
  return v
end

-- needsNoPresence reports whether live session s keeps its place without
-- presence: held and waiting, or invited. Away leaves such a session as
-- it is.
local function needsNoPresence(s)
  return s.st == 'invited' or (s.st == 'waiting' and s.ct ~= '')
end

-- tellNear tells the sessions that reached notify_at (see above). final is
-- false when the operation goes on in another run: what it did to the line
-- is then left to that run, through nsc.
function tellNear(final)
  local n = R.nat
  if OP == 'drawstep' then return end -- the draw's operation tells, after it
  if n == 0 or kind == 'deleted' then
    -- Nothing to tell; a raised notify_at scans anyway.
    if R.nsc and kind ~= 'deleted' then
      redis.call('HDEL', K_ROOM, 'nsc')
      R.nsc = false
    end
    return
  end
  local pending = NEAR.all or NEAR.k > 0 or #NEAR.new > 0
  if not final then
    if pending and not R.nsc then
      redis.call('HSET', K_ROOM, 'nsc', '1')
      R.nsc = true
    end
    return
  end
  if R.nsc then
    redis.call('HDEL', K_ROOM, 'nsc')
    R.nsc = false
  end
  if not pending or nW == 0 then return end
  -- The candidates and their positions, each once.
  local found, seen = {}, {}
  if NEAR.all or NEAR.k > 0 then
    local from = 1
    if not NEAR.all then from = math.max(1, n - NEAR.k + 1) end
    for i, ts in ipairs(redis.call('ZRANGE', K_WAIT, from - 1, n - 1)) do
      local t = tonumber(ts)
      seen[t] = true
      found[#found + 1] = { t = t, pos = from + i - 1 }
    end
  end
  for _, t in ipairs(NEAR.new) do
    local s = cache[t]
    if not seen[t] and s and s.st == 'waiting' and not s.nt then
      seen[t] = true
      local r = redis.call('ZRANK', K_WAIT, i2s(t))
      if r and r < n then found[#found + 1] = { t = t, pos = r + 1 } end
    end
  end
  table.sort(found, function(a, b) return a.pos < b.pos end)
  for _, x in ipairs(found) do
    local s = load(x.t)
    if not s.nt then
      s.nt = true
      redis.call('HSET', skey(s.t), 'nt', '1')
      change(s, 'waiting', x.pos)
    end
  end
end

-- heldRefused reports whether a join with contact must be refused
-- (NotHeld): the room does not hold places, or its pre-queue is open
-- (entrants have no place to hold before the draw). The reply's flag says
-- which.
local function heldRefused(contact)
  if contact == '' then return nil end
  if not R.hp then return 0 end
  if R.sch == 'pre' then return 1 end
  return nil
end

-- claimOp is Claim of what an id names (p a live entrant, s a session;
-- neither: unknown) on a settled room: an invited session becomes active,
-- admitted (and last active) now, its away period over; an active one is
-- answered as it is; anything else is not invited (the reply holds it, for
-- the error's Session).
local function claimOp(p, s)
  if p then return reply('not_invited', entrantView(p)) end
  if s == nil then return reply('session_not_found') end
  if s.st == 'active' then return reply('ok', view(s, true)) end
  if s.st ~= 'invited' then return reply('not_invited', view(s, true)) end
  s.st, s.ad, s.tc, s.aw, s.sch = 'active', now, now, 0, 0
  redis.call('ZREM', K_DUE, i2s(s.t))
  local d = deadline(s)
  if d ~= 0 then due(s, d) end
  redis.call('HSET', skey(s.t), 'st', 'active', 'ad', i2s(now), 'tc', i2s(now), 'aw', '0', 'sch', i2s(s.sch))
  change(s, 'invited')
  settle()
  return reply('ok', view(s, true))
end
