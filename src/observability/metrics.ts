/**
 * Prometheus metrics of the stream stages. One registry per process (tests may create their own), so
 * several in-process stages (demo, tests) share /metrics without duplicate-registration errors.
 */
import { Registry, Histogram, Counter, Gauge, collectDefaultMetrics } from 'prom-client';
import { safeLabelValue } from './redact.js';
import type { FinalAlignmentJudgeResultEvent, FinalizationOutcomeEvent } from '../engine/gate/types.js';

/** What gateJudged reads of a `final_alignment_judge_result`. */
export type GateJudgedMetricEvent = Pick<FinalAlignmentJudgeResultEvent, 'intent_id' | 'verdict' | 'reason_codes' | 'judged_by' | 'degraded' | 'latency_ms' | 'token_cost'>;
/** What gateOutcome reads of a `finalization_outcome`. */
export type GateOutcomeMetricEvent = Pick<FinalizationOutcomeEvent, 'intent_id' | 'final_verdict' | 'action' | 'num_retries'>;

/** Names of the finalization-gate metrics (docs/analytics.md "Finalization gate"; deploy/prometheus/gate-alerts.yml). */
export const GATE_METRIC_NAMES = [
  'steward_gate_judge_results_total',
  'steward_gate_reason_codes_total',
  'steward_gate_outcomes_total',
  'steward_gate_retries',
  'steward_gate_outcomes_superseded_total',
  'steward_gate_retries_superseded',
  'steward_gate_judge_latency_seconds',
  'steward_gate_degraded_total',
  'steward_gate_token_cost_total',
] as const;

export class StewardMetrics {
  readonly registry: Registry;
  readonly stageLatency: Histogram<'stage'>;
  readonly messages: Counter<'stage' | 'outcome'>;
  readonly interventions: Counter<'stage' | 'intervention'>;
  /** Outcomes forced by an unavailable dependency (spec-decisions D20), counted where trust debt skips them. */
  readonly degraded: Counter<'stage' | 'intervention'>;
  readonly dlq: Counter<'stage' | 'code'>;
  readonly duplicates: Counter<'stage'>;
  readonly consumerLag: Gauge<'stage' | 'topic' | 'partition'>;
  readonly trustDebt: Gauge<'tenant' | 'agent_id'>;
  /** Agents per trust-debt level, from the changes this process applied (bounded cardinality). */
  readonly trustDebtAgents: Gauge<'level'>;
  readonly blueprintReloads: Counter<'outcome'>;
  readonly registryReloads: Counter<'outcome'>;
  /** Sink stage: rows inserted, insert durations, retried attempts (per table) and rows waiting in its buffers. */
  readonly sinkRows: Counter<'table'>;
  readonly sinkInsertSeconds: Histogram<'table'>;
  readonly sinkRetries: Counter<'table'>;
  readonly sinkBuffered: Gauge;
  private sinkPending: () => number = () => 0;
  /** Finalization gate (gateJudged, gateOutcome): judge results by intent and verdict (`none`: no verdict, the judge failed). */
  readonly gateJudgeResults: Counter<'intent' | 'verdict'>;
  /** Judge results carrying each reason code, by intent (a result counts once per distinct code). */
  readonly gateReasonCodes: Counter<'intent' | 'code'>;
  /** Ended jobs by intent, final verdict, last action and whether any repair came first (`retried`: num_retries ≥ 1). */
  readonly gateOutcomes: Counter<'intent' | 'final_verdict' | 'action' | 'retried'>;
  /** num_retries of each ended job, by intent (average retries = _sum / _count). */
  readonly gateRetries: Histogram<'intent'>;
  /**
   * D45: endings a later ending of the same job replaced (block, then a corrected draft passing), with the earlier
   * ending's labels: outcomes − superseded counts each job once, at its latest ending, as v_gate_jobs does.
   */
  readonly gateOutcomesSuperseded: Counter<'intent' | 'final_verdict' | 'action' | 'retried'>;
  readonly gateRetriesSuperseded: Histogram<'intent'>;
  /** Latency of the LLM judge calls (results judged_by llm), by intent. */
  readonly gateJudgeLatency: Histogram<'intent'>;
  readonly gateDegraded: Counter<'intent'>;
  /** Tokens (input + output) the judge's calls reported, by intent (spec-decisions D41). */
  readonly gateTokenCost: Counter<'intent'>;
  /** Intent label values seen; past maxGateIntents new intents are counted as `other` (agent-supplied values). */
  private readonly gateIntents = new Set<string>();
  readonly maxGateIntents: number;

  /** steward_consumer_lag label sets per stage, so a lost partition's series can be dropped. */
  private readonly lagSeries = new Map<string, Map<string, { topic: string; partition: string }>>();

  /** Series of steward_trust_debt kept, most recently updated first; older agents' series are dropped. */
  readonly maxTrustDebtSeries: number;
  private readonly debtSeries = new Map<string, { tenant: string; agentId: string; level: string }>();

  constructor(opts: { defaultMetrics?: boolean; maxTrustDebtSeries?: number; maxGateIntents?: number } = {}) {
    this.maxTrustDebtSeries = opts.maxTrustDebtSeries ?? 10_000;
    this.maxGateIntents = opts.maxGateIntents ?? 200;
    this.registry = new Registry();
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.stageLatency = new Histogram({
      name: 'steward_stage_latency_seconds',
      help: 'Per-message processing latency of a stage (decode + engine + output), seconds',
      labelNames: ['stage'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.messages = new Counter({ name: 'steward_messages_total', help: 'Messages consumed by stage and outcome (ok, dlq, retry)', labelNames: ['stage', 'outcome'], registers });
    this.interventions = new Counter({ name: 'steward_interventions_total', help: 'Interventions emitted by stage and type', labelNames: ['stage', 'intervention'], registers });
    this.degraded = new Counter({ name: 'steward_degraded_outcomes_total', help: 'Outcomes forced by an unavailable dependency (Redis down or slow, a scorer unavailable): kept, but they move no trust debt (alert on its rate)', labelNames: ['stage', 'intervention'], registers });
    this.duplicates = new Counter({ name: 'steward_duplicates_skipped_total', help: 'Inputs recognised as copies of an earlier input (the scorer: a scoring record the tripwire stage wrote again after a crash): skipped, or scored for their own client only when they asked under another correlation id', labelNames: ['stage'], registers });
    this.dlq = new Counter({ name: 'steward_dlq_total', help: 'Messages sent to the DLQ by stage and error code', labelNames: ['stage', 'code'], registers });
    this.consumerLag = new Gauge({ name: 'steward_consumer_lag', help: 'Messages behind the high watermark, per stage and partition', labelNames: ['stage', 'topic', 'partition'], registers });
    this.trustDebt = new Gauge({ name: 'steward_trust_debt', help: 'Current trust debt per agent (last applied change; the most recently changed agents only, see steward_trust_debt_agents)', labelNames: ['tenant', 'agent_id'], registers });
    this.trustDebtAgents = new Gauge({ name: 'steward_trust_debt_agents', help: 'Agents by trust-debt level (last change per agent) among those steward_trust_debt keeps', labelNames: ['level'], registers });
    this.blueprintReloads = new Counter({ name: 'steward_blueprint_reloads_total', help: 'Blueprint hot reloads by outcome', labelNames: ['outcome'], registers });
    this.registryReloads = new Counter({ name: 'steward_agent_registry_reloads_total', help: 'Agent registry (agents.yaml) hot reloads by outcome', labelNames: ['outcome'], registers });
    this.sinkRows = new Counter({ name: 'steward_sink_rows_total', help: 'Rows the sink stage inserted into ClickHouse, by table (redelivered rows included: the tables dedupe)', labelNames: ['table'], registers });
    this.sinkInsertSeconds = new Histogram({
      name: 'steward_sink_insert_seconds',
      help: 'Duration of the sink stage\'s successful ClickHouse inserts, by table, seconds',
      labelNames: ['table'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.sinkRetries = new Counter({ name: 'steward_sink_retries_total', help: 'Sink operations retried after a retryable failure (ClickHouse down, overloaded, timed out), by table; ledger also counts chain-head reads, ledger-drafts the Kafka publish of ledger drafts', labelNames: ['table'], registers });
    this.gateJudgeResults = new Counter({ name: 'steward_gate_judge_results_total', help: 'Finalization-gate judge results (final_alignment_judge_result) by intent and verdict (none: no verdict)', labelNames: ['intent', 'verdict'], registers });
    this.gateReasonCodes = new Counter({ name: 'steward_gate_reason_codes_total', help: 'Finalization-gate judge results carrying each reason code, by intent', labelNames: ['intent', 'code'], registers });
    this.gateOutcomes = new Counter({ name: 'steward_gate_outcomes_total', help: 'Finalization-gate jobs ended (finalization_outcome) by intent, final verdict, action and whether a repair came first (retried)', labelNames: ['intent', 'final_verdict', 'action', 'retried'], registers });
    this.gateRetries = new Histogram({ name: 'steward_gate_retries', help: 'Retries (num_retries) of each ended finalization-gate job, by intent', labelNames: ['intent'], buckets: [0, 1, 2, 3, 5, 8], registers });
    this.gateOutcomesSuperseded = new Counter({ name: 'steward_gate_outcomes_superseded_total', help: 'Finalization-gate job endings replaced by a later ending of the same job, with the earlier ending\'s labels (jobs ended = steward_gate_outcomes_total minus this)', labelNames: ['intent', 'final_verdict', 'action', 'retried'], registers });
    this.gateRetriesSuperseded = new Histogram({ name: 'steward_gate_retries_superseded', help: 'num_retries of finalization-gate job endings replaced by a later ending of the same job (subtract from steward_gate_retries)', labelNames: ['intent'], buckets: [0, 1, 2, 3, 5, 8], registers });
    this.gateJudgeLatency = new Histogram({
      name: 'steward_gate_judge_latency_seconds',
      help: 'Latency of the finalization gate\'s LLM judge calls, by intent, seconds',
      labelNames: ['intent'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30],
      registers,
    });
    this.gateDegraded = new Counter({ name: 'steward_gate_degraded_total', help: 'Finalization-gate judge results decided degraded (judge timeout or invalid output: on_judge_error), by intent', labelNames: ['intent'], registers });
    this.gateTokenCost = new Counter({ name: 'steward_gate_token_cost_total', help: 'Tokens (input + output) the finalization-gate judge calls reported, by intent', labelNames: ['intent'], registers });
    const pending = () => this.sinkPending();
    this.sinkBuffered = new Gauge({
      name: 'steward_sink_buffered_rows',
      help: 'Rows the sink stage holds that are not inserted yet (buffered, and in inserts in flight or being retried)',
      registers,
      collect() {
        this.set(pending());
      },
    });
  }

  /** A stage's lag on one partition (steward_consumer_lag). */
  setLag(stage: string, topic: string, partition: number, lag: number): void {
    let series = this.lagSeries.get(stage);
    if (!series) this.lagSeries.set(stage, (series = new Map()));
    const key = `${topic}\u0000${partition}`;
    let labels = series.get(key);
    if (!labels) series.set(key, (labels = { topic, partition: String(partition) }));
    this.consumerLag.set({ stage, topic: labels.topic, partition: labels.partition }, lag);
  }

  /**
   * Drops the lag series of `stage`'s partitions outside `assignment` (all of them without one): after a
   * rebalance another instance reports those partitions, and a frozen value here would read as lag forever.
   */
  retainLag(stage: string, assignment?: Record<string, number[]>): void {
    const series = this.lagSeries.get(stage);
    if (!series) return;
    for (const [key, l] of series) {
      if (assignment?.[l.topic]?.includes(Number(l.partition))) continue;
      series.delete(key);
      this.consumerLag.remove({ stage, topic: l.topic, partition: l.partition });
    }
  }

  /**
   * A decided final answer's `final_alignment_judge_result` (the gate stage calls it once per decision; not for
   * a redelivered one, whose outcome is the stored one).
   */
  gateJudged(ev: GateJudgedMetricEvent): void {
    const intent = this.gateIntent(ev.intent_id);
    this.gateJudgeResults.inc({ intent, verdict: ev.verdict ?? 'none' });
    for (const code of new Set(ev.reason_codes)) this.gateReasonCodes.inc({ intent, code: safeLabelValue(code) });
    if (ev.judged_by === 'llm' && Number.isFinite(ev.latency_ms) && ev.latency_ms >= 0) this.gateJudgeLatency.observe({ intent }, ev.latency_ms / 1000);
    if (ev.degraded) this.gateDegraded.inc({ intent });
    if (typeof ev.token_cost === 'number' && Number.isFinite(ev.token_cost) && ev.token_cost > 0) this.gateTokenCost.inc({ intent }, ev.token_cost);
  }

  /**
   * A job's `finalization_outcome` when the job ends (not its user_feedback re-publication, not a redelivery), and
   * the job's earlier ending it replaces, if any (D45): that one is counted as superseded, so a job counts once.
   */
  gateOutcome(ev: GateOutcomeMetricEvent, supersedes?: GateOutcomeMetricEvent): void {
    const { intent, labels, retries } = this.outcomeLabels(ev);
    this.gateOutcomes.inc(labels);
    this.gateRetries.observe({ intent }, retries);
    // Zero series beside every counted one: the rules subtract these, and a missing series would drop the intent.
    this.gateOutcomesSuperseded.inc(labels, 0);
    this.gateRetriesSuperseded.zero({ intent });
    if (supersedes) {
      const old = this.outcomeLabels(supersedes);
      this.gateOutcomesSuperseded.inc(old.labels);
      this.gateRetriesSuperseded.observe({ intent: old.intent }, old.retries);
    }
  }

  private outcomeLabels(ev: GateOutcomeMetricEvent) {
    const intent = this.gateIntent(ev.intent_id);
    const retries = Number.isFinite(ev.num_retries) && ev.num_retries > 0 ? ev.num_retries : 0;
    return { intent, retries, labels: { intent, final_verdict: ev.final_verdict, action: ev.action, retried: retries >= 1 ? 'true' : 'false' } };
  }

  /** The intent label: `none` without one; the first maxGateIntents distinct intents by name, later ones `other`. */
  private gateIntent(intentId: string | null | undefined): string {
    if (!intentId) return 'none';
    const v = safeLabelValue(intentId);
    if (this.gateIntents.has(v)) return v;
    if (this.gateIntents.size >= this.maxGateIntents) return 'other';
    this.gateIntents.add(v);
    return v;
  }

  /** Where steward_sink_buffered_rows reads from (the running sink's ClickHouseSink.unsettled). */
  watchSinkBuffer(pending: () => number): void {
    this.sinkPending = pending;
  }

  /**
   * One agent's debt after a change. A Prometheus series per agent is unbounded with the agent count, so
   * only the `maxTrustDebtSeries` most recently changed agents keep one (LRU), and the per-level counts
   * describe the same agents. Alerting on one agent's debt is better served by acgp.trust-debt crossings.
   * Tenant and agent id are agent-supplied: label values lose control characters and are capped at
   * MAX_LABEL_CHARS (a hash suffix keeps cut values distinct), see safeLabelValue.
   */
  setTrustDebt(tenant0: string, agentId0: string, debt: number, level: string): void {
    const tenant = safeLabelValue(tenant0);
    const agentId = safeLabelValue(agentId0);
    const key = `${tenant}\u0000${agentId}`;
    const prev = this.debtSeries.get(key);
    if (prev) {
      this.debtSeries.delete(key);
      if (prev.level !== level) this.trustDebtAgents.dec({ level: prev.level });
    }
    if (!prev || prev.level !== level) this.trustDebtAgents.inc({ level });
    this.debtSeries.set(key, { tenant, agentId, level });
    this.trustDebt.set({ tenant, agent_id: agentId }, debt);
    if (this.debtSeries.size > this.maxTrustDebtSeries) {
      const [oldKey, old] = this.debtSeries.entries().next().value as [string, { tenant: string; agentId: string; level: string }];
      this.debtSeries.delete(oldKey);
      this.trustDebt.remove({ tenant: old.tenant, agent_id: old.agentId });
      this.trustDebtAgents.dec({ level: old.level });
    }
  }
}
