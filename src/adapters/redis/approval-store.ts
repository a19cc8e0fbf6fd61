/**
 * Durable approval state (docs/approvals.md "Durability"): every pending request and its deadline live in
 * Redis, so a timeout fires even when every Steward instance restarted in between, and exactly one outcome
 * is decided per approval:
 *   `<p>{ap}:r:<id>`     hash — request (JSON), status (pending|approved|denied|timed_out), outcome (JSON)
 *   `<p>{ap}:deadlines`  sorted set — pending ids by deadline (ms); a claimed id moves to now + lease
 *   `<p>{ap}:outbox`     sorted set — decided ids whose outcome is not yet published, by lease expiry
 * `resolve` is the one transition out of pending (Lua, atomic): an answer and a timeout racing each other, or
 * two instances sweeping at once, decide one outcome. The outcome is then published and `published` called;
 * an instance that dies in between leaves the id in the outbox, and the next sweep publishes it again once the
 * lease ran out (the same message, idempotent for every consumer: keyed by approval id).
 * The `{ap}` hash tag keeps every key in one Redis Cluster slot (the scripts touch several).
 */
import type { ApprovalOutcome } from '../../engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../engine/approvals/policy.js';
import { redisCall, type RedisClient } from './client.js';

/** KEYS: rec, deadlines. ARGV: id, request, deadline, ttl ms. 1 = stored, 0 = already known. */
const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'request', ARGV[2], 'status', 'pending')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
`;

/** KEYS: rec, deadlines, outbox. ARGV: id, status, outcome, lease until. {1, outcome} won; {0, outcome} already decided; {-1} unknown. */
const RESOLVE = `
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return {-1} end
if st ~= 'pending' then return {0, redis.call('HGET', KEYS[1], 'outcome') or ''} end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'outcome', ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return {1, ARGV[3]}
`;

/**
 * KEYS: deadlines, outbox. ARGV: now, limit, lease until, record key prefix. Due pending ids (their deadline
 * moved to the lease, so no other sweeper takes them meanwhile) with their requests, then outbox ids whose
 * lease ran out (re-leased) with their outcomes. Ids whose record expired are dropped.
 */
const CLAIM = `
local due = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
  local req = redis.call('HGET', ARGV[4] .. id, 'request')
  if req then
    redis.call('ZADD', KEYS[1], ARGV[3], id)
    table.insert(due, req)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
  local o = redis.call('HGET', ARGV[4] .. id, 'outcome')
  if o then
    redis.call('ZADD', KEYS[2], ARGV[3], id)
    table.insert(out, o)
  else
    redis.call('ZREM', KEYS[2], id)
  end
end
return {due, out}
`;

interface ApprovalRedis {
  stewardApCreate(rec: string, deadlines: string, id: string, request: string, deadline: string, ttl: string): Promise<number>;
  stewardApResolve(rec: string, deadlines: string, outbox: string, id: string, status: string, outcome: string, lease: string): Promise<[number, string?]>;
  stewardApClaim(deadlines: string, outbox: string, now: string, limit: string, lease: string, prefix: string): Promise<[string[], string[]]>;
}

export interface ApprovalStoreOptions {
  prefix: string;
  /** How long a claimed deadline or an unpublished outcome is left to its claimer before another instance takes it over. */
  leaseMs?: number;
  /** How long a record is kept after its deadline (answers after that find nothing). */
  retentionMs?: number;
}

export type ResolveResult = { kind: 'won'; outcome: ApprovalOutcome } | { kind: 'decided'; outcome: ApprovalOutcome } | { kind: 'unknown' };

export class RedisApprovalStore {
  private readonly leaseMs: number;
  private readonly retentionMs: number;
  private readonly recPrefix: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly o: ApprovalStoreOptions,
  ) {
    this.leaseMs = o.leaseMs ?? 30_000;
    this.retentionMs = o.retentionMs ?? 7 * 86_400_000;
    this.recPrefix = `${o.prefix}{ap}:r:`;
    const r = redis as unknown as Partial<ApprovalRedis>;
    if (typeof r.stewardApCreate !== 'function') {
      redis.defineCommand('stewardApCreate', { numberOfKeys: 2, lua: CREATE });
      redis.defineCommand('stewardApResolve', { numberOfKeys: 3, lua: RESOLVE });
      redis.defineCommand('stewardApClaim', { numberOfKeys: 2, lua: CLAIM });
    }
  }

  private get r(): ApprovalRedis {
    return this.redis as unknown as ApprovalRedis;
  }
  private get deadlines(): string {
    return `${this.o.prefix}{ap}:deadlines`;
  }
  private get outbox(): string {
    return `${this.o.prefix}{ap}:outbox`;
  }

  private call<T>(what: string, f: () => Promise<T>): Promise<T> {
    return redisCall(`approval store (${what})`, f);
  }

  /** Stores a pending request (idempotent: a redelivered request changes nothing). True when new. */
  async create(req: ApprovalRequest, nowMs: number): Promise<boolean> {
    const ttl = Math.max(req.deadline_ms - nowMs, 0) + this.retentionMs;
    return (await this.call('create', () => this.r.stewardApCreate(this.recPrefix + req.approval_id, this.deadlines, req.approval_id, JSON.stringify(req), String(req.deadline_ms), String(ttl)))) === 1;
  }

  async request(id: string): Promise<ApprovalRequest | undefined> {
    const text = await this.call('read', () => this.redis.hget(this.recPrefix + id, 'request'));
    return text ? (JSON.parse(text) as ApprovalRequest) : undefined;
  }

  async status(id: string): Promise<{ status: string; outcome?: ApprovalOutcome } | undefined> {
    const h = await this.call('read', () => this.redis.hgetall(this.recPrefix + id));
    if (!h.status) return undefined;
    return { status: h.status, ...(h.outcome && { outcome: JSON.parse(h.outcome) as ApprovalOutcome }) };
  }

  /** The one transition out of pending; the winner must publish the outcome, then call `published`. */
  async resolve(outcome: ApprovalOutcome, nowMs: number): Promise<ResolveResult> {
    const [code, text] = await this.call('resolve', () =>
      this.r.stewardApResolve(this.recPrefix + outcome.approval_id, this.deadlines, this.outbox, outcome.approval_id, outcome.status, JSON.stringify(outcome), String(nowMs + this.leaseMs)),
    );
    if (code === -1) return { kind: 'unknown' };
    return { kind: code === 1 ? 'won' : 'decided', outcome: JSON.parse(text ?? '') as ApprovalOutcome };
  }

  async published(id: string): Promise<void> {
    await this.call('published', () => this.redis.zrem(this.outbox, id));
  }

  /** Due requests (to be timed out) and outcomes whose publisher died (to be published again); both leased to the caller. */
  async claim(nowMs: number, limit = 100): Promise<{ due: ApprovalRequest[]; unpublished: ApprovalOutcome[] }> {
    const [due, out] = await this.call('claim', () => this.r.stewardApClaim(this.deadlines, this.outbox, String(nowMs), String(limit), String(nowMs + this.leaseMs), this.recPrefix));
    return { due: due.map((t) => JSON.parse(t) as ApprovalRequest), unpublished: out.map((t) => JSON.parse(t) as ApprovalOutcome) };
  }
}
