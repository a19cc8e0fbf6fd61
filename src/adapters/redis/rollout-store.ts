/**
 * Shared rollout state in Redis (docs/rollout.md "Shared state"): one hash per blueprint name, an index set,
 * and per-arm counters per generation and window. Every Steward instance reads the same state, so an agent's
 * arm (a pure function of the percentage, engine/rollout/arm.ts) is the same everywhere; a change bumps the
 * generation, which starts fresh counters and voids a rollback computed on the old one.
 *
 * Keys (prefix P; the state keys share the hash slot tag {rollout} for the scripts on Redis Cluster):
 * P {rollout}:names (set) · P {rollout}:bp:<name> (hash: stable, canary, percent, gen, updated_at_ms, reason) ·
 * P rollout:ctr:<name>:<gen>:<windowMs>:<windowStart> (hash: <arm>:<count>).
 */
import { redisCall, type RedisClient } from './client.js';
import type { RolloutState } from '../../engine/rollout/arm.js';
import { EMPTY_COUNTS, type ArmCounts } from '../../engine/rollout/triggers.js';
import { StewardError } from '../../errors.js';

// KEYS[1] state hash, KEYS[2] names set; ARGV: name, stable, canary, percent, at, reason, only-if-absent.
// Bumps gen; 0 when only-if-absent and the rollout exists.
const SET_SCRIPT = `
if ARGV[7] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local gen = redis.call('HINCRBY', KEYS[1], 'gen', 1)
redis.call('HSET', KEYS[1], 'stable', ARGV[2], 'canary', ARGV[3], 'percent', ARGV[4], 'updated_at_ms', ARGV[5], 'reason', ARGV[6])
redis.call('SADD', KEYS[2], ARGV[1])
return gen`;

// KEYS[1] state hash; ARGV: expected gen, at, reason. 0% only if the state is still that generation and above 0.
const ROLLBACK_SCRIPT = `
local gen = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
local pct = tonumber(redis.call('HGET', KEYS[1], 'percent') or '0')
if gen ~= tonumber(ARGV[1]) or pct <= 0 then return {0, gen, tostring(pct)} end
redis.call('HSET', KEYS[1], 'percent', '0', 'updated_at_ms', ARGV[2], 'reason', ARGV[3])
local g2 = redis.call('HINCRBY', KEYS[1], 'gen', 1)
return {1, g2, tostring(pct)}`;

type Scripted = RedisClient & {
  stewardRolloutSet(key: string, names: string, name: string, stable: string, canary: string, percent: string, at: number, reason: string, onlyIfAbsent: string): Promise<number>;
  stewardRolloutBack(key: string, gen: number, at: number, reason: string): Promise<[number, number, string]>;
};

const COUNT_FIELDS = Object.keys(EMPTY_COUNTS) as (keyof ArmCounts)[];

export interface RollbackResult {
  /** True for the one caller whose compare-and-set moved the canary to 0 %. */
  won: boolean;
  generation: number;
  fromPercent: number;
}

export class RedisRolloutStore {
  private readonly r: Scripted;

  constructor(redis: RedisClient, private readonly prefix = '') {
    this.r = redis as Scripted;
    if (!('stewardRolloutSet' in redis)) {
      redis.defineCommand('stewardRolloutSet', { numberOfKeys: 2, lua: SET_SCRIPT });
      redis.defineCommand('stewardRolloutBack', { numberOfKeys: 1, lua: ROLLBACK_SCRIPT });
    }
  }

  private key(name: string): string {
    return `${this.prefix}{rollout}:bp:${name}`;
  }

  counterKey(name: string, generation: number, windowMs: number, windowStart: number): string {
    return `${this.prefix}rollout:ctr:${name}:${generation}:${windowMs}:${windowStart}`;
  }

  async list(): Promise<RolloutState[]> {
    // Through redisCall: a raw ioredis error (Redis down, a MOVED the client could not follow) reached the operator as
    // a stack trace instead of a StewardError with its code.
    const names = (await redisCall('rollout state (list)', () => this.r.smembers(`${this.prefix}{rollout}:names`))).sort();
    if (names.length === 0) return [];
    const p = this.r.pipeline();
    for (const n of names) p.hgetall(this.key(n));
    const res = (await redisCall('rollout state (list)', () => p.exec())) ?? [];
    const out: RolloutState[] = [];
    names.forEach((name, i) => {
      const [err, h] = res[i] ?? [];
      if (err) throw new StewardError('STEWARD_STATE_UNAVAILABLE', `rollout state of ${name}: ${err.message}`, { retryable: true, cause: err });
      const s = h as Record<string, string>;
      if (!s || s.stable === undefined) return;
      out.push({ name, stableVersion: s.stable, canaryVersion: s.canary, percent: Number(s.percent), generation: Number(s.gen), updatedAtMs: Number(s.updated_at_ms), reason: s.reason || undefined });
    });
    return out;
  }

  async get(name: string): Promise<RolloutState | undefined> {
    return (await this.list()).find((s) => s.name === name);
  }

  async set(name: string, v: { stableVersion: string; canaryVersion: string; percent: number }, atMs: number, reason: string): Promise<RolloutState> {
    if (!(v.percent >= 0 && v.percent <= 100)) throw new StewardError('STEWARD_ROLLOUT_PERCENT', `rollout percent must be 0..100, got ${v.percent}`);
    const gen = await redisCall('rollout state (set)', () => this.r.stewardRolloutSet(this.key(name), `${this.prefix}{rollout}:names`, name, v.stableVersion, v.canaryVersion, String(v.percent), atMs, reason, '0'));
    return { name, ...v, generation: Number(gen), updatedAtMs: atMs, reason };
  }

  /** Starts a rollout unless one of that name exists (any instance, any state): a blueprint's declared first stage. */
  async initIfAbsent(name: string, v: { stableVersion: string; canaryVersion: string; percent: number }, atMs: number, reason: string): Promise<RolloutState | undefined> {
    if (!(v.percent >= 0 && v.percent <= 100)) throw new StewardError('STEWARD_ROLLOUT_PERCENT', `rollout percent must be 0..100, got ${v.percent}`);
    const gen = Number(await this.r.stewardRolloutSet(this.key(name), `${this.prefix}{rollout}:names`, name, v.stableVersion, v.canaryVersion, String(v.percent), atMs, reason, '1'));
    return gen === 0 ? undefined : { name, ...v, generation: gen, updatedAtMs: atMs, reason };
  }

  /** Canary to 0 % if the rollout is still at `generation` (exactly one concurrent caller wins). */
  async rollback(name: string, generation: number, atMs: number, reason: string): Promise<RollbackResult> {
    const [won, gen, pct] = await redisCall('rollout state (rollback)', () => this.r.stewardRolloutBack(this.key(name), generation, atMs, reason));
    return { won: Number(won) === 1, generation: Number(gen), fromPercent: Number(pct) };
  }

  /**
   * Adds counts per counter key and returns every touched key's totals after the add: one pipeline per key, all
   * sent at once. A flush's keys (one per rollout, generation and window) hash to different slots, and ioredis
   * Cluster refuses a pipeline whose keys live on different nodes ("All keys in the pipeline should belong to the
   * same slots allocation group"): one pipeline for all of them failed every flush on a cluster, so the rollback
   * triggers were never evaluated there (test/integration/redis-cluster/rollout-counters.int.test.ts).
   */
  async addCounts(adds: ReadonlyMap<string, { arm: string; counts: ArmCounts }[]>, ttlMs: number): Promise<CountsAdded> {
    const perKey = [...adds].map(async ([key, list]): Promise<[string, Record<string, ArmCounts>]> => {
      const p = this.r.pipeline();
      for (const { arm, counts } of list) for (const f of COUNT_FIELDS) if (counts[f] > 0) p.hincrby(key, `${arm}:${f}`, counts[f]);
      p.pexpire(key, ttlMs);
      p.hgetall(key);
      const res = (await redisCall('rollout counters', () => p.exec())) ?? [];
      const firstErr = res.find(([e]) => e)?.[0];
      if (firstErr) throw new StewardError('STEWARD_STATE_UNAVAILABLE', `rollout counters: ${firstErr.message}`, { retryable: true, cause: firstErr });
      return [key, parseCounts(res[res.length - 1]?.[1] as Record<string, string>)];
    });
    // Every key's pipeline settles, and each key's outcome is its own: a key whose pipeline failed is reported (the
    // monitor sends its counts again), one that succeeded is applied and must not be sent again — on a cluster one
    // master may fail while the others apply (merging the whole flush back counted the others again every flush).
    const settled = await Promise.allSettled(perKey);
    const totals = new Map<string, Record<string, ArmCounts>>();
    const failed = new Map<string, unknown>();
    const keys = [...adds.keys()];
    settled.forEach((r, i) => (r.status === 'fulfilled' ? totals.set(r.value[0], r.value[1]) : failed.set(keys[i]!, r.reason)));
    return { totals, failed };
  }

  async readCounts(key: string): Promise<Record<string, ArmCounts>> {
    return parseCounts(await this.r.hgetall(key));
  }
}

/** What addCounts applied: each applied key's totals after the add, and the keys whose add failed (not applied). */
export interface CountsAdded {
  totals: Map<string, Record<string, ArmCounts>>;
  failed: Map<string, unknown>;
}

function parseCounts(h: Record<string, string> | undefined): Record<string, ArmCounts> {
  const out: Record<string, ArmCounts> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    const at = k.lastIndexOf(':');
    const arm = k.slice(0, at);
    const f = k.slice(at + 1) as keyof ArmCounts;
    if (!COUNT_FIELDS.includes(f)) continue;
    (out[arm] ??= { ...EMPTY_COUNTS })[f] = Number(v);
  }
  return out;
}
