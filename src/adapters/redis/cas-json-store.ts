/**
 * One small compare-and-set JSON value store over Redis: a value is written only when the key still holds
 * the text it was computed from, so writers in several processes never lose each other's changes. Values
 * are kept in an envelope `{v: 1, updated_ms, value}`: expiry is on event time (docs/spec-decisions.md D23),
 * a value whose `updated_ms` is older than the TTL at the event's time reads as absent. Redis' own
 * (wall-clock) expiry only collects what nobody reads any more. Used by the ACM run-state store
 * (acm-state-store.ts) and the gate's job store (gate-job-store.ts).
 *
 * `batch: true` (the gate's job store): the reads and compare-and-sets issued in one event-loop iteration leave as
 * one script call per hash slot (CAS_ROUND_SCRIPT) instead of a GET or a script call each — the gate stage reads
 * the jobs of a chunk's lanes together and writes whatever judge answers arrived in the same poll phase together
 * (docs/pipeline.md "Gate stage"). Each operation still gets its own answer, in the order it was issued.
 */
import { createHash } from 'node:crypto';
import { isCluster, redisAdapterError, type RedisClient } from './client.js';
import { keySlot } from './slots.js';
import { StewardError } from '../../errors.js';

/**
 * SET KEYS[1] to ARGV[2] (PX ARGV[3]) only when it still holds the text whose SHA-1 is ARGV[1] ('' = absent).
 * 1 = written, 0 = changed meanwhile. The digest stands in for the text the value was computed from: the write
 * sends 40 bytes instead of the whole previous value, and no version field is needed in the value, so values
 * written by any build compare alike (docs/gate.md "Job state": mixed-version rollout).
 */
const CAS_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] ~= '') or (cur ~= false and redis.sha1hex(cur) ~= ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

/**
 * A round: ARGV[1] the PX ttl; per key i, ARGV[3i-1..3i+1] = kind ('g' read, 'c' compare-and-set), expected (the
 * SHA-1 of the text the write was computed from, '' = absent), next.
 * Answers per key: the value (false = absent) for 'g', 1 written / 0 changed meanwhile for 'c' — CAS_SCRIPT's rule.
 * An operation that fails (a key of another type, a write refused at maxmemory) answers {message} in its place,
 * so it fails alone, as its own command would have, not the other jobs of the round.
 */
const CAS_ROUND_SCRIPT = `
local out = {}
for i = 1, #KEYS do
  local b = (i - 1) * 3 + 2
  local ok, res = pcall(function()
    local cur = redis.call('GET', KEYS[i])
    if ARGV[b] == 'g' then return cur end
    if (cur == false and ARGV[b + 1] ~= '') or (cur ~= false and redis.sha1hex(cur) ~= ARGV[b + 1]) then return 0 end
    redis.call('SET', KEYS[i], ARGV[b + 2], 'PX', ARGV[1])
    return 1
  end)
  if ok then out[i] = res else out[i] = { tostring(type(res) == 'table' and (res.err or res) or res) } end
end
return out
`;

/** Most operations in one round's script call (a script blocks its Redis while it runs). */
const MAX_ROUND_OPS = 256;

interface RoundOp {
  key: string;
  kind: 'g' | 'c';
  expected: string;
  next: string;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export interface CasRead<T> {
  /** The key's text as read ('' = absent): what a compare-and-set of this read expects. */
  text: string;
  /** The live value at the read's event time (undefined: absent, expired or not ours). */
  value: T | undefined;
}

export interface CasJsonStoreOptions {
  /** Event-time TTL of an idle value. */
  ttlMs: number;
  /** What the store is called in errors (e.g. "ACM run state"). */
  what: string;
  /** One script call per slot for the operations of one event-loop iteration (default false). */
  batch?: boolean;
}

interface Envelope<T> {
  v: 1;
  updated_ms: number;
  value: T;
}

export class CasJsonStore<T> {
  private pending: RoundOp[] = [];
  /** Script calls sent and operations carried by rounds (tests, the bench). */
  rounds = 0;
  roundOps = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly o: CasJsonStoreOptions,
  ) {
    if (typeof (redis as unknown as Partial<CasRedis>).stewardCasJson !== 'function') redis.defineCommand('stewardCasJson', { numberOfKeys: 1, lua: CAS_SCRIPT });
    if (o.batch && typeof (redis as unknown as Partial<CasRedis>).stewardCasRound !== 'function') redis.defineCommand('stewardCasRound', { lua: CAS_ROUND_SCRIPT });
  }

  async read(key: string, nowMs: number): Promise<CasRead<T>> {
    let text: string;
    try {
      text = this.o.batch ? (((await this.queue(key, 'g', '', '')) as string | null) ?? '') : ((await this.redis.get(key)) ?? '');
    } catch (e) {
      throw redisAdapterError(e, this.o.what);
    }
    return { text, value: this.live(text, nowMs) };
  }

  /**
   * Writes `value` when the key still holds `expected` (a read's text; compared by its SHA-1 in Redis). False when it changed meanwhile: the
   * caller reads again and recomputes (in a stream stage: a retryable error, the input is processed again).
   */
  async compareAndSet(key: string, expected: string, value: T, nowMs: number): Promise<boolean> {
    const env: Envelope<T> = { v: 1, updated_ms: nowMs, value };
    const digest = expected === '' ? '' : createHash('sha1').update(expected, 'utf8').digest('hex');
    try {
      if (this.o.batch) return (await this.queue(key, 'c', digest, JSON.stringify(env))) === 1;
      return (await (this.redis as unknown as CasRedis).stewardCasJson(key, digest, JSON.stringify(env), String(this.o.ttlMs))) === 1;
    } catch (e) {
      throw redisAdapterError(e, this.o.what);
    }
  }

  /** read → fn → compareAndSet until it holds (at most `attempts` times; then a retryable error). */
  async update(key: string, nowMs: number, fn: (prev: T | undefined) => T, attempts = 16): Promise<T> {
    for (let i = 0; i < attempts; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** i)));
      const r = await this.read(key, nowMs);
      const next = fn(r.value);
      if (await this.compareAndSet(key, r.text, next, nowMs)) return next;
    }
    throw new StewardError('STEWARD_STATE_UNAVAILABLE', `${this.o.what}: ${key} kept changing under ${attempts} updates`, { retryable: true });
  }

  private queue(key: string, kind: 'g' | 'c', expected: string, next: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // setImmediate, not nextTick: judge answers arrive as separate callbacks of one poll phase, and their
      // writes should share a round too.
      if (this.pending.push({ key, kind, expected, next, resolve, reject }) === 1) setImmediate(this.flush);
    });
  }

  private readonly flush = (): void => {
    const all = this.pending;
    this.pending = [];
    // A script may only touch keys of one slot on a cluster: one call per slot (ioredis routes each by its keys).
    const groups = new Map<number, RoundOp[]>();
    if (isCluster(this.redis)) {
      for (const op of all) {
        const sl = keySlot(op.key);
        const g = groups.get(sl);
        if (g) g.push(op);
        else groups.set(sl, [op]);
      }
    } else groups.set(0, all);
    for (const g of groups.values()) for (let i = 0; i < g.length; i += MAX_ROUND_OPS) this.send(g.slice(i, i + MAX_ROUND_OPS));
  };

  private send(ops: RoundOp[]): void {
    const n = ops.length;
    const args: string[] = new Array(n + 1 + n * 3);
    args[n] = String(this.o.ttlMs);
    for (let i = 0; i < n; i++) {
      const op = ops[i]!;
      args[i] = op.key;
      const b = n + 1 + i * 3;
      args[b] = op.kind;
      args[b + 1] = op.expected;
      args[b + 2] = op.next;
    }
    this.rounds++;
    this.roundOps += n;
    (this.redis as unknown as CasRedis).stewardCasRound(n, ...args).then(
      (res) => {
        for (let i = 0; i < n; i++) {
          const v = res[i];
          if (Array.isArray(v)) ops[i]!.reject(new Error(String(v[0])));
          else ops[i]!.resolve(v ?? null);
        }
      },
      (e: unknown) => {
        for (const op of ops) op.reject(e);
      },
    );
  }

  /** The value a read's text holds at event time `nowMs` (undefined: none, or expired). */
  live(text: string, nowMs: number): T | undefined {
    if (text === '') return undefined;
    let e: Envelope<T>;
    try {
      e = JSON.parse(text) as Envelope<T>;
    } catch {
      return undefined; // not ours or cut short: starts over rather than failing every event
    }
    return e && e.v === 1 && typeof e.updated_ms === 'number' && e.updated_ms + this.o.ttlMs >= nowMs ? e.value : undefined;
  }
}

interface CasRedis {
  stewardCasJson(key: string, expected: string, next: string, pxMs: string): Promise<number>;
  stewardCasRound(numKeys: number, ...keysAndArgs: string[]): Promise<(string | number | null | [string])[]>;
}
