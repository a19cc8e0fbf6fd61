/**
 * The finalization gate's per-job state in Redis (GateJobStore, src/engine/gate/types.ts): one JSON value per
 * job, updated by compare-and-set so two gate instances (or a tripwire stage recording a tool call while the
 * gate decides an answer) never lose each other's writes. Keys carry the agent in a hash tag, so a job's key
 * and its agent's other keys share a Redis Cluster slot.
 *
 * Expiry is on event time (docs/spec-decisions.md D23): a state whose `updated_ms` is older than the TTL at the
 * event's time reads as absent. Redis' own (wall-clock) expiry only collects what nobody reads any more.
 */
import type { Redis } from 'ioredis';
import type { GateJobKey, GateJobState, GateJobStore } from '../../engine/gate/types.js';
import { StewardError } from '../../errors.js';

/** SET the key to ARGV[2] (PX ARGV[3]) only when it still holds ARGV[1] ('' = absent). 1 = written, 0 = changed meanwhile. */
const CAS_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] ~= '') or (cur ~= false and cur ~= ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

export interface RedisGateJobStoreOptions {
  prefix: string;
  /** Event-time TTL of an idle job (default 24 h). */
  ttlMs?: number;
  /** Compare-and-set attempts before the update fails as retryable (default 16). */
  maxAttempts?: number;
}

export class RedisGateJobStore implements GateJobStore {
  private readonly ttlMs: number;
  private readonly maxAttempts: number;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly lastRead = new Map<string, string | undefined>();

  constructor(
    private readonly redis: Redis,
    private readonly o: RedisGateJobStoreOptions,
  ) {
    this.ttlMs = o.ttlMs ?? 24 * 3_600_000;
    this.maxAttempts = o.maxAttempts ?? 16;
    if (typeof (redis as unknown as Partial<CasRedis>).stewardGateCas !== 'function') redis.defineCommand('stewardGateCas', { numberOfKeys: 1, lua: CAS_SCRIPT });
  }

  key(k: GateJobKey): string {
    const e = encodeURIComponent;
    return `${this.o.prefix}gate:{${e(k.tenant)}:${e(k.agentId)}}:${e(k.jobId)}`;
  }

  async get(key: GateJobKey, nowMs: number): Promise<GateJobState | undefined> {
    const k = this.key(key);
    const text = await this.read(k);
    // A read is usually followed by an update of the same job (the gate reads, judges, then records): its
    // compare-and-set starts from this text instead of reading again, and simply retries if it changed.
    this.lastRead.delete(k);
    this.lastRead.set(k, text);
    if (this.lastRead.size > 10_000) this.lastRead.delete(this.lastRead.keys().next().value as string);
    return this.live(text, nowMs);
  }

  async update(key: GateJobKey, nowMs: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState> {
    const k = this.key(key);
    // Updates of one job from this process run one after another (no compare-and-set retries among them);
    // compare-and-set is left to settle writers in other processes.
    const prev = this.queues.get(k) ?? Promise.resolve();
    const run = prev.then(
      () => this.casLoop(k, key, nowMs, fn),
      () => this.casLoop(k, key, nowMs, fn),
    );
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(k, tail);
    void tail.then(() => {
      if (this.queues.get(k) === tail) this.queues.delete(k);
    });
    return run;
  }

  private async casLoop(k: string, key: GateJobKey, nowMs: number, fn: (prev: GateJobState | undefined) => GateJobState): Promise<GateJobState> {
    for (let i = 0; i < this.maxAttempts; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** i)));
      const known = i === 0 && this.lastRead.has(k);
      const text = known ? this.lastRead.get(k) : await this.read(k);
      this.lastRead.delete(k);
      const next = fn(this.live(text, nowMs));
      const nextText = JSON.stringify(next);
      // Unchanged from a fresh read: nothing to write. From the remembered read, the set below confirms it is current.
      if (nextText === text && !known) return next;
      const written = await (this.redis as unknown as CasRedis).stewardGateCas(k, text ?? '', nextText, String(this.ttlMs));
      if (written === 1) return next;
    }
    throw new StewardError('STEWARD_STATE_UNAVAILABLE', `gate job ${key.jobId}: state kept changing under ${this.maxAttempts} updates`, { retryable: true });
  }

  private async read(k: string): Promise<string | undefined> {
    try {
      return (await this.redis.get(k)) ?? undefined;
    } catch (e) {
      throw new StewardError('STEWARD_STATE_UNAVAILABLE', `gate job state unavailable: ${(e as Error).message}`, { retryable: true, cause: e });
    }
  }

  private live(text: string | undefined, nowMs: number): GateJobState | undefined {
    if (text === undefined) return undefined;
    let s: GateJobState;
    try {
      s = JSON.parse(text) as GateJobState;
    } catch {
      return undefined; // not ours or cut short: the job starts over rather than failing every answer
    }
    return s && s.v === 1 && s.updated_ms + this.ttlMs >= nowMs ? s : undefined;
  }
}

interface CasRedis {
  stewardGateCas(key: string, expected: string, next: string, pxMs: string): Promise<number>;
}
