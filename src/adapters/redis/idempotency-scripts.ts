/**
 * The Lua scripts of the HTTP ingress's idempotency claims (idempotency-claims.ts; docs/http.md "Idempotency",
 * docs/spec-decisions.md D39 and D48). Every key an agent's claims touch shares its hash tag (one Redis Cluster slot).
 *
 * KEYS of the claim and finalise scripts (the caller names them around its own estimate b of the bucket; Redis'
 * bucket sb is clamped to b-1 … b+1 and i = sb - b + 4):
 *   1-5   per-key done sets of buckets b-3 … b+1          (cur = KEYS[i], prev = KEYS[i-1], old = KEYS[i-2])
 *   6     per-key pending sorted set (score: claim time µs)
 *   7     claims sorted set (claim id → its time)
 *   8-12  group done hashes of buckets b-3 … b+1          (KEYS[i+7], [i+6], [i+5])
 *   13-17 per-key prefix sets of buckets b-3 … b+1        (KEYS[i+12], [i+11], [i+10])
 *   18    group pending hash (group → "<time>\\n<s1>\\n<s2>\\n")
 *   19    group pending index (group → its entry's time), pruned by the stale bound
 *
 * A *group* (D48) is a batch whose key H has no '_' and no control character and whose events' keys are
 * `H_<suffix>` (the acgp client's form: `<batch_id>_<trace_id>`): the batch's suffixes are kept as one string in
 * one hash field, so a fresh batch costs a handful of commands, not a few per event. Any key `P_S` (P the text before
 * its first '_') is looked up in group P as suffix S wherever it comes from, so the same event re-batched under
 * another key is still found. A per-key claim of such a key adds P to its bucket's prefix set; a batch whose group
 * was seen before, or whose H is in a prefix set, or whose keys are pending per key, is claimed per key (its keys
 * spelled out in full): a group is written once, by the first claim, and is never appended to by a later claim.
 */

/** Shared head: the clock, the bucket, the keys. */
const HEAD = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local sb
if ARGV[3] ~= '' then sb = tonumber(ARGV[3]) else sb = math.floor(tonumber(t[1]) / w) end
if sb > b + 1 then sb = b + 1 elseif sb < b - 1 then sb = b - 1 end
local i = sb - b + 4
local cur, prev, old, pend, own = KEYS[i], KEYS[i - 1], KEYS[i - 2], KEYS[6], KEYS[7]
local gcur, gprev, gold = KEYS[i + 7], KEYS[i + 6], KEYS[i + 5]
local pcur, pprev, pold = KEYS[i + 12], KEYS[i + 11], KEYS[i + 10]
local gpend, gidx = KEYS[18], KEYS[19]
local function members(blob, into)
  for s in string.gmatch(blob, '[^\\n]+') do into[s] = true end
  return into
end
local function entryTime(pv)
  local nl = string.find(pv, '\\n', 1, true)
  return tonumber(string.sub(pv, 1, nl - 1)), nl
end
`;

/**
 * Claim. ARGV: b, the window (s), a fixed bucket ('' = Redis' clock), the stale bound (ms), the claim id, the group
 * H, its suffixes as one string G ("\\n<s1>\\n<s2>\\n", distinct; '' = no group), then the per-key keys. Answer: for
 * a group 'F' (all of G claimed as one entry) or 'S' and one character per suffix of G (claimed per key), then one
 * per key: 1 claimed by this call, 0 done or the same as an earlier key of the call, 2 pending under another live claim.
 *
 * Safe to run twice (D39): the claims set maps the id to the time of its first run, the time its pending entries
 * (per key, and its group entry) carry, so a second run counts them as its own.
 */
export const CLAIM_SCRIPT = `local b, w, stale, id = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]), ARGV[5]
local H, G = ARGV[6], ARGV[7]
${HEAD}
local cutn = now - stale * 1000
local cut = '(' .. string.format('%d', cutn)
redis.call('ZREMRANGEBYSCORE', pend, '-inf', cut)
redis.call('ZREMRANGEBYSCORE', own, '-inf', cut)
local gone = redis.call('ZRANGEBYSCORE', gidx, '-inf', cut)
if #gone > 0 then
  for _, P in ipairs(gone) do
    local pv = redis.call('HGET', gpend, P)
    if pv and entryTime(pv) < cutn then redis.call('HDEL', gpend, P) end
  end
  redis.call('ZREMRANGEBYSCORE', gidx, '-inf', cut)
end
local first = redis.call('ZSCORE', own, id)
local at = first and tonumber(first) or now
local uss = string.format('%d', at)
local hasPend = redis.call('EXISTS', pend) == 1
local groups = {}
local function group(P)
  local g = groups[P]
  if g then return g end
  g = {}
  local dc, dp = redis.call('HGET', gcur, P), redis.call('HGET', gprev, P)
  if dc or dp then
    g.done = {}
    if dc then members(dc, g.done) end
    if dp then members(dp, g.done) end
  end
  local pv = redis.call('HGET', gpend, P)
  if pv then
    local pat, nl = entryTime(pv)
    if pat >= cutn then g.pat = pat; g.pend = members(string.sub(pv, nl + 1), {}) end
  end
  groups[P] = g
  return g
end
local out, keys, claimed, head = {}, {}, false, ''
if G ~= '' then
  local g = group(H)
  local fast = not g.done and not g.pend and redis.call('SISMEMBER', pcur, H) == 0 and redis.call('SISMEMBER', pprev, H) == 0
  if fast and hasPend then
    local full = {}
    for x in string.gmatch(G, '[^\\n]+') do full[#full + 1] = H .. '_' .. x end
    for s = 1, #full, 1000 do
      local e = math.min(s + 999, #full)
      local sc = redis.call('ZMSCORE', pend, unpack(full, s, e))
      for j = 1, e - s + 1 do if sc[j] then fast = false end end
    end
  end
  if fast then
    redis.call('HSET', gpend, H, uss .. G)
    redis.call('ZADD', gidx, uss, H)
    redis.call('PEXPIRE', gpend, stale)
    redis.call('PEXPIRE', gidx, stale)
    claimed = true
    head = 'F'
  else
    head = 'S'
    for x in string.gmatch(G, '[^\\n]+') do keys[#keys + 1] = H .. '_' .. x end
  end
end
for k = 8, #ARGV do keys[#keys + 1] = ARGV[k] end
local fresh, seen, prefixes = {}, {}, {}
for s = 1, #keys, 1000 do
  local e = math.min(s + 999, #keys)
  local inPrev = redis.call('SMISMEMBER', prev, unpack(keys, s, e))
  local inCur = redis.call('SMISMEMBER', cur, unpack(keys, s, e))
  local inPend = hasPend and redis.call('ZMSCORE', pend, unpack(keys, s, e)) or nil
  for j = s, e do
    local k, p = keys[j], inPend and inPend[j - s + 1]
    local gd, gp, P = false, nil, nil
    local u = string.find(k, '_', 1, true)
    if u and u > 1 and u < #k then
      P = string.sub(k, 1, u - 1)
      local g, S = group(P), string.sub(k, u + 1)
      if g.done and g.done[S] then gd = true elseif g.pend and g.pend[S] then gp = g.pat end
    end
    if inPrev[j - s + 1] == 1 or inCur[j - s + 1] == 1 or seen[k] or gd then out[j] = '0'
    elseif p and not (first and tonumber(p) == at) then out[j] = '2'
    elseif gp and gp ~= at then out[j] = '2'
    else
      seen[k] = true; out[j] = '1'
      if not p and not gp then
        fresh[#fresh + 1] = uss; fresh[#fresh + 1] = k
        if P then prefixes[#prefixes + 1] = P end
      end
    end
  end
end
if #fresh > 0 then
  for s = 1, #fresh, 1000 do redis.call('ZADD', pend, unpack(fresh, s, math.min(s + 999, #fresh))) end
  redis.call('PEXPIRE', pend, stale)
  claimed = true
end
if #prefixes > 0 then
  if redis.call('EXISTS', pcur) == 0 then redis.call('UNLINK', pold) end
  for s = 1, #prefixes, 1000 do redis.call('SADD', pcur, unpack(prefixes, s, math.min(s + 999, #prefixes))) end
  redis.call('EXPIREAT', pcur, string.format('%d', (sb + 3) * w))
end
if claimed then
  if not first then redis.call('ZADD', own, uss, id) end
  redis.call('PEXPIRE', own, stale)
end
return head .. table.concat(out)`;

/**
 * Produced. KEYS as for the claim; ARGV: b, the window, the fixed bucket, the claim id, H, G, then the per-key keys. The claim's group entry's listed suffixes move to Redis' current bucket's group hash (the whole entry
 * at once when they are all of it, the common case); anything else — per-key entries, suffixes claimed per key — is
 * added to the bucket's per-key set and removed from the pending set, also an entry another claim took after this
 * one went stale (the event is produced: done wins). The first write of a new bucket UNLINKs the structure from two
 * buckets back; the claim's record goes once none of its entries is pending.
 */
export const FINALISE_SCRIPT = `local b, w, id = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4]
local H, G = ARGV[5], ARGV[6]
${HEAD}
local exp = string.format('%d', (sb + 3) * w)
local at = redis.call('ZSCORE', own, id)
local keys = {}
if G ~= '' then
  local pv = at and redis.call('HGET', gpend, H)
  local moved
  if pv and entryTime(pv) == tonumber(at) then
    local pat, nl = entryTime(pv)
    local blob = string.sub(pv, nl)
    if G == blob then
      moved = blob
      redis.call('HDEL', gpend, H)
      redis.call('ZREM', gidx, H)
    else
      local inEntry, taken, mv, rest = members(blob, {}), {}, {}, {}
      for x in string.gmatch(G, '[^\\n]+') do
        if inEntry[x] then
          if not taken[x] then taken[x] = true; mv[#mv + 1] = x end
        else keys[#keys + 1] = H .. '_' .. x end
      end
      for x in string.gmatch(blob, '[^\\n]+') do if not taken[x] then rest[#rest + 1] = x end end
      if #rest == 0 then redis.call('HDEL', gpend, H); redis.call('ZREM', gidx, H)
      else redis.call('HSET', gpend, H, string.sub(pv, 1, nl - 1) .. '\\n' .. table.concat(rest, '\\n') .. '\\n') end
      if #mv > 0 then moved = '\\n' .. table.concat(mv, '\\n') .. '\\n' end
    end
  else
    for x in string.gmatch(G, '[^\\n]+') do keys[#keys + 1] = H .. '_' .. x end
  end
  if moved then
    if redis.call('EXISTS', gcur) == 0 then redis.call('UNLINK', gold) end
    local dv = redis.call('HGET', gcur, H)
    if dv then
      local have, add = members(dv, {}), {}
      for s in string.gmatch(moved, '[^\\n]+') do if not have[s] then have[s] = true; add[#add + 1] = s end end
      if #add > 0 then redis.call('HSET', gcur, H, dv .. table.concat(add, '\\n') .. '\\n') end
    else
      redis.call('HSET', gcur, H, moved)
    end
    redis.call('EXPIREAT', gcur, exp)
  end
end
for k = 7, #ARGV do keys[#keys + 1] = ARGV[k] end
if #keys > 0 then
  if redis.call('EXISTS', cur) == 0 then redis.call('UNLINK', old) end
  local prefixes = {}
  for s = 1, #keys, 1000 do
    local e = math.min(s + 999, #keys)
    redis.call('SADD', cur, unpack(keys, s, e))
    redis.call('ZREM', pend, unpack(keys, s, e))
  end
  for _, k in ipairs(keys) do
    local u = string.find(k, '_', 1, true)
    if u and u > 1 and u < #k then prefixes[#prefixes + 1] = string.sub(k, 1, u - 1) end
  end
  if #prefixes > 0 then
    if redis.call('EXISTS', pcur) == 0 then redis.call('UNLINK', pold) end
    for s = 1, #prefixes, 1000 do redis.call('SADD', pcur, unpack(prefixes, s, math.min(s + 999, #prefixes))) end
    redis.call('EXPIREAT', pcur, exp)
  end
  redis.call('EXPIREAT', cur, exp)
end
if at and redis.call('ZCOUNT', pend, at, at) == 0 and redis.call('ZCOUNT', gidx, at, at) == 0 then redis.call('ZREM', own, id) end
return 0`;

/**
 * Not produced. KEYS: the pending set, the claims set, the group pending hash and index; ARGV: the claim id, H, G,
 * then the per-key keys. Removes only entries of that claim (its time) — a key another request claimed
 * after this claim went stale stays its — and the claim's record once none of its entries is pending.
 */
export const RELEASE_SCRIPT = `local function members(blob, into)
  for s in string.gmatch(blob, '[^\\n]+') do into[s] = true end
  return into
end
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not at then return 0 end
local atn = tonumber(at)
local H, G = ARGV[2], ARGV[3]
local keys = {}
if G ~= '' then
  local pv = redis.call('HGET', KEYS[3], H)
  local nl = pv and string.find(pv, '\\n', 1, true)
  if pv and tonumber(string.sub(pv, 1, nl - 1)) == atn then
    local rm, inEntry, rest = members(G, {}), {}, {}
    for x in string.gmatch(string.sub(pv, nl), '[^\\n]+') do
      inEntry[x] = true
      if not rm[x] then rest[#rest + 1] = x end
    end
    if #rest == 0 then redis.call('HDEL', KEYS[3], H); redis.call('ZREM', KEYS[4], H)
    else redis.call('HSET', KEYS[3], H, string.sub(pv, 1, nl - 1) .. '\\n' .. table.concat(rest, '\\n') .. '\\n') end
    for x in string.gmatch(G, '[^\\n]+') do if not inEntry[x] then keys[#keys + 1] = H .. '_' .. x end end
  else
    for x in string.gmatch(G, '[^\\n]+') do keys[#keys + 1] = H .. '_' .. x end
  end
end
for k = 4, #ARGV do keys[#keys + 1] = ARGV[k] end
for s = 1, #keys, 1000 do
  local e = math.min(s + 999, #keys)
  local sc = redis.call('ZMSCORE', KEYS[1], unpack(keys, s, e))
  local mine = {}
  for j = s, e do if sc[j - s + 1] and tonumber(sc[j - s + 1]) == atn then mine[#mine + 1] = keys[j] end end
  if #mine > 0 then redis.call('ZREM', KEYS[1], unpack(mine)) end
end
if redis.call('ZCOUNT', KEYS[1], at, at) == 0 and redis.call('ZCOUNT', KEYS[4], at, at) == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) end
return 0`;
