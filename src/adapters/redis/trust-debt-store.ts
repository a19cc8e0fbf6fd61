/**
 * Trust debt in Redis (ACGP-1004 §10, the trust-debt stage of docs/architecture.md). One hash per tenant+agent
 * (`{prefix}td:{tenant:agent}`, hash-tagged so the event dedup key lands in the same slot); a Lua
 * script applies due audit credits, lazy decay, the increment, the cap/floor, idempotency and
 * threshold-crossing detection atomically, so any number of steward instances can update one agent.
 * The re-tiering queue, the known-agents set and the audit outbox are kept once per hash slot, next to the
 * agents of that slot (`td-agents:{<slot tag>}`, spec-decisions D28), so every script call touches one slot and
 * the store runs on Redis Cluster as on one Redis; readers (sweep, re-tiering list, outbox drain) visit every
 * slot's copy.
 */
import {
  DEFAULT_TRUST_DEBT_CONFIG,
  HOUR_MS,
  auditEnabled,
  auditEventId,
  causeOf,
  crossingsBetween,
  debtAt,
  deltaFor,
  levelFor,
  resetsWindow,
  type AgentDebtState,
  type RemediationDecision,
  type RemediationRequest,
  type RetierRequest,
  type TrustDebtChange,
  type TrustDebtEvent,
  type TrustDebtStore,
} from '../../engine/trust-debt/index.js';
import type { TrustDebtConfig, TrustDebtLevel } from '../../engine/types.js';
import { APPLY_LUA, RELEASE_LOCK_LUA } from './trust-debt-lua.js';
import { globEscape, isCluster, scanKeys, type RedisClient } from './client.js';
import { keySlot, slotTag } from './slots.js';
import type { RedisStateRounds } from './state-rounds.js';
import { redisError, TrustDebtRequests } from './trust-debt-requests.js';

/** How long processed event ids are remembered (docs/spec-decisions.md §10.7: longer than any Kafka redelivery). */
export const DEFAULT_DEDUP_TTL_SECONDS = 7 * 24 * 3600;

export interface RedisTrustDebtStoreOptions {
  /** Key prefix, e.g. `steward:` (tests use a unique one). */
  prefix: string;
  /** How long a processed event id is remembered for dedup (default 7 days; longer than any redelivery). */
  dedupTtlSeconds?: number;
  /** Agents per pipelined batch in `sweep` (default 200). */
  sweepBatch?: number;
  /** Most events per script call when concurrent applies are batched (default 128). */
  maxBatch?: number;
  /** State reads go through these rounds (shared with RedisStateStore: one call per slot and turn), else one HMGET each. */
  rounds?: RedisStateRounds;
}

interface BatchItem {
  tenant: string;
  agentId: string;
  eventId: string;
  atMs: number;
  delta: number;
  resets: boolean;
  /** TrustDebtEvent.deferAudits */
  defer?: boolean;
  cause: string;
}
interface Pending {
  item: BatchItem;
  resolve: (r: [string, string]) => void;
  reject: (e: unknown) => void;
}
const enc = (s: string) => encodeURIComponent(s);

export class RedisTrustDebtStore implements TrustDebtStore {
  readonly prefix: string;
  private readonly ttl: number;
  private readonly sweepBatch: number;
  private readonly requests: TrustDebtRequests;
  private readonly maxBatch: number;
  private open: { key: string; cfg: TrustDebtConfig; pending: Pending[] }[] = [];
  private readonly cfgKeys = new WeakMap<TrustDebtConfig, string>();
  private flushScheduled = false;
  private readonly cluster: boolean;
  private readonly rounds: RedisStateRounds | undefined;

  constructor(
    private readonly redis: RedisClient,
    opts: RedisTrustDebtStoreOptions,
  ) {
    this.prefix = opts.prefix;
    this.cluster = isCluster(redis);
    this.rounds = opts.rounds;
    this.ttl = opts.dedupTtlSeconds ?? DEFAULT_DEDUP_TTL_SECONDS;
    this.sweepBatch = opts.sweepBatch ?? 200;
    this.maxBatch = Math.max(1, opts.maxBatch ?? 128);
    this.requests = new TrustDebtRequests(redis, this.prefix, (t, a) => this.retierKeyFor(t, a), this.slotKeyPattern('retier-queue'), (ev, cfg) => this.apply(ev, cfg));
  }

  agentKey(tenant: string, agentId: string): string {
    return `${this.prefix}td:{${enc(tenant)}:${enc(agentId)}}`;
  }
  private dedupKey(tenant: string, agentId: string, eventId: string): string {
    return `${this.agentKey(tenant, agentId)}:ev:${eventId}`;
  }
  /** The per-slot copy of a once-global key for the slot of `agentKey` (spec-decisions D28). */
  private slotKey(name: string, agentKey: string): string {
    return `${this.prefix}${name}:{${slotTag(keySlot(agentKey))}}`;
  }
  private slotKeyPattern(name: string): string {
    return `${globEscape(this.prefix)}${name}:{*}`;
  }
  /** The known-agents set of the agent's slot. */
  agentsKeyFor(tenant: string, agentId: string): string {
    return this.slotKey('td-agents', this.agentKey(tenant, agentId));
  }
  retierKeyFor(tenant: string, agentId: string): string {
    return this.slotKey('retier-queue', this.agentKey(tenant, agentId));
  }
  /** Audit credits granted by `sweep`, kept until published (drainAuditOutbox); one list per slot. */
  auditOutboxKeyFor(tenant: string, agentId: string): string {
    return this.slotKey('td-audit-outbox', this.agentKey(tenant, agentId));
  }
  /** Every slot's known-agents set / audit outbox that exists now. */
  agentsKeys(): Promise<string[]> {
    return scanKeys(this.redis, this.slotKeyPattern('td-agents'));
  }
  auditOutboxKeys(): Promise<string[]> {
    return scanKeys(this.redis, this.slotKeyPattern('td-audit-outbox'));
  }
  /** Every known agent ([tenant, agentId], sorted) over all slots: for diagnostics and tests. */
  async knownAgents(): Promise<[string, string][]> {
    const sets = await Promise.all((await this.agentsKeys()).map((k) => this.redis.smembers(k)));
    return sets
      .flat()
      .sort()
      .map((m) => JSON.parse(m) as [string, string]);
  }
  /** Entries waiting in the audit outboxes of all slots. */
  async auditOutboxLength(): Promise<number> {
    const n = await Promise.all((await this.auditOutboxKeys()).map((k) => this.redis.llen(k)));
    return n.reduce((x, y) => x + y, 0);
  }
  get sweepLockKey(): string {
    return `${this.prefix}td-sweep-lock`;
  }

  /** The raw stored state (debt at `lastMs`), or undefined for an unknown agent. */
  async state(tenant: string, agentId: string): Promise<AgentDebtState | undefined> {
    let h: (string | null)[];
    try {
      const key = this.agentKey(tenant, agentId);
      h = this.rounds ? ((await this.rounds.run({ kind: 'r', key })) as (string | null)[]) : await this.redis.hmget(key, 'd', 't', 'w', 'lv', 'la', 'n');
    } catch (e) {
      throw redisError(e, 'read');
    }
    if (h[0] === null) return undefined;
    const s: AgentDebtState = { debt: Number(h[0]), lastMs: Number(h[1]), windowMs: Number(h[2]), level: h[3] as TrustDebtLevel, applied: Number(h[5] ?? 0) };
    if (h[4] !== null) s.lastAuditMs = Number(h[4]);
    return s;
  }

  async current(tenant: string, agentId: string, atMs: number, cfg: TrustDebtConfig): Promise<{ debt: number; level: TrustDebtLevel }> {
    const debt = debtAt(await this.state(tenant, agentId), atMs, cfg);
    return { debt, level: levelFor(debt, cfg) };
  }

  private configArgs(mode: 'apply' | 'sweep', cfg: TrustDebtConfig): string[] {
    const audit = auditEnabled(cfg); // the same rule as math.ts: opt-in, see DEFAULT_TRUST_DEBT_CONFIG
    return [
      mode,
      String(cfg.decay.rate),
      String(cfg.decay.periodHours),
      String(cfg.decay.minDebt),
      String(cfg.thresholds.elevatedMonitoring),
      String(cfg.thresholds.restrictedMode),
      String(cfg.thresholds.reTieringReview),
      audit ? '1' : '0',
      // same double as math.ts computes: thresholdHours * HOUR_MS
      String(cfg.recovery.goodBehaviorAudit.thresholdHours * HOUR_MS),
      String(cfg.recovery.goodBehaviorAudit.credit),
      String(this.ttl),
    ];
  }

  /** Runs one script call for a batch of items that share a config; returns per item [dup, payload]. */
  private async runBatch(mode: 'apply' | 'sweep', cfg: TrustDebtConfig, items: BatchItem[]): Promise<[string, string][]> {
    const keys: string[] = [];
    const argv = this.configArgs(mode, cfg);
    for (const it of items) {
      const ak = this.agentKey(it.tenant, it.agentId);
      keys.push(ak, this.dedupKey(it.tenant, it.agentId, it.eventId), this.slotKey('retier-queue', ak), this.slotKey('td-agents', ak), this.slotKey('td-audit-outbox', ak));
      argv.push(String(it.atMs), String(it.delta), String((it.resets ? 1 : 0) + (it.defer ? 2 : 0)), JSON.stringify([it.tenant, it.agentId]), it.cause, it.tenant, it.agentId, it.eventId);
    }
    // EVAL, not EVALSHA: ioredis retries a NOSCRIPT (script cache flushed by a Redis restart) as a later
    // EVAL, which could overtake batches sent after it and reorder an agent's events. Redis still caches
    // the compiled script; the cost is the script text on the wire once per batch.
    const flat = (await this.redis.eval(APPLY_LUA, keys.length, ...keys, ...argv)) as string[];
    const out: [string, string][] = [];
    for (let i = 0; i < items.length; i++) out.push([flat[2 * i]!, flat[2 * i + 1]!]);
    return out;
  }

  /**
   * Concurrent applies issued in the same event-loop turn go to Redis as one batch (one script call).
   * Batches hold consecutive events with the same settings and are sent in call order, so the order in
   * which a caller issued events (per agent: the Kafka partition order) is the order Redis applies them.
   */
  private enqueue(cfg: TrustDebtConfig, item: BatchItem): Promise<[string, string]> {
    return new Promise((resolve, reject) => {
      const key = this.cfgKey(cfg);
      let last = this.open[this.open.length - 1];
      if (!last || last.key !== key || last.pending.length >= this.maxBatch) {
        last = { key, cfg, pending: [] };
        this.open.push(last);
      }
      last.pending.push({ item, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private cfgKey(cfg: TrustDebtConfig): string {
    let k = this.cfgKeys.get(cfg);
    if (k === undefined) {
      k = this.configArgs('apply', cfg).join('|');
      this.cfgKeys.set(cfg, k);
    }
    return k;
  }

  private flush(): void {
    this.flushScheduled = false;
    const batches = this.open;
    this.open = [];
    // runBatch hands its command to ioredis synchronously, so the calls below reach Redis in this order.
    // On a cluster a call holds the events of one slot: an agent's events stay in one call, in order.
    for (const b of batches) for (const part of this.cluster ? bySlot(b.pending, (p) => this.agentKey(p.item.tenant, p.item.agentId)) : [b.pending]) this.send(b.cfg, part);
  }

  private send(cfg: TrustDebtConfig, pending: Pending[]): void {
    this.runBatch(
      'apply',
      cfg,
      pending.map((p) => p.item),
    ).then(
      (res) => pending.forEach((p, i) => p.resolve(res[i]!)),
      (e: unknown) => pending.forEach((p) => p.reject(e)),
    );
  }

  private parse(reply: unknown, meta: { eventId: string; tenant: string; agentId: string }, own: boolean): TrustDebtChange[] {
    const [dup, payload] = reply as [string, string];
    if (!payload) return [];
    const f = payload.split('|');
    const cause = f[0]!;
    const out: TrustDebtChange[] = [];
    for (let i = 1; i + 4 < f.length; i += 5) {
      const atMs = Number(f[i]);
      const level = f[i + 3] as TrustDebtLevel;
      const previousLevel = f[i + 4] as TrustDebtLevel;
      out.push({
        eventId: meta.eventId,
        tenant: meta.tenant,
        agentId: meta.agentId,
        atMs,
        cause,
        before: Number(f[i + 1]),
        after: Number(f[i + 2]),
        level,
        previousLevel,
        crossings: crossingsBetween(previousLevel, level),
        duplicate: dup === '1',
      });
    }
    const audits = own ? out.slice(0, -1) : out;
    for (const a of audits) {
      a.eventId = auditEventId(meta.tenant, meta.agentId, a.atMs);
      a.cause = 'good_behavior_audit';
    }
    if (!own) return audits;
    const main = out[out.length - 1]!;
    if (audits.length > 0) main.audits = audits;
    return [main];
  }

  async apply(ev: TrustDebtEvent, cfg: TrustDebtConfig): Promise<TrustDebtChange> {
    const cause = causeOf(ev);
    if (!cfg.enabled) {
      const { debt, level } = await this.current(ev.tenant, ev.agentId, ev.atMs, cfg);
      return { eventId: ev.eventId, tenant: ev.tenant, agentId: ev.agentId, atMs: ev.atMs, cause, before: debt, after: debt, level, previousLevel: level, crossings: [], duplicate: false };
    }
    let reply: [string, string];
    try {
      reply = await this.enqueue(cfg, { tenant: ev.tenant, agentId: ev.agentId, eventId: ev.eventId, atMs: ev.atMs, delta: deltaFor(ev, cfg), resets: resetsWindow(ev), defer: ev.deferAudits === true, cause });
    } catch (e) {
      throw redisError(e, 'trust-debt apply');
    }
    return this.parse(reply, ev, true)[0]!;
  }

  async sweep(atMs: number, cfgFor: (tenant: string, agentId: string) => TrustDebtConfig): Promise<TrustDebtChange[]> {
    const out: TrustDebtChange[] = [];
    for (const setKey of await this.agentsKeys()) {
      let cursor = '0';
      do {
        const [next, members] = await this.redis.sscan(setKey, cursor, 'COUNT', this.sweepBatch);
        cursor = next;
        const agents = members.map((m) => JSON.parse(m) as [string, string]);
        const replies = await Promise.all(
          agents.map(([tenant, agentId]) =>
            this.runBatch('sweep', cfgFor(tenant, agentId), [{ tenant, agentId, eventId: 'sweep', atMs, delta: 0, resets: false, cause: 'good_behavior_audit' }]).then((r) => r[0]!),
          ),
        );
        replies.forEach((r, i) => {
          const [tenant, agentId] = agents[i]!;
          out.push(...this.parse(r, { eventId: '', tenant, agentId }, false));
        });
      } while (cursor !== '0');
    }
    return out;
  }

  /** Files a remediation request (§10.4.3), idempotent by request id. */
  requestRemediation(tenant: string, agentId: string, req: { requestId: string; reason: string; atMs: number }, cfg: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG): Promise<RemediationRequest> {
    return this.requests.request(tenant, agentId, req, cfg);
  }

  /** Grants or denies a pending request; a grant applies its credit (idempotent by event id). */
  decideRemediation(requestId: string, decision: 'grant' | 'deny', opts: RemediationDecision, cfg: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG): Promise<{ request: RemediationRequest; change?: TrustDebtChange }> {
    return this.requests.decide(requestId, decision, opts, cfg);
  }

  getRemediation(requestId: string): Promise<RemediationRequest | undefined> {
    return this.requests.get(requestId);
  }

  pendingRemediations(tenant?: string): Promise<RemediationRequest[]> {
    return this.requests.pending(tenant);
  }

  retierQueue(limit = 1000): Promise<RetierRequest[]> {
    return this.requests.retierQueue(limit);
  }

  resolveRetier(tenant: string, agentId: string): Promise<RetierRequest[]> {
    return this.requests.resolveRetier(tenant, agentId);
  }

  /**
   * Publishes the audit credits `sweep` left in the outbox (oldest first, up to `limit`) and removes each
   * entry only after `publish` resolved: a credit is published at least once even when a sweeping process
   * dies in between. Concurrent drains may publish an entry twice (same event id; the sink keeps one row).
   */
  async drainAuditOutbox(publish: (changes: TrustDebtChange[]) => Promise<void> | void, limit = 1000): Promise<TrustDebtChange[]> {
    const all: TrustDebtChange[] = [];
    // One slot's outbox at a time: its entries are removed (one MULTI on its one key) after they were published.
    for (const key of await this.auditOutboxKeys()) {
      if (all.length >= limit) break;
      const raw = await this.redis.lrange(key, 0, limit - all.length - 1);
      if (raw.length === 0) continue;
      const changes: TrustDebtChange[] = [];
      for (const s of raw) {
        const o = JSON.parse(s) as { tenant: string; agent: string; p: string };
        changes.push(...this.parse(['0', o.p], { eventId: '', tenant: o.tenant, agentId: o.agent }, false));
      }
      await publish(changes);
      const tx = this.redis.multi();
      for (const s of raw) tx.lrem(key, 1, s);
      await tx.exec();
      all.push(...changes);
    }
    return all;
  }

  /** One sweeper at a time across instances (an optimisation: the script alone prevents double credit). */
  async tryLockSweep(ttlMs: number): Promise<string | undefined> {
    const token = `${process.pid}:${Math.random().toString(36).slice(2)}`;
    const ok = await this.redis.set(this.sweepLockKey, token, 'PX', Math.max(1, Math.floor(ttlMs)), 'NX');
    return ok === 'OK' ? token : undefined;
  }

  async unlockSweep(token: string): Promise<void> {
    await this.redis.eval(RELEASE_LOCK_LUA, 1, this.sweepLockKey, token);
  }
}

/** `items` split by the hash slot of `keyOf(item)`, each part in the original order. */
function bySlot<T>(items: T[], keyOf: (t: T) => string): T[][] {
  const parts = new Map<number, T[]>();
  for (const it of items) {
    const sl = keySlot(keyOf(it));
    let p = parts.get(sl);
    if (!p) parts.set(sl, (p = []));
    p.push(it);
  }
  return [...parts.values()];
}
