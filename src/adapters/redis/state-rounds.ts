/**
 * The decision path's Redis work, batched (issue #23, spec-decisions D28, docs/pipeline.md "Batched state"):
 * rate-window hits and trust-debt state reads issued in one event-loop turn — the stage decides the agents of a
 * chunk concurrently, so a turn holds the next state step of every lane — go to Redis as one script call per hash
 * slot (all of them in one call on a standalone Redis), the calls of different slots served by one cluster node in
 * one pipeline. ioredis' auto-pipelining is off for this script (client.ts): the rounds batch per turn already. The script applies a call's operations in the order they were issued, so
 * an agent's hits keep the order of its traces: a lane issues its next operation only after the previous one
 * answered, and one agent's keys share one slot. The decision each agent gets is the one sequential
 * evaluation gives (test/integration/redis-cluster/batched-state.int.test.ts compares them).
 *
 * `batch: false` sends every operation as its own script call (what bench/pipeline/redis-batching.ts measures
 * against).
 */
import { StewardError } from '../../errors.js';
import type { Cluster } from 'ioredis';
import { isCluster, redisFailureKind, type RedisClient } from './client.js';
import { keySlot } from './slots.js';

// KEYS[i]: the operation's key. ARGV[5i-4..5i]: kind ('h' rate hit, 'r' trust-debt read), now, window, hitId, keep.
// 'h' is exactly the single-window script of RedisStateStore (prune, add once, count, keep alive) and answers
// the count; 'r' answers HMGET d t w lv la n of the agent's trust-debt hash. A failing operation answers
// 'ERR <message>' in its place instead of failing the others.
// ZADD comes before the prune (same result: a hit id always comes with the same event time, so the prune never
// removes the hit just added) because Redis checks maxmemory only up to a script's first write: after a prune
// (a write that never needs memory) a full Redis let the ZADD through, and rate windows grew past maxmemory
// while every other write was refused (#22 item 10, spec-decisions D32).
export const ROUND_LUA = `
local out = {}
for i = 1, #KEYS do
  local b = (i - 1) * 5
  local k = KEYS[i]
  local ok, res = pcall(function()
    if ARGV[b + 1] == 'r' then return redis.call('HMGET', k, 'd', 't', 'w', 'lv', 'la', 'n') end
    local now = tonumber(ARGV[b + 2])
    local win = tonumber(ARGV[b + 3])
    local keep = tonumber(ARGV[b + 5])
    redis.call('ZADD', k, 'NX', now, ARGV[b + 4])
    redis.call('ZREMRANGEBYSCORE', k, '-inf', now - keep)
    local c = redis.call('ZCOUNT', k, '(' .. (now - win), '+inf')
    local ttl = redis.call('PTTL', k)
    if ttl < keep then redis.call('PEXPIRE', k, keep) end
    return c
  end)
  if ok then out[i] = res else out[i] = 'ERR ' .. tostring(type(res) == 'table' and (res.err or res) or res) end
end
return out
`;

export type RoundOp = { kind: 'h'; key: string; now: number; win: number; hitId: string; keep: number } | { kind: 'r'; key: string };

interface Pending {
  op: RoundOp;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

// Keys and arguments go as one array (ioredis flattens a command's arguments): spreading ~6 per operation through
// ioredis' script wrappers was copied twice per call.
type RoundRedis = RedisClient & { stewardStateRound(numKeys: number, keysAndArgs: (string | number)[]): Promise<unknown[]> };

export interface RedisStateRoundsOptions {
  /** Batch the operations of one turn (default true); false: one script call per operation. */
  batch?: boolean;
  /** Most operations in one script call (default 512): a script blocks its Redis while it runs. */
  maxOps?: number;
}

export class RedisStateRounds {
  private readonly redis: RoundRedis;
  private readonly cluster: boolean;
  private readonly batch: boolean;
  private readonly maxOps: number;
  private pending: Pending[] = [];
  /** Script calls sent and operations carried (for the bench and tests). */
  calls = 0;
  ops = 0;

  constructor(redis: RedisClient, opts: RedisStateRoundsOptions = {}) {
    if (typeof (redis as unknown as Partial<RoundRedis>).stewardStateRound !== 'function') redis.defineCommand('stewardStateRound', { lua: ROUND_LUA });
    this.redis = redis as unknown as RoundRedis;
    this.cluster = isCluster(redis);
    this.batch = opts.batch ?? true;
    this.maxOps = Math.max(1, opts.maxOps ?? 512);
  }

  /** Queues `op` for this turn's round; resolves with its reply (a count, or HMGET's list). */
  run(op: RoundOp): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const p: Pending = { op, resolve, reject };
      if (!this.batch) return this.send([p]);
      if (this.pending.push(p) === 1) process.nextTick(this.flush);
    });
  }

  private readonly flush = (): void => {
    const all = this.pending;
    this.pending = [];
    if (!this.cluster) {
      for (let i = 0; i < all.length; i += this.maxOps) this.send(all.slice(i, i + this.maxOps));
      return;
    }
    const bySlot = new Map<number, Pending[]>();
    for (const p of all) {
      const sl = keySlot(p.op.key);
      let g = bySlot.get(sl);
      if (!g) bySlot.set(sl, (g = []));
      g.push(p);
    }
    // One script call per slot; the calls of slots served by one master leave in one pipeline (one write).
    const byNode = new Map<string, Pending[][]>();
    const slots = (this.redis as unknown as Cluster).slots;
    for (const [sl, g] of bySlot) {
      // slot map not known yet (still connecting): a call of its own, routed by ioredis
      const node = slots[sl]?.[0] ?? `slot:${sl}`;
      let calls = byNode.get(node);
      if (!calls) byNode.set(node, (calls = []));
      for (let i = 0; i < g.length; i += this.maxOps) calls.push(g.slice(i, i + this.maxOps));
    }
    for (const calls of byNode.values()) {
      if (calls.length === 1) {
        this.send(calls[0]!);
        continue;
      }
      const pipe = this.redis.pipeline() as unknown as { stewardStateRound(n: number, a: (string | number)[]): void; exec(): Promise<[Error | null, unknown][] | null> };
      for (const c of calls) {
        const [n, args] = this.encode(c);
        pipe.stewardStateRound(n, args);
      }
      pipe.exec().then(
        (res) => calls.forEach((c, i) => {
          const [err, v] = res?.[i] ?? [new Error('no reply'), undefined];
          if (err) this.fail(c, err);
          else this.settle(c, v as unknown[]);
        }),
        (e: unknown) => calls.forEach((c) => this.fail(c, e)),
      );
    }
  };

  private encode(batch: Pending[]): [number, (string | number)[]] {
    const n = batch.length;
    const args: (string | number)[] = new Array(n * 6);
    for (let i = 0; i < n; i++) {
      const op = batch[i]!.op;
      args[i] = op.key;
      const b = n + i * 5;
      if (op.kind === 'h') {
        args[b] = 'h';
        args[b + 1] = op.now;
        args[b + 2] = op.win;
        args[b + 3] = op.hitId;
        args[b + 4] = op.keep;
      } else {
        args[b] = 'r';
        args[b + 1] = args[b + 2] = args[b + 3] = args[b + 4] = '';
      }
    }
    this.calls++;
    this.ops += n;
    return [n, args];
  }

  private send(batch: Pending[]): void {
    const [n, args] = this.encode(batch);
    this.redis.stewardStateRound(n, args).then(
      (res) => this.settle(batch, res),
      (e: unknown) => this.fail(batch, e),
    );
  }

  private settle(batch: Pending[], res: unknown[]): void {
    // One answer per operation, always (the script never returns a nil element). A reply of another length is not
    // this call's: fail the call (retryable) rather than hand an operation someone else's answer or undefined.
    if (!Array.isArray(res) || res.length !== batch.length) {
      return this.fail(batch, new Error(`state round answered ${Array.isArray(res) ? `${res.length} replies` : typeof res} for ${batch.length} operations`));
    }
    for (let i = 0; i < batch.length; i++) {
      const v = res[i];
      if (typeof v === 'string' && v.startsWith('ERR')) batch[i]!.reject(stateUnavailable(new Error(v.slice(4))));
      else batch[i]!.resolve(v);
    }
  }

  private fail(batch: Pending[], e: unknown): void {
    const err = stateUnavailable(e);
    for (const p of batch) p.reject(err);
  }
}

export function stateUnavailable(e: unknown): StewardError {
  // A script error or a write refused at maxmemory (OOM) is not retried for ever: it repeats until an operator
  // acts, so the check that needed the state fails closed as a dependency failure (spec-decisions D20, D32).
  const kind = redisFailureKind(e);
  const text = e instanceof Error ? e.message : String(e);
  if (kind === 'oom') return new StewardError('STEWARD_STATE_OOM', `redis state store (out of memory, not retried): ${text}`, { cause: e });
  if (kind === 'script') return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis state store (fails on every retry, not retried): ${text}`, { cause: e });
  return new StewardError('STEWARD_STATE_UNAVAILABLE', `redis state store: ${text}`, { retryable: true, cause: e });
}
