/**
 * Trust-debt stage: final interventions → TrustDebtStore.apply (Redis, atomic, idempotent by event id =
 * trace_id) → acgp.trust-debt. Inputs: acgp.verdicts (every scored trace), acgp.decisions with
 * `halted: true` (halted traces are never scored, so their decision is final), and acgp.reviews.
 * Redis outages are retryable: the partition waits and the update is applied once Redis returns.
 *
 * §10.6 threshold actions taken here: every trace gets one log line with the agent, level and debt —
 * at `info` from elevated_monitoring (increased logging), at `debug` below; threshold crossings are logged
 * (`warn` up, `info` down) besides being events. The periodic good-behaviour audit
 * (`startTrustDebtAuditSweep`) runs next to the stage and publishes its credits to acgp.trust-debt.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { DecisionMessage, GateEventMessage, ReviewMessage, TrustDebtMessage, VerdictMessage } from '../contracts/messages.js';
import type { StewardProducer } from '../adapters/kafka/client.js';
import { startAuditSweep, type AuditSweep, type SweepableStore } from './audit-sweep.js';
import { levelActions, levelFor, maxLevel, type TrustDebtChange, type TrustDebtEvent, type TrustDebtStore } from '../engine/trust-debt/index.js';
import { StewardError } from '../errors.js';
import { gateDebtEvent } from '../engine/gate/decide.js';
import type { Logger } from '../logger.js';
import { parseTimestamp } from '../engine/time.js';
import type { TrustDebtConfig } from '../engine/types.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { StageOutput, StageProcessor } from './stage-runner.js';
import { avroSchemaId, type OutputDecoder } from '../adapters/kafka/output-decoder.js';

export interface TrustDebtStageDeps {
  store: Pick<TrustDebtStore, 'apply'>;
  /** The trust-debt settings of the blueprint that decided (by blueprint id), default when unknown. */
  configFor: (blueprintId: string | undefined, tenant: string, agentId: string) => TrustDebtConfig;
  /** Tenant of an agent for reviews that do not carry one (from the agent registry). */
  tenantOf: (agentId: string) => string;
  topics: TopicNames;
  metrics: StewardMetrics;
  /** Per-trace and crossing log lines (§10.6 increased logging); silent when absent. */
  logger?: Logger;
  /**
   * Whether the pipeline is behind by more than the audit sweep's lag (the check that holds the sweep back).
   * A review applied meanwhile leaves due audit credits for later (TrustDebtEvent.deferAudits): it carries
   * wall-clock time, and its lazy audits would credit windows a backlogged non-ok event belongs to.
   */
  pipelineBehind?: () => Promise<boolean>;
  /**
   * Records stamped longer ago than this are dead-lettered (STEWARD_TRUST_DEBT_STALE) instead of applied: an
   * event id is remembered for trust_debt.dedup_ttl_seconds from when it was applied, so a record that old may
   * have been applied already and be replayed now (a new group id, committed offsets expired while the group was
   * idle). See trustDebtMaxRecordAgeMs.
   */
  maxRecordAgeMs?: number;
  /** Wall clock for maxRecordAgeMs (default Date.now). */
  nowMs?: () => number;
  /** Reads decisions and verdicts written in Avro (topics.avro_outputs); absent, they are dead-lettered. */
  outputs?: OutputDecoder;
  /** topics.avro_outputs has `trust_debt`: the acgp.trust-debt value in Avro (output-avro.ts, schema id from start-up); absent: JSON. */
  encodeTrustDebt?: (t: TrustDebtMessage) => Buffer;
}

/**
 * The age up to which a trust-debt input record is applied: six sevenths of the dedup TTL (6 days of 7). The
 * record was stamped when it was produced, before it was first applied, so its event id is still remembered;
 * the seventh left over absorbs clock differences between the producing stage and this one.
 */
export function trustDebtMaxRecordAgeMs(dedupTtlSeconds: number): number {
  return Math.floor((dedupTtlSeconds * 1000 * 6) / 7);
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
  const t = typeof ts === 'number' ? ts : typeof ts === 'string' ? parseTimestamp(ts) : NaN;
  return Number.isFinite(t) ? t : m.timestampMs;
}

export function trustDebtMessage(c: TrustDebtChange, traceId?: string): TrustDebtMessage {
  return {
    event_id: c.eventId,
    trace_id: traceId,
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
    this.inputTopics = [d.topics.verdicts, d.topics.decisions, d.topics.reviews, d.topics.gate];
  }

  /**
   * The event a message stands for, or undefined when it moves nothing (a non-halted decision). `decoded`: the
   * message of an Avro decision or verdict record (process() decodes it through the registry).
   */
  toEvent(m: InMessage, decoded?: DecisionMessage | VerdictMessage): { ev: TrustDebtEvent; blueprint?: string; traceId?: string } | undefined {
    const t = this.d.topics;
    if (m.topic === t.verdicts) {
      const v = (decoded as VerdictMessage | undefined) ?? parseJson<VerdictMessage>(m, 'verdict');
      if (!v || typeof v.trace_id !== 'string' || typeof v.agent_id !== 'string') throw new StewardError('STEWARD_TRACE_SCHEMA', 'verdict lacks trace_id/agent_id');
      if (v.degraded === true) return this.skipDegraded(v);
      return {
        ev: { eventId: v.event_id ?? v.trace_id, tenant: v.tenant || this.d.tenantOf(v.agent_id), agentId: v.agent_id, atMs: v.event_time_ms ?? m.timestampMs, kind: 'intervention', intervention: v.intervention, severity: v.severity },
        blueprint: v.blueprint,
        traceId: v.trace_id,
      };
    }
    if (m.topic === t.decisions) {
      const d = (decoded as DecisionMessage | undefined) ?? parseJson<DecisionMessage>(m, 'decision');
      if (!d || d.halted !== true || d.fallback) return undefined;
      if (d.degraded === true) return this.skipDegraded(d);
      return {
        ev: { eventId: d.event_id ?? d.trace_id, tenant: d.tenant || this.d.tenantOf(d.agent_id), agentId: d.agent_id, atMs: d.event_time_ms ?? m.timestampMs, kind: 'intervention', intervention: d.intervention, severity: d.severity },
        blueprint: d.blueprint,
        traceId: d.trace_id,
      };
    }
    if (m.topic === t.gate) {
      // The gate's judge result carries the movement (docs/spec-decisions.md D21): none for a repair loop or a
      // degraded outcome; finalize_with_limitations weighs as flag; a tier-1 hit as block at critical severity.
      // `steward eval` applies the same event (gateDebtEvent, spec-decisions D50); `blueprint` selects the settings
      // it moves under, as a verdict's does (absent in records from before D50: the defaults).
      const g = parseJson<GateEventMessage>(m, 'gate event');
      if (!g || g.event !== 'final_alignment_judge_result') return undefined;
      const ev = gateDebtEvent(g, this.d.tenantOf, m.timestampMs);
      return ev && { ev, blueprint: typeof g.blueprint === 'string' ? g.blueprint : undefined, traceId: g.trace_id };
    }
    if (m.topic === t.reviews) {
      const r = parseJson<ReviewMessage>(m, 'review');
      const kinds = ['review_approved', 'remediation_granted', 'audit_credit', 'retier_resolved'];
      if (!r || typeof r.event_id !== 'string' || typeof r.agent_id !== 'string' || !kinds.includes(r.kind)) {
        throw new StewardError('STEWARD_TRACE_SCHEMA', `review needs event_id, agent_id and kind (${kinds.join('|')})`);
      }
      if (r.kind === 'retier_resolved') {
        // A re-tiering review outcome (steward review retier resolve): an audit record, no debt movement.
        this.d.logger?.info(
          { event_id: r.event_id, tenant: r.tenant, agent_id: r.agent_id, decision: r.decision, reviewer: r.reviewer, note: r.note },
          're-tiering review resolved',
        );
        return undefined;
      }
      if (r.kind !== 'review_approved' && r.kind !== 'remediation_granted' && r.kind !== 'audit_credit') return undefined;
      // A credit that is not a number would become NaN in the debt arithmetic, which reads as the floor:
      // one malformed review would wipe the agent's debt.
      const credit: unknown = r.credit;
      if (credit !== undefined && credit !== null && !(typeof credit === 'number' && Number.isFinite(credit) && Math.abs(credit) <= 1)) {
        throw new StewardError('STEWARD_TRACE_SCHEMA', `review credit must be a number in [-1, 1], got ${JSON.stringify(credit)?.slice(0, 40)}`);
      }
      if (r.tenant !== undefined && r.tenant !== null && typeof r.tenant !== 'string') throw new StewardError('STEWARD_TRACE_SCHEMA', 'review tenant must be a string');
      return { ev: { eventId: r.event_id, tenant: r.tenant ?? this.d.tenantOf(r.agent_id), agentId: r.agent_id, atMs: timeOf(r.timestamp, m), kind: r.kind, credit: typeof credit === 'number' ? credit : undefined } };
    }
    return undefined;
  }

  /** The message of an Avro decision or verdict record; undefined for JSON (and for the other topics). */
  private async avroOutput(m: InMessage): Promise<DecisionMessage | VerdictMessage | undefined> {
    const kind = m.topic === this.d.topics.verdicts ? 'verdict' : m.topic === this.d.topics.decisions ? 'decision' : undefined;
    const id = kind ? avroSchemaId(m.value) : undefined;
    if (!kind || id === undefined) return undefined;
    if (!this.d.outputs) throw new StewardError('STEWARD_OUTPUT_AVRO', `Avro ${kind} (schema id ${id}) but no schema registry configured`);
    return this.d.outputs.decode(kind, m.value!);
  }

  /** spec-decisions D20: a degraded outcome is recorded and counted, and moves no debt. */
  private skipDegraded(x: { trace_id: string; agent_id: string; intervention: string }): undefined {
    this.d.metrics.degraded.inc({ stage: this.stage, intervention: x.intervention });
    this.d.logger?.warn({ trace_id: x.trace_id, agent_id: x.agent_id, intervention: x.intervention }, 'degraded outcome (a dependency was unavailable): no trust debt');
    return undefined;
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const e = this.toEvent(m, await this.avroOutput(m));
    if (!e) return [];
    if (this.d.maxRecordAgeMs !== undefined) {
      const age = (this.d.nowMs ?? Date.now)() - m.timestampMs;
      if (age > this.d.maxRecordAgeMs) {
        throw new StewardError(
          'STEWARD_TRUST_DEBT_STALE',
          `record is ${Math.round(age / 3_600_000)} h old, beyond ${Math.round(this.d.maxRecordAgeMs / 3_600_000)} h (6/7 of trust_debt.dedup_ttl_seconds): it may have been applied before and its event id forgotten, so it is not applied again (raise the TTL before a restart after a longer outage)`,
        );
      }
    }
    const cfg = this.d.configFor(e.blueprint, e.ev.tenant, e.ev.agentId);
    if (e.ev.kind !== 'intervention' && this.d.pipelineBehind && (await this.d.pipelineBehind())) e.ev.deferAudits = true;
    const change = await this.d.store.apply(e.ev, cfg);
    this.d.metrics.setTrustDebt(change.tenant, change.agentId, change.after, change.level);
    // Good-behaviour audit credits that fell due first are events of their own (own event ids).
    const all = [...(change.audits ?? []), change];
    if (this.d.logger && !change.duplicate) {
      for (const c of all) logCrossings(this.d.logger, c);
      if (e.ev.kind === 'intervention') {
        // The level the trace met (its decayed `before`) or reached, whichever is more severe.
        const level = maxLevel(levelFor(change.before, cfg), change.level);
        this.d.logger[levelActions(level).traceLogLevel](
          {
            trace_id: e.traceId,
            tenant: change.tenant,
            agent_id: change.agentId,
            intervention: e.ev.intervention,
            debt_level: level,
            debt: change.after,
            debt_before: change.before,
            blueprint: e.blueprint,
          },
          level === 'normal' ? 'trace' : `trace of an agent under ${level}`,
        );
      }
    }
    return all.map((c) => toTrustDebtOutput(this.d.topics, c, c === change ? e.traceId : undefined, this.d.encodeTrustDebt));
  }
}

function toTrustDebtOutput(topics: TopicNames, c: TrustDebtChange, traceId?: string, encode?: (t: TrustDebtMessage) => Buffer): StageOutput {
  return { topic: topics.trustDebt, message: { key: c.agentId, value: trustDebtValue(trustDebtMessage(c, traceId), encode) } };
}

/**
 * An acgp.trust-debt value: JSON, or with `encode` (topics.avro_outputs has trust_debt) the change in Avro, or in JSON when it does not fit trust-debt-event.avsc (an at_ms that is not a whole number:
 * a review's fractional epoch timestamp; `at_ms` is a long). The change is already applied in Redis, so it must go
 * out unchanged rather than be dead-lettered or rounded; readers take both encodings on the topic (D42).
 */
export function trustDebtValue(m: TrustDebtMessage, encode?: (t: TrustDebtMessage) => Buffer): Buffer | string {
  if (!encode) return JSON.stringify(m);
  // Only the one known misfit goes out as JSON; any other encoding failure is thrown (a message and its schema that
  // drifted apart must not leave the topic quietly JSON for good).
  if (!Number.isSafeInteger(m.at_ms)) return JSON.stringify(m);
  return encode(m);
}

function logCrossings(logger: Logger, c: TrustDebtChange): void {
  for (const x of c.crossings) {
    const o = { event_id: c.eventId, tenant: c.tenant, agent_id: c.agentId, threshold: x.threshold, direction: x.direction, debt: c.after, cause: c.cause };
    if (x.direction === 'up') logger.warn(o, `trust debt crossed ${x.threshold} upwards`);
    else logger.info(o, `trust debt fell below ${x.threshold}`);
  }
}

export interface TrustDebtSweepDeps {
  store: SweepableStore;
  producer: Pick<StewardProducer, 'send'>;
  topics: TopicNames;
  /** The trust-debt settings of the blueprint selected for the agent (registry + blueprints, as decisions do). */
  cfgFor: (tenant: string, agentId: string) => TrustDebtConfig;
  metrics?: StewardMetrics;
  logger?: Logger;
  /** trust_debt.audit_sweep_interval_ms */
  intervalMs: number;
  /** trust_debt.audit_sweep_lag_ms: credit only windows that ended at least this long ago (event time). */
  lagMs: number;
  now?: () => number;
  /** Partitions of the pipeline still holding records from before a cutoff (see AuditSweepOptions). */
  backlogBefore?: (cutoffMs: number) => Promise<string[]>;
  /** As TrustDebtStageDeps.encodeTrustDebt: the credits go out in the topic's selected encoding. */
  encodeTrustDebt?: (t: TrustDebtMessage) => Buffer;
}

/**
 * The periodic good-behaviour audit (§10.4.2) of the trust-debt stage. Every credit it grants is published
 * to acgp.trust-debt in the same message shape as any other debt change (the sink lands it in ClickHouse).
 * Any number of instances may run it: the store's script credits each window once.
 */
export function startTrustDebtAuditSweep(d: TrustDebtSweepDeps): AuditSweep {
  return startAuditSweep(d.store, {
    intervalMs: d.intervalMs,
    lagMs: d.lagMs,
    now: d.now,
    cfgFor: d.cfgFor,
    backlogBefore: d.backlogBefore,
    onHeld: (behind) => d.logger?.warn({ behind: behind.slice(0, 20), partitions: behind.length }, 'audit sweep held back: the pipeline has older records still to process'),
    onChanges: async (changes) => {
      await d.producer.send([{ topic: d.topics.trustDebt, messages: changes.map((c) => toTrustDebtOutput(d.topics, c, undefined, d.encodeTrustDebt).message) }]);
      for (const c of changes) {
        d.metrics?.setTrustDebt(c.tenant, c.agentId, c.after, c.level);
        d.logger?.info({ event_id: c.eventId, tenant: c.tenant, agent_id: c.agentId, before: c.before, after: c.after, debt_level: c.level }, 'good-behaviour audit credit');
        if (d.logger) logCrossings(d.logger, c);
      }
    },
    onError: (e) => d.logger?.warn({ err: e instanceof Error ? e.message : String(e) }, 'trust-debt audit sweep failed; retried next interval'),
  });
}
