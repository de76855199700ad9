-- The room script's fast paths (room.lua explains the split).

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
