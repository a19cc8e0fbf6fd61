/**
 * One small compare-and-set JSON value store over Redis: a value is written only when the key still holds
 * the text it was computed from, so writers in several processes never lose each other's changes. Values
 * are kept in an envelope `{v: 1, updated_ms, value}`: expiry is on event time (docs/spec-decisions.md D23),
 * a value whose `updated_ms` is older than the TTL at the event's time reads as absent. Redis' own
 * (wall-clock) expiry only collects what nobody reads any more. Used by the ACM run-state store
 * (acm-state-store.ts) and the gate's job store (gate-job-store.ts).
 */
import type { RedisClient } from './client.js';
import { StewardError } from '../../errors.js';

/** SET KEYS[1] to ARGV[2] (PX ARGV[3]) only when it still holds ARGV[1] ('' = absent). 1 = written, 0 = changed meanwhile. */
const CAS_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] ~= '') or (cur ~= false and cur ~= ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

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
}

interface Envelope<T> {
  v: 1;
  updated_ms: number;
  value: T;
}

export class CasJsonStore<T> {
  constructor(
    private readonly redis: RedisClient,
    private readonly o: CasJsonStoreOptions,
  ) {
    if (typeof (redis as unknown as Partial<CasRedis>).stewardCasJson !== 'function') redis.defineCommand('stewardCasJson', { numberOfKeys: 1, lua: CAS_SCRIPT });
  }

  async read(key: string, nowMs: number): Promise<CasRead<T>> {
    let text: string;
    try {
      text = (await this.redis.get(key)) ?? '';
    } catch (e) {
      throw new StewardError('STEWARD_STATE_UNAVAILABLE', `${this.o.what} unavailable: ${(e as Error).message}`, { retryable: true, cause: e });
    }
    return { text, value: this.live(text, nowMs) };
  }

  /**
   * Writes `value` when the key still holds `expected` (a read's text). False when it changed meanwhile: the
   * caller reads again and recomputes (in a stream stage: a retryable error, the input is processed again).
   */
  async compareAndSet(key: string, expected: string, value: T, nowMs: number): Promise<boolean> {
    const env: Envelope<T> = { v: 1, updated_ms: nowMs, value };
    try {
      return (await (this.redis as unknown as CasRedis).stewardCasJson(key, expected, JSON.stringify(env), String(this.o.ttlMs))) === 1;
    } catch (e) {
      throw new StewardError('STEWARD_STATE_UNAVAILABLE', `${this.o.what} unavailable: ${(e as Error).message}`, { retryable: true, cause: e });
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

  private live(text: string, nowMs: number): T | undefined {
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
}
