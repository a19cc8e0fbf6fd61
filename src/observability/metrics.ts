/**
 * Prometheus metrics of the stream stages. One registry per process (tests may create their own), so
 * several in-process stages (demo, tests) share /metrics without duplicate-registration errors.
 */
import { Registry, Histogram, Counter, Gauge, collectDefaultMetrics } from 'prom-client';

export class StewardMetrics {
  readonly registry: Registry;
  readonly stageLatency: Histogram<'stage'>;
  readonly messages: Counter<'stage' | 'outcome'>;
  readonly interventions: Counter<'stage' | 'intervention'>;
  readonly dlq: Counter<'stage' | 'code'>;
  readonly consumerLag: Gauge<'stage' | 'topic' | 'partition'>;
  readonly trustDebt: Gauge<'tenant' | 'agent_id'>;
  readonly blueprintReloads: Counter<'outcome'>;
  readonly registryReloads: Counter<'outcome'>;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
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
    this.dlq = new Counter({ name: 'steward_dlq_total', help: 'Messages sent to the DLQ by stage and error code', labelNames: ['stage', 'code'], registers });
    this.consumerLag = new Gauge({ name: 'steward_consumer_lag', help: 'Messages behind the high watermark, per stage and partition', labelNames: ['stage', 'topic', 'partition'], registers });
    this.trustDebt = new Gauge({ name: 'steward_trust_debt', help: 'Current trust debt per agent (last applied change)', labelNames: ['tenant', 'agent_id'], registers });
    this.blueprintReloads = new Counter({ name: 'steward_blueprint_reloads_total', help: 'Blueprint hot reloads by outcome', labelNames: ['outcome'], registers });
    this.registryReloads = new Counter({ name: 'steward_agent_registry_reloads_total', help: 'Agent registry (agents.yaml) hot reloads by outcome', labelNames: ['outcome'], registers });
  }
}
