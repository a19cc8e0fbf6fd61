/**
 * The finalization gate's per-job state in Redis (GateJobStore, src/engine/gate/types.ts): one JSON value per
 * job in the compare-and-set store (cas-json-store.ts), so two gate instances (or a tripwire stage recording a
 * tool call while the gate decides an answer) never lose each other's writes; expiry is on event time
 * (docs/spec-decisions.md D23). Keys carry the agent in a hash tag, so a job's key and its agent's other keys
 * share a Redis Cluster slot. Beside the jobs, one value per agent: its index of rewrite-only jobs
 * (`<prefix>gate-agent:{<tenant>:<agent>}`, src/engine/gate/agent-index.ts, spec-decisions D45), same slot.
 */
import type { RedisClient } from './client.js';
import type { GateAgentKey, GateAgentState, GateJobKey, GateJobState, GateJobStore } from '../../engine/gate/types.js';
import { StewardError } from '../../errors.js';
import { CasJsonStore, type CasRead } from './cas-json-store.js';

export interface RedisGateJobStoreOptions {
  prefix: string;
  /** Event-time TTL of an idle job (default 24 h). */
  ttlMs?: number;
  /** Compare-and-set attempts before the update fails as retryable (default 16). */
  maxAttempts?: number;
  /** Reads and writes of one event-loop iteration in one script call per slot (default true). */
  batch?: boolean;
  /**
   * How long a read of an agent's rewrite-only index is reused (default 250 ms; 0: every job-less tool call reads
   * Redis). The index is read for every job-less tool call of an agent a judge can hold (D45 (2)), which made the
   * tripwire's cost per trace ~1.5x in bench:gate; a directive written by another process is seen within this bound.
   */
  agentReadCacheMs?: number;
  /** Wall clock for the read cache (tests). */
  nowMs?: () => number;
}

export class RedisGateJobStore implements GateJobStore {
  private readonly cas: CasJsonStore<GateJobState>;
  private readonly agentCas: CasJsonStore<GateAgentState>;
  private readonly maxAttempts: number;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly lastRead = new Map<string, CasRead<GateJobState>>();
  /** Recent index reads: key → the read's text (expiry is applied per call, on its event time) and when it was made (wall clock). */
  private readonly agentReads = new Map<string, { at: number; text: Promise<string> }>();

  constructor(
    redis: RedisClient,
    private readonly o: RedisGateJobStoreOptions,
  ) {
    // Batched: the gate stage's lanes read and write their jobs in the same turns (docs/pipeline.md "Gate stage").
    this.cas = new CasJsonStore(redis, { ttlMs: o.ttlMs ?? 24 * 3_600_000, what: 'gate job state', batch: o.batch ?? true });
    this.maxAttempts = o.maxAttempts ?? 16;
    this.agentCas = new CasJsonStore(redis, { ttlMs: o.ttlMs ?? 24 * 3_600_000, what: 'gate agent index', batch: o.batch ?? true });
  }

  agentKey(k: GateAgentKey): string {
    const e = encodeURIComponent;
    return `${this.o.prefix}gate-agent:{${e(k.tenant)}:${e(k.agentId)}}`;
  }

  getAgent(key: GateAgentKey, nowMs: number): Promise<GateAgentState | undefined> {
    const k = this.agentKey(key);
    const ttl = this.o.agentReadCacheMs ?? 250;
    if (ttl <= 0) return this.agentCas.read(k, nowMs).then((r) => r.value);
    const wall = (this.o.nowMs ?? Date.now)();
    let hit = this.agentReads.get(k);
    if (!hit || wall - hit.at >= ttl) {
      if (this.agentReads.size >= 10_000) this.agentReads.clear();
      const text = this.agentCas.read(k, nowMs).then((r) => r.text);
      hit = { at: wall, text };
      this.agentReads.set(k, hit);
      // A failed read is not reused: the next call asks Redis again.
      text.catch(() => {
        if (this.agentReads.get(k)?.text === text) this.agentReads.delete(k);
      });
    }
    return hit.text.then((t) => this.agentCas.live(t, nowMs));
  }

  /** Rare (a rewrite directive, the answer after it): plain compare-and-set retries, no per-key queue. */
  async updateAgent(key: GateAgentKey, nowMs: number, fn: (prev: GateAgentState | undefined) => GateAgentState): Promise<GateAgentState> {
    const k = this.agentKey(key);
    // This process's own write is seen at once (a tripwire and a gate stage in one process).
    this.agentReads.delete(k);
    try {
      return await this.agentCas.update(k, nowMs, fn, this.maxAttempts);
    } finally {
      this.agentReads.delete(k);
    }
  }

  /** Script calls the batched store sent and the reads and writes they carried (tests, the bench). */
  get rounds(): { calls: number; ops: number } {
    return { calls: this.cas.rounds, ops: this.cas.roundOps };
  }

  key(k: GateJobKey): string {
    const e = encodeURIComponent;
    return `${this.o.prefix}gate:{${e(k.tenant)}:${e(k.agentId)}}:${e(k.jobId)}`;
  }

  async get(key: GateJobKey, nowMs: number): Promise<GateJobState | undefined> {
    const k = this.key(key);
    const r = await this.cas.read(k, nowMs);
    // A read is usually followed by an update of the same job (the gate reads, judges, then records): its
    // compare-and-set starts from this read instead of reading again, and simply retries if it changed.
    this.lastRead.delete(k);
    this.lastRead.set(k, r);
    if (this.lastRead.size > 10_000) this.lastRead.delete(this.lastRead.keys().next().value as string);
    return r.value;
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
      const remembered = i === 0 ? this.lastRead.get(k) : undefined;
      this.lastRead.delete(k);
      const r = remembered ?? (await this.cas.read(k, nowMs));
      const next = fn(r.value);
      // Unchanged from a fresh read: nothing to write. From the remembered read, the set below confirms it is current.
      if (!remembered && r.value !== undefined && JSON.stringify(next) === JSON.stringify(r.value)) return next;
      if (await this.cas.compareAndSet(k, r.text, next, nowMs)) return next;
    }
    throw new StewardError('STEWARD_STATE_UNAVAILABLE', `gate job ${key.jobId}: state kept changing under ${this.maxAttempts} updates`, { retryable: true });
  }
}
