/**
 * The review queue's shared state in Redis (docs/rollout.md "Review queue"). Keys (prefix P), one hash slot
 * (tag {rq}) so the scripts run on Redis Cluster too: P {rq}:item:<review_id> (the item's JSON) ·
 * P {rq}:open (sorted set of open review ids by enqueued_at_ms).
 * Enqueue, take and resolve are single Lua scripts, so two reviewers (or two CLI instances) cannot take the
 * same item, and a resolved item is never reopened by a redelivered verdict. Resolved items expire after
 * `resolvedTtlSeconds` (ClickHouse keeps the history).
 */
import { redisCall, type RedisClient } from './client.js';
import type { ReviewItem, ReviewQueueStore } from '../../engine/rollout/review-queue.js';
import { StewardError } from '../../errors.js';

// KEYS[1] item, KEYS[2] open set; ARGV: json, id, enqueued_at. 1 when added.
const ENQUEUE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
  return 1
end
return 0`;

// KEYS[1] item; ARGV: reviewer, at. Returns the updated item, or an error text.
const TAKE = `
local raw = redis.call('GET', KEYS[1])
if not raw then return {0, 'no such review'} end
local it = cjson.decode(raw)
if it.status == 'resolved' then return {0, 'already resolved (' .. it.outcome .. ' by ' .. it.reviewer .. ')'} end
if it.status == 'taken' and it.reviewer ~= ARGV[1] then return {0, 'already taken by ' .. it.reviewer} end
if it.status ~= 'taken' then
  it.status = 'taken'
  it.reviewer = ARGV[1]
  it.taken_at_ms = tonumber(ARGV[2])
  it.updated_at_ms = tonumber(ARGV[2])
end
raw = cjson.encode(it)
redis.call('SET', KEYS[1], raw, 'KEEPTTL')
return {1, raw}`;

// KEYS[1] item, KEYS[2] open set; ARGV: id, reviewer, outcome, note, at, ttl. Only the taker (or anyone when
// still queued) may resolve.
const RESOLVE = `
local raw = redis.call('GET', KEYS[1])
if not raw then return {0, 'no such review'} end
local it = cjson.decode(raw)
if it.status == 'resolved' then return {0, 'already resolved (' .. it.outcome .. ' by ' .. it.reviewer .. ')'} end
if it.status == 'taken' and it.reviewer ~= ARGV[2] then return {0, 'taken by ' .. it.reviewer} end
it.status = 'resolved'
it.outcome = ARGV[3]
it.reviewer = ARGV[2]
it.note = ARGV[4]
if tonumber(it.taken_at_ms) == 0 then it.taken_at_ms = tonumber(ARGV[5]) end
it.resolved_at_ms = tonumber(ARGV[5])
it.updated_at_ms = tonumber(ARGV[5])
raw = cjson.encode(it)
redis.call('SET', KEYS[1], raw, 'EX', ARGV[6])
redis.call('ZREM', KEYS[2], ARGV[1])
return {1, raw}`;

type Scripted = RedisClient & {
  stewardRqEnqueue(item: string, open: string, json: string, id: string, at: number): Promise<number>;
  stewardRqTake(item: string, reviewer: string, at: number): Promise<[number, string]>;
  stewardRqResolve(item: string, open: string, id: string, reviewer: string, outcome: string, note: string, at: number, ttl: number): Promise<[number, string]>;
};

/** cjson turns an empty Lua table into {} and integers into floats: restore the item's shapes. */
function itemOf(raw: string): ReviewItem {
  const o = JSON.parse(raw) as ReviewItem & { reasons: unknown };
  return { ...o, reasons: Array.isArray(o.reasons) ? o.reasons : [] };
}

export interface ReviewQueueStats {
  open: number;
  oldestEnqueuedAtMs?: number;
  overdue: number;
}

export class RedisReviewQueue implements ReviewQueueStore {
  private readonly r: Scripted;

  constructor(
    redis: RedisClient,
    private readonly prefix = '',
    private readonly resolvedTtlSeconds = 7 * 86_400,
  ) {
    this.r = redis as Scripted;
    if (!('stewardRqEnqueue' in redis)) {
      redis.defineCommand('stewardRqEnqueue', { numberOfKeys: 2, lua: ENQUEUE });
      redis.defineCommand('stewardRqTake', { numberOfKeys: 1, lua: TAKE });
      redis.defineCommand('stewardRqResolve', { numberOfKeys: 2, lua: RESOLVE });
    }
  }

  private itemKey(id: string): string {
    return `${this.prefix}{rq}:item:${id}`;
  }

  private get openKey(): string {
    return `${this.prefix}{rq}:open`;
  }

  async enqueue(item: ReviewItem): Promise<boolean> {
    // Through redisCall: a raw ioredis error here (Redis down) was taken for a bug and dead-lettered the verdict.
    return Number(await redisCall('review queue (enqueue)', () => this.r.stewardRqEnqueue(this.itemKey(item.review_id), this.openKey, JSON.stringify(item), item.review_id, item.enqueued_at_ms))) === 1;
  }

  async get(id: string): Promise<ReviewItem | undefined> {
    const raw = await redisCall('review queue (get)', () => this.r.get(this.itemKey(id)));
    return raw === null ? undefined : itemOf(raw);
  }

  /** Open items (queued or taken), oldest first. */
  async list(limit = 1000): Promise<ReviewItem[]> {
    const ids = await redisCall('review queue (list)', () => this.r.zrange(this.openKey, 0, limit - 1));
    if (ids.length === 0) return [];
    const raws = await redisCall('review queue (list)', () => this.r.mget(ids.map((id) => this.itemKey(id))));
    return raws.filter((x): x is string => x !== null).map(itemOf);
  }

  async take(id: string, reviewer: string, atMs: number): Promise<ReviewItem> {
    const [ok, text] = await redisCall('review queue (take)', () => this.r.stewardRqTake(this.itemKey(id), reviewer, atMs));
    if (Number(ok) !== 1) throw new StewardError('STEWARD_REVIEW_QUEUE_STATE', `review ${id}: ${text}`, { details: { reviewId: id } });
    return itemOf(text);
  }

  async resolve(id: string, reviewer: string, outcome: 'approved' | 'denied', note: string, atMs: number): Promise<ReviewItem> {
    const [ok, text] = await redisCall('review queue (resolve)', () => this.r.stewardRqResolve(this.itemKey(id), this.openKey, id, reviewer, outcome, note, atMs, this.resolvedTtlSeconds));
    if (Number(ok) !== 1) throw new StewardError('STEWARD_REVIEW_QUEUE_STATE', `review ${id}: ${text}`, { details: { reviewId: id } });
    return itemOf(text);
  }

  /** Aging and SLA: open items, the oldest one's enqueue time, and how many are past their SLA at `nowMs`. */
  async stats(nowMs: number): Promise<ReviewQueueStats> {
    const open = await redisCall('review queue (stats)', () => this.r.zcard(this.openKey));
    if (open === 0) return { open: 0, overdue: 0 };
    const oldest = await redisCall('review queue (stats)', () => this.r.zrange(this.openKey, 0, 0, 'WITHSCORES'));
    const items = await this.list(10_000);
    return { open, oldestEnqueuedAtMs: Number(oldest[1]), overdue: items.filter((i) => i.sla_due_ms < nowMs).length };
  }
}
