/**
 * Lua for RedisTrustDebtStore. `APPLY_LUA` transliterates `advance`/`runAudits` from
 * src/engine/trust-debt/math.ts operation by operation (same order of IEEE-754 double operations,
 * and `detPow` instead of the C library's pow), so Redis and the in-memory store agree bit for bit. Numbers cross the boundary as
 * `%.17g` strings: Redis would truncate Lua numbers to integers in replies.
 *
 * One call applies a batch of events in order (the store batches concurrent applies: one script call
 * and one round trip for many events). The whole batch is atomic.
 * KEYS: per event 5: agent hash, dedup key, then the re-tiering queue (list), known-agents set and audit outbox
 * (list) of the agent's hash slot (spec-decisions D28: on Redis Cluster a call holds only events of one slot).
 * Since the batch's keys are passed per event, one call may hold events of many slots on a standalone Redis.
 * ARGV: 1 mode ('apply' | 'sweep'), 2 rate, 3 periodHours, 4 floor, 5 elevated, 6 restricted,
 *   7 retier, 8 auditEnabled (0/1), 9 auditThresholdMs, 10 auditCredit, 11 dedupTtlSeconds,
 *   then per event 8 values: atMs, delta, flags (1 resetsWindow + 2 deferAudits), agentsMember, cause, tenant, agentId, eventId.
 * Reply: per event { dup ('0'|'1'), payload } where payload = '|'-joined: the cause, then per change
 *   atMs, before, after, level, previousLevel; the last change is the event's own (absent in sweep mode).
 * Sweep mode also appends every granted credit to the audit outbox (JSON {tenant, agent, p = payload})
 * in the same atomic step, so a credit is published even when the sweeping process dies before it could
 * send it (RedisTrustDebtStore.drainAuditOutbox removes an entry only after it was published).
 */
export const APPLY_LUA = `
local mode = ARGV[1]
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local floor = tonumber(ARGV[4])
local thE = tonumber(ARGV[5])
local thR = tonumber(ARGV[6])
local thT = tonumber(ARGV[7])
local auditOn = ARGV[8] == '1'
local thr = tonumber(ARGV[9])
local credit = tonumber(ARGV[10])
local ttl = tonumber(ARGV[11])
local fmt = function(x) return string.format('%.17g', x) end
local rank = { normal = 0, elevated_monitoring = 1, restricted_mode = 2, re_tiering_review = 3 }

local function levelFor(d)
  if d >= thT then return 're_tiering_review' end
  if d >= thR then return 'restricted_mode' end
  if d >= thE then return 'elevated_monitoring' end
  return 'normal'
end

-- detLn / detExp / detPow: the same operations in the same order as math.ts (deterministic pow)
local LN2 = 0.6931471805599453
local SQRT2 = 1.4142135623730951
local SQRT1_2 = 0.7071067811865476
local function detLn(x)
  local m = x
  local k = 0
  while m >= SQRT2 do m = m / 2; k = k + 1 end
  while m < SQRT1_2 do m = m * 2; k = k - 1 end
  local s = (m - 1) / (m + 1)
  local s2 = s * s
  local sum = 0
  for i = 27, 1, -2 do sum = sum * s2 + 1 / i end
  return k * LN2 + 2 * s * sum
end
local function detExp(y)
  if y == 0 then return 1 end
  if y < -745.2 then return 0 end
  if y > 709.8 then return math.huge end
  local n = math.floor(y / LN2 + 0.5)
  local r = y - n * LN2
  local sum = 1
  for i = 18, 1, -1 do sum = 1 + (r * sum) / i end
  local p = sum
  if n < 0 then for j = 1, -n do p = p * 0.5 end else for j = 1, n do p = p * 2 end end
  return p
end
-- detExpm1: e^y - 1 by its series near 0, as math.ts
local function detExpm1(y)
  if y == 0 then return 0 end
  if y > -0.34657359027997264 and y < 0.34657359027997264 then
    local sum = 1
    for i = 18, 2, -1 do sum = 1 + (y * sum) / i end
    return y * sum
  end
  return detExp(y) - 1
end
-- detPow(rate, x) = detExp(x * detLn(rate)); ln(rate) is computed once per call (same value every time)
local lnRate = detLn(rate)
local function detPowRate(x)
  if x == 0 or rate == 1 then return 1 end
  return detExp(x * lnRate)
end

-- roundDebt (math.ts): debt on a 1e-12 grid; the same correctly rounded operations as V8
local function q(x) return math.floor(x * 1e12 + 0.5) / 1e12 end

local function decay(debt, from, to)
  local h = (to - from) / 3600000
  local dec = debt
  if h > 0 then dec = debt * detPowRate(h / period) end
  return math.max(floor, q(dec))
end

local function combine(dec, dl)
  return math.min(1, math.max(floor, q(dec + dl)))
end

-- An agent at the floor and level normal is exactly an unknown agent to every later step: decay clamps to
-- the floor from any time, a new hash starts at the floor, and the next charge resets the audit window in
-- both. So its hash expires after the dedup TTL (every dedup key of its events is gone by then, so no
-- redelivery can meet a missing hash); any other debt persists (docs/trust-debt.md, state that expires).
local function keep(kAgent, debt, lvl)
  if debt == floor and lvl == 'normal' then redis.call('EXPIRE', kAgent, ttl) else redis.call('PERSIST', kAgent) end
end

local function one(kAgent, kDedup, kRetier, kAgents, kOutbox, a)
  local atStr = ARGV[a]
  local at = tonumber(atStr)
  if mode == 'apply' then
    local prior = redis.call('GET', kDedup)
    if prior then return '1', prior end
  end
  local h = redis.call('HMGET', kAgent, 'd', 't', 'w', 'lv', 'la', 'n')
  local exists = h[1] ~= false
  -- an agent whose hash expired (at the floor, see keep() below) leaves the known-agents set
  if not exists and mode == 'sweep' then redis.call('SREM', kAgents, ARGV[a + 3]); return '0', '' end
  local debt, last, win, lv, la, n
  local lastStr, winStr
  if exists then
    debt = tonumber(h[1]); lastStr = h[2]; last = tonumber(lastStr); winStr = h[3]; win = tonumber(winStr)
    lv = h[4]; la = h[5]; n = tonumber(h[6])
    -- a NaN debt (left by the old severity-lookup bug) reads as the floor, as in math.ts (sane)
    if debt ~= debt then debt = floor end
  else
    debt = 0; last = at; lastStr = atStr; win = at; winStr = atStr; lv = 'normal'; la = false; n = 0
  end

  local out = { ARGV[a + 4] }
  local changed = false
  -- runAudits (math.ts): every window due by 'at' settled in one step, closed form + bisection
  local flags = tonumber(ARGV[a + 2])
  if auditOn and flags < 2 then
    local windows = math.floor((at - win) / thr)
    if windows >= 1 then
      local endW = win + windows * thr
      local b1 = decay(debt, last, win + thr)
      if b1 > floor then
        local u = (thr / 3600000 / period) * lnRate
        local A = detExp(u)
        local em1u = detExpm1(u)
        local function credited(i)
          local g
          if u == 0 then g = i else g = detExpm1(i * u) / em1u end
          return q(detExp(i * u) * b1 + credit * (A * g)) > floor
        end
        local lo = 0
        local hi = math.min(windows - 1, math.floor((b1 - floor) / -credit) + 1)
        if hi > 0 and credited(hi) then lo = hi
        else
          while hi - lo > 1 do
            local mid = math.floor((lo + hi) / 2)
            if credited(mid) then lo = mid else hi = mid end
          end
        end
        local pre = b1
        if lo > 0 then
          local g
          if u == 0 then g = lo else g = detExpm1(lo * u) / em1u end
          pre = detExp(lo * u) * b1 + credit * (A * g)
        end
        local due = win + (lo + 1) * thr
        local before = decay(debt, last, due)
        local after = combine(pre, credit)
        local lvl = levelFor(after)
        local dueStr = fmt(due)
        out[#out + 1] = dueStr; out[#out + 1] = fmt(before); out[#out + 1] = fmt(after)
        out[#out + 1] = lvl; out[#out + 1] = lv
        debt = after; if due > last then last = due; lastStr = dueStr end
        lv = lvl
      end
      win = endW; winStr = fmt(endW); la = winStr
      changed = true
    end
  end

  if mode == 'sweep' then
    if changed then
      redis.call('HSET', kAgent, 'd', fmt(debt), 't', lastStr, 'w', winStr, 'lv', lv, 'la', la)
      keep(kAgent, debt, lv)
    end
    local payload = table.concat(out, '|')
    if #out > 1 then
      redis.call('RPUSH', kOutbox, cjson.encode({ tenant = ARGV[a + 5], agent = ARGV[a + 6], p = payload }))
    end
    return '0', payload
  end

  local before = decay(debt, last, at)
  local after = combine(before, tonumber(ARGV[a + 1]))
  local lvl = levelFor(after)
  local afterStr = fmt(after)
  out[#out + 1] = atStr; out[#out + 1] = fmt(before); out[#out + 1] = afterStr
  out[#out + 1] = lvl; out[#out + 1] = lv
  if at > last then lastStr = atStr end
  if flags % 2 == 1 and at > win then winStr = atStr end
  if exists then
    if la then
      redis.call('HSET', kAgent, 'd', afterStr, 't', lastStr, 'w', winStr, 'lv', lvl, 'n', n + 1, 'la', la)
    else
      redis.call('HSET', kAgent, 'd', afterStr, 't', lastStr, 'w', winStr, 'lv', lvl, 'n', n + 1)
    end
  else
    redis.call('HSET', kAgent, 'd', afterStr, 't', lastStr, 'w', winStr, 'lv', lvl, 'n', 1, 'tenant', ARGV[a + 5], 'agent', ARGV[a + 6])
    redis.call('SADD', kAgents, ARGV[a + 3])
  end
  keep(kAgent, after, lvl)
  local payload = table.concat(out, '|')
  redis.call('SET', kDedup, payload, 'EX', ttl)
  if rank[lv] < 3 and rank[lvl] == 3 then
    redis.call('RPUSH', kRetier, cjson.encode({ tenant = ARGV[a + 5], agentId = ARGV[a + 6], eventId = ARGV[a + 7], atMs = atStr, debt = afterStr }))
  end
  return '0', payload
end

local reply = {}
local nEv = #KEYS / 5
for i = 0, nEv - 1 do
  local k = 5 * i
  local dup, payload = one(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], 12 + 8 * i)
  reply[#reply + 1] = dup
  reply[#reply + 1] = payload
end
return reply
`;

/**
 * Remediation request: create once (idempotent by request id) and index it as pending.
 * KEYS: 1 request hash, 2 pending zset. ARGV: requestId, tenant, agentId, reason, atMs.
 * Reply: flat HGETALL of the stored request, or an error reply 'CONFLICT' when the id belongs to another agent.
 */
export const REQUEST_REMEDIATION_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local t = redis.call('HMGET', KEYS[1], 'tenant', 'agentId')
  if t[1] ~= ARGV[2] or t[2] ~= ARGV[3] then return redis.error_reply('CONFLICT') end
  return redis.call('HGETALL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'requestId', ARGV[1], 'tenant', ARGV[2], 'agentId', ARGV[3], 'reason', ARGV[4], 'atMs', ARGV[5], 'status', 'pending')
redis.call('ZADD', KEYS[2], tonumber(ARGV[5]), ARGV[1])
return redis.call('HGETALL', KEYS[1])
`;

/**
 * Remediation decision: pending → granted|denied once; repeating the same decision is a no-op that
 * returns the stored request (so a crashed grant can be retried and its credit applied idempotently).
 * KEYS: 1 request hash, 2 pending zset. ARGV: requestId, status, reviewer, decidedAtMs, credit.
 * Reply: flat HGETALL, or error replies 'NOTFOUND' / 'CONFLICT:<status>'.
 */
export const DECIDE_REMEDIATION_LUA = `
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return redis.error_reply('NOTFOUND') end
if st == 'pending' then
  redis.call('HSET', KEYS[1], 'status', ARGV[2], 'reviewer', ARGV[3], 'decidedAtMs', ARGV[4])
  if ARGV[2] == 'granted' then redis.call('HSET', KEYS[1], 'credit', ARGV[5]) end
  redis.call('ZREM', KEYS[2], ARGV[1])
elseif st ~= ARGV[2] then
  return redis.error_reply('CONFLICT:' .. st)
end
return redis.call('HGETALL', KEYS[1])
`;

/**
 * Resolve an agent's re-tiering requests: removes every queued entry of tenant+agent atomically and
 * returns them (oldest first). KEYS: 1 re-tiering queue. ARGV: tenant, agentId.
 */
export const RESOLVE_RETIER_LUA = `
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local out = {}
for _, s in ipairs(items) do
  local ok, o = pcall(cjson.decode, s)
  if ok and type(o) == 'table' and o.tenant == ARGV[1] and o.agentId == ARGV[2] then
    redis.call('LREM', KEYS[1], 1, s)
    out[#out + 1] = s
  end
end
return out
`;

/**
 * Sweep lock: one instance sweeps at a time (the apply script alone already prevents double credit).
 * ACQUIRE: SET NX PX. RELEASE: delete only when the token is still ours. KEYS: lock. ARGV: token[, ttl ms].
 */
export const RELEASE_LOCK_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;
