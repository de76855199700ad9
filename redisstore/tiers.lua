-- ---------------------------------------------------------------- tiers
-- Tiers and token uses (internal/engine/tiers.go, the place rules in tiers.go of
-- package waitroom).
--
-- A room with tiers orders its line by place: a session gets its place
-- from its tier when it gets its ticket (at its join, or at the draw, in
-- ticket order), keeps it as pl in its hash (so pl > 0 is a tiered place,
-- pl < 0 an operator's move: operator.lua) and waits scored by it, so the
-- line is still ZRANGE order, a position ZRANK + 1 and the next in line
-- the lowest score. Strict: place = index * 2^40 + ticket. Weighted: the
-- tag max(vt, fin[i]) + step[i], place = tag * 16 + index; places stay
-- below 2^53, so the doubles of Lua and of sorted-set scores hold them
-- exactly, and the script does no other arithmetic on them (Go computes
-- the steps: RoomConfig.TierSteps).
--
-- A session hash holds tr, its tier's index (only in a room with tiers);
-- a pre-queue record of such a room ends with \t<index> (unpackEntrant).
-- The room hash holds tn (the tier names, highest first, separated by
-- spaces; absent or '' without tiers), tp (the policy: '', 'strict' or
-- 'weighted'), tw (weighted: each tier's step), vt (weighted: the largest
-- tag admitted), fin (weighted: each tier's last tag; it starts again when
-- the tiers change) and tm (each tier's largest unmoved ticket admitted,
-- for the inversions, counted per tier), lists separated by spaces.
--
-- Token uses (Store.JoinWith), keys sharing the room's tag:
--   uc   HASH  kind:ID -> uses counted
--   ux   ZSET  kind:ID -> when the count ends (unix ms)
-- A count past its end is no count. The end is compared with the
-- operation's now (the caller's clock), never left to Redis' expiry; a
-- join that spends drops a few ended counts first, so the keys follow the
-- tokens in use. Both go with the room.
--
-- The fast paths (fast.lua) leave joins of a room with tiers, and joins
-- with a tier, token uses or a contact (more ARGV than key and secret), to
-- the general path.

local K_UC, K_UX = PFX .. 'uc', PFX .. 'ux'
-- USE_PRUNE bounds the ended counts a spending join drops.
local USE_PRUNE = 32
-- STRICT is 2^40: waitroom's strict shift.
local STRICT = 1099511627776

local function words(s)
  local out = {}
  for w in string.gmatch(s or '', '[^ ]+') do out[#out + 1] = w end
  return out
end

-- nums reads a list of numbers, padded with zeros to n.
local function nums(s, n)
  local out = {}
  for w in string.gmatch(s or '', '[^ ]+') do out[#out + 1] = tonumber(w) end
  for i = #out + 1, n do out[i] = 0 end
  return out
end

local function joinNums(list)
  local out = {}
  for i, x in ipairs(list) do out[i] = i2s(x) end
  return table.concat(out, ' ')
end

-- loadTiers sets T from the room hash's fields (loadRoom).
function loadTiers(tn, tp, tw, vt, fin, tm)
  local names = words(tn)
  local n = #names
  T = { tn = tn or '', names = names, pol = tp or '', steps = nums(tw, n), vt = tonumber(vt or '0'),
    fin = nums(fin, n), most = nums(tm, n), dirty = false }
end

-- saveTiers writes what moved of vt, fin and tm (save).
function saveTiers()
  if not T.dirty then return end
  redis.call('HSET', K_ROOM, 'vt', i2s(T.vt), 'fin', joinNums(T.fin), 'tm', joinNums(T.most))
end

-- tierName is the name of tier index tr; '' for none (a room without tiers).
function tierName(tr)
  if tr == nil then return '' end
  return T.names[tr + 1] or ''
end

-- placeFor gives ticket t of tier tr its place, moving the tier's last tag on.
function placeFor(tr, t)
  if T.pol ~= 'weighted' then return tr * STRICT + t end
  local i = tr + 1
  local tag = math.max(T.vt, T.fin[i]) + T.steps[i]
  T.fin[i], T.dirty = tag, true
  return tag * 16 + tr
end

-- letInTier counts the admission (or service) of unmoved ticket t of tier
-- tr at place pl: an inversion when its tier let a larger ticket in
-- before; under weighted fair queuing it moves the virtual time on.
function letInTier(t, tr, pl)
  local i = tr + 1
  local most = T.most[i] or 0
  if t < most then invs = invs + 1 end
  T.most[i] = math.max(most, t)
  if T.pol == 'weighted' then T.vt = math.max(T.vt, math.floor(pl / 16)) end
  T.dirty = true
end

-- liveTail ends an event line of n fields (13 or 15; the stock fields not
-- yet added) of a live session with no unit and no extension, at place pl
-- (0: none) in tier tr (nil: none): lineTail's form, or placeTail's in a
-- room with tiers.
function liveTail(n, pl, tr)
  local name = tierName(tr)
  if pl == 0 and name == '' then return lineTail(n) end
  local t = string.rep('\t0', 15 - n) .. '\t\t'
  if R.stock then t = lineTail(n) end
  return t .. '\t' .. i2s(pl) .. '\t0\t0\t' .. name
end

local function tiered() return #T.names > 0 end

-- joinTier is the index of the tier a join names ('' for the lowest), or
-- nil when the room has no such tier.
local function joinTier(name)
  local n = #T.names
  if name == '' then return math.max(n - 1, 0) end
  for i = 1, n do
    if T.names[i] == name then return i - 1 end
  end
  return nil
end

-- uses returns the uses counted of token id at now and when the count
-- ends (nil: no count).
local function uses(id)
  local ends = tonumber(redis.call('ZSCORE', K_UX, id) or '')
  if ends == nil or ends <= now then return 0, nil end
  return tonumber(redis.call('HGET', K_UC, id) or '0'), ends
end

-- usedUp returns the number (from 1) of the first token use in ARGV from i
-- on (kind:ID, most uses, end in ms, three by three) that has no use left
-- at now, or nil.
local function usedUp(i)
  local k = 0
  for j = i, #ARGV, 3 do
    k = k + 1
    if uses(ARGV[j]) + 1 > tonumber(ARGV[j + 1]) then return k end
  end
  return nil
end

-- spend counts one use of each token use in ARGV from i on; a count ends
-- with the latest of its uses.
local function spend(i)
  if i > #ARGV then return end
  local old = redis.call('ZRANGEBYSCORE', K_UX, '-inf', i2s(now), 'LIMIT', 0, USE_PRUNE)
  if #old > 0 then
    redis.call('ZREM', K_UX, unpack(old))
    redis.call('HDEL', K_UC, unpack(old))
  end
  for j = i, #ARGV, 3 do
    local id, upto = ARGV[j], tonumber(ARGV[j + 2])
    local n, ends = uses(id)
    redis.call('HSET', K_UC, id, i2s(n + 1))
    redis.call('ZADD', K_UX, i2s(math.max(ends or upto, upto)), id)
  end
end

-- tiersRefused reports whether a configuration with tier names tn and
-- policy tp changes the tiers (waitroom.TiersEqual) of a room with live
-- sessions, entrants of a pre-queue included.
local function tiersRefused(tn, tp)
  if tn == T.tn and tp == T.pol then return false end
  local n = nW + nA
  if R.sch == 'pre' then n = n + npre end
  return n > 0
end

-- setTiers gives the room tier names tn, policy tp and steps tw; when the
-- tiers change (only an empty room's may), every tier's last tag starts
-- again.
local function setTiers(tn, tp, tw)
  local changed = tn ~= T.tn or tp ~= T.pol
  local names = words(tn)
  T.tn, T.names, T.pol, T.steps = tn, names, tp, nums(tw, #names)
  redis.call('HSET', K_ROOM, 'tn', tn, 'tp', tp, 'tw', tw)
  if changed then
    T.fin = nums('', #names)
    for i = #T.most + 1, #names do T.most[i] = 0 end
    T.dirty = true
  end
end
