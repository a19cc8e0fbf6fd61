/**
 * Lua for RedisTrustDebtStore. `APPLY_LUA` transliterates `advance`/`runAudits` from
 * src/engine/trust-debt/math.ts operation by operation (same order of IEEE-754 double operations,
 * `math.pow` = C pow), so Redis and the in-memory store agree. Numbers cross the boundary as
 * `%.17g` strings: Redis would truncate Lua numbers to integers in replies.
 *
 * KEYS: 1 agent hash, 2 dedup key of this event id, 3 re-tiering queue (list), 4 known-agents set.
 * ARGV: 1 mode ('apply' | 'sweep'), 2 atMs, 3 delta, 4 resetsWindow (0/1), 5 rate, 6 periodHours,
 *   7 floor, 8 elevated, 9 restricted, 10 retier, 11 auditEnabled (0/1), 12 auditThresholdMs,
 *   13 auditCredit, 14 dedupTtlSeconds, 15 agentsMember, 16 cause, 17 tenant, 18 agentId, 19 eventId.
 * Reply: { dup ('0'|'1'), payload } where payload = '|'-joined records, first the cause, then
 *   per change: atMs, before, after, level, previousLevel; the last change is the event's own
 *   (absent in sweep mode).
 */
export const APPLY_LUA = `
local mode = ARGV[1]
local at = tonumber(ARGV[2])
local delta = tonumber(ARGV[3])
local resets = ARGV[4] == '1'
local rate = tonumber(ARGV[5])
local period = tonumber(ARGV[6])
local floor = tonumber(ARGV[7])
local thE = tonumber(ARGV[8])
local thR = tonumber(ARGV[9])
local thT = tonumber(ARGV[10])
local auditOn = ARGV[11] == '1'
local thr = tonumber(ARGV[12])
local credit = tonumber(ARGV[13])

if mode == 'apply' then
  local prior = redis.call('GET', KEYS[2])
  if prior then return { '1', prior } end
end

local function fmt(x) return string.format('%.17g', x) end

local function levelFor(d)
  if d >= thT then return 're_tiering_review' end
  if d >= thR then return 'restricted_mode' end
  if d >= thE then return 'elevated_monitoring' end
  return 'normal'
end

local function decay(debt, from, to)
  local h = (to - from) / 3600000
  local dec = debt
  if h > 0 then dec = debt * math.pow(rate, h / period) end
  return math.max(floor, dec)
end

local function combine(dec, dl)
  return math.min(1, math.max(floor, dec + dl))
end

local h = redis.call('HMGET', KEYS[1], 'd', 't', 'w', 'lv', 'la', 'n')
local exists = h[1] ~= false
if not exists and mode == 'sweep' then return { '0', '' } end
local debt, last, win, lv, la, n
if exists then
  debt = tonumber(h[1]); last = tonumber(h[2]); win = tonumber(h[3]); lv = h[4]
  la = h[5]; n = tonumber(h[6])
else
  debt = 0; last = at; win = at; lv = 'normal'; la = false; n = 0
end

local out = { ARGV[16] }
local changed = false
if auditOn then
  while win + thr <= at do
    local due = win + thr
    local before = decay(debt, last, due)
    if before <= floor then
      local k = math.floor((at - win) / thr)
      win = win + k * thr
      la = fmt(win)
      changed = true
      break
    end
    local after = combine(before, credit)
    local lvl = levelFor(after)
    out[#out + 1] = fmt(due); out[#out + 1] = fmt(before); out[#out + 1] = fmt(after)
    out[#out + 1] = lvl; out[#out + 1] = lv
    debt = after; last = math.max(last, due); win = due; lv = lvl; la = fmt(due)
    changed = true
  end
end

if mode == 'sweep' then
  if changed then
    local f = { 'd', fmt(debt), 't', fmt(last), 'w', fmt(win), 'lv', lv }
    if la then f[#f + 1] = 'la'; f[#f + 1] = la end
    redis.call('HSET', KEYS[1], unpack(f))
  end
  return { '0', table.concat(out, '|') }
end

local before = decay(debt, last, at)
local after = combine(before, delta)
local lvl = levelFor(after)
out[#out + 1] = fmt(at); out[#out + 1] = fmt(before); out[#out + 1] = fmt(after)
out[#out + 1] = lvl; out[#out + 1] = lv
if resets then win = math.max(win, at) end
local f = { 'd', fmt(after), 't', fmt(math.max(last, at)), 'w', fmt(win), 'lv', lvl, 'n', tostring(n + 1),
  'tenant', ARGV[17], 'agent', ARGV[18] }
if la then f[#f + 1] = 'la'; f[#f + 1] = la end
redis.call('HSET', KEYS[1], unpack(f))
if not exists then redis.call('SADD', KEYS[4], ARGV[15]) end
local payload = table.concat(out, '|')
redis.call('SET', KEYS[2], payload, 'EX', tonumber(ARGV[14]))
local rank = { normal = 0, elevated_monitoring = 1, restricted_mode = 2, re_tiering_review = 3 }
if rank[lv] < 3 and rank[lvl] == 3 then
  redis.call('RPUSH', KEYS[3], cjson.encode({ tenant = ARGV[17], agentId = ARGV[18], eventId = ARGV[19], atMs = fmt(at), debt = fmt(after) }))
end
return { '0', payload }
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
