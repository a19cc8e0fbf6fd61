/**
 * Trust-debt stage: final interventions → TrustDebtStore.apply (Redis, atomic, idempotent by event id =
 * trace_id) → acgp.trust-debt. Inputs: acgp.verdicts (every scored trace), acgp.decisions with
 * `halted: true` (halted traces are never scored, so their decision is final), and acgp.reviews.
 * Redis outages are retryable: the partition waits and the update is applied once Redis returns.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { DecisionMessage, ReviewMessage, TrustDebtMessage, VerdictMessage } from '../adapters/kafka/messages.js';
import { StewardError } from '../errors.js';
import type { Intervention, TrustDebtConfig, TrustDebtLevel } from '../engine/types.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { StageOutput, StageProcessor } from './common.js';

/** Structural copy of the trust-debt contract (src/engine/trust-debt/index.ts). */
export interface TrustDebtEventLike {
  eventId: string;
  tenant: string;
  agentId: string;
  atMs: number;
  kind: 'intervention' | 'review_approved' | 'remediation_granted' | 'audit_credit';
  intervention?: Intervention;
  severity?: string;
  credit?: number;
}
export interface TrustDebtChangeLike {
  eventId: string;
  tenant: string;
  agentId: string;
  atMs: number;
  cause: string;
  before: number;
  after: number;
  level: TrustDebtLevel;
  previousLevel: TrustDebtLevel;
  crossings: { threshold: string; direction: 'up' | 'down' }[];
  duplicate: boolean;
  audits?: TrustDebtChangeLike[];
}
export interface TrustDebtStoreLike {
  apply(ev: TrustDebtEventLike, cfg: TrustDebtConfig): Promise<TrustDebtChangeLike>;
}

export interface TrustDebtStageDeps {
  store: TrustDebtStoreLike;
  /** The trust-debt settings of the blueprint that decided (by blueprint id), default when unknown. */
  configFor: (blueprintId: string | undefined, tenant: string, agentId: string) => TrustDebtConfig;
  /** Tenant of an agent for reviews that do not carry one (from the agent registry). */
  tenantOf: (agentId: string) => string;
  topics: TopicNames;
  metrics: StewardMetrics;
}

function parseJson<T>(m: InMessage, what: string): T {
  if (m.value === null) throw new StewardError('STEWARD_TRACE_JSON', `empty ${what}`);
  try {
    return JSON.parse(m.value.toString('utf8')) as T;
  } catch (e) {
    throw new StewardError('STEWARD_TRACE_JSON', `malformed ${what}: ${(e as Error).message}`);
  }
}

function timeOf(ts: string | number | undefined, m: InMessage): number {
  const t = typeof ts === 'number' ? ts : typeof ts === 'string' ? Date.parse(ts) : NaN;
  return Number.isFinite(t) ? t : m.timestampMs;
}

export function trustDebtMessage(c: TrustDebtChangeLike): TrustDebtMessage {
  return {
    event_id: c.eventId,
    tenant: c.tenant,
    agent_id: c.agentId,
    at_ms: c.atMs,
    cause: c.cause,
    before: c.before,
    after: c.after,
    level: c.level,
    previous_level: c.previousLevel,
    crossings: c.crossings,
    duplicate: c.duplicate,
  };
}

export class TrustDebtProcessor implements StageProcessor {
  readonly stage = 'trust-debt';
  readonly inputTopics: string[];

  constructor(private readonly d: TrustDebtStageDeps) {
    this.inputTopics = [d.topics.verdicts, d.topics.decisions, d.topics.reviews];
  }

  /** The event a message stands for, or undefined when it moves nothing (a non-halted decision). */
  toEvent(m: InMessage): { ev: TrustDebtEventLike; blueprint?: string } | undefined {
    const t = this.d.topics;
    if (m.topic === t.verdicts) {
      const v = parseJson<VerdictMessage>(m, 'verdict');
      if (!v || typeof v.trace_id !== 'string' || typeof v.agent_id !== 'string') throw new StewardError('STEWARD_TRACE_SCHEMA', 'verdict lacks trace_id/agent_id');
      return {
        ev: { eventId: v.trace_id, tenant: v.tenant || this.d.tenantOf(v.agent_id), agentId: v.agent_id, atMs: v.event_time_ms ?? m.timestampMs, kind: 'intervention', intervention: v.intervention, severity: v.severity },
        blueprint: v.blueprint,
      };
    }
    if (m.topic === t.decisions) {
      const d = parseJson<DecisionMessage>(m, 'decision');
      if (!d || d.halted !== true || d.fallback) return undefined;
      return {
        ev: { eventId: d.trace_id, tenant: d.tenant || this.d.tenantOf(d.agent_id), agentId: d.agent_id, atMs: d.event_time_ms ?? m.timestampMs, kind: 'intervention', intervention: d.intervention, severity: d.severity },
        blueprint: d.blueprint,
      };
    }
    if (m.topic === t.reviews) {
      const r = parseJson<ReviewMessage>(m, 'review');
      const kinds = ['review_approved', 'remediation_granted', 'audit_credit'];
      if (!r || typeof r.event_id !== 'string' || typeof r.agent_id !== 'string' || !kinds.includes(r.kind)) {
        throw new StewardError('STEWARD_TRACE_SCHEMA', `review needs event_id, agent_id and kind (${kinds.join('|')})`);
      }
      return { ev: { eventId: r.event_id, tenant: r.tenant ?? this.d.tenantOf(r.agent_id), agentId: r.agent_id, atMs: timeOf(r.timestamp, m), kind: r.kind, credit: r.credit } };
    }
    return undefined;
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const e = this.toEvent(m);
    if (!e) return [];
    const change = await this.d.store.apply(e.ev, this.d.configFor(e.blueprint, e.ev.tenant, e.ev.agentId));
    this.d.metrics.trustDebt.set({ tenant: change.tenant, agent_id: change.agentId }, change.after);
    // Good-behaviour audit credits that fell due first are events of their own (own event ids).
    const all = [...(change.audits ?? []), change];
    return all.map((c) => ({ topic: this.d.topics.trustDebt, message: { key: c.agentId, value: JSON.stringify(trustDebtMessage(c)) } }));
  }
}
