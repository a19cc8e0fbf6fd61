/**
 * Starts a set of stages in this process on one Kafka adapter and one idempotent producer. Used by
 * `steward run`, the demo, the integration tests and the bench, so all of them exercise the same wiring.
 */
import { KafkaAdapter, METADATA_MAX_AGE_MS, type StewardProducer } from '../adapters/kafka/client.js';
import { topicNames, type TopicNames } from '../adapters/kafka/topics.js';
import { TraceDecoder, createRegistry } from '../adapters/kafka/serde.js';
import { OutputDecoder } from '../adapters/kafka/output-decoder.js';
import { outputEncoders } from '../adapters/kafka/output-avro.js';
import { PartitionTransactions } from '../adapters/kafka/partition-transactions.js';
import type { StewardConfig } from '../config/steward-config.js';
import { groupId } from '../config/steward-config.js';
import type { Logger } from '../logger.js';
import { StewardMetrics } from '../observability/metrics.js';
import { StageRunner, type StageProcessor } from '../consumers/stage-runner.js';
import type { DecideScoreEngine, FinalizeEngine } from '../consumers/stage-types.js';
import { GateProcessor } from '../consumers/gate.js';
import type { Trace } from '../engine/types.js';
import type { InMessage } from '../adapters/kafka/kafka-types.js';
import { TripwireProcessor, type TripwireStageDeps } from '../consumers/tripwire.js';
import type { ScorerStageDeps } from '../consumers/scorer.js';
import { pipelineBacklogBefore } from '../adapters/kafka/backlog.js';
import { scorerProcessor } from './scorer-stage.js';
import { pipelinePreflight } from './pipeline-preflight.js';
import { stageInputs, type StageName } from './stage-topics.js';
import type { ScoredMarks } from '../adapters/redis/scored-marks.js';
import type { IngestMarks } from '../adapters/redis/ingest-marks.js';
import { trustDebtMaxRecordAgeMs, TrustDebtProcessor, startTrustDebtAuditSweep } from '../consumers/trust-debt.js';
import type { AuditSweep, SweepableStore } from '../consumers/audit-sweep.js';
import type { TrustDebtConfig } from '../engine/types.js';
import type { TrustDebtStore } from '../engine/trust-debt/index.js';
import { ApprovalSweeper, ApprovalsProcessor } from '../consumers/approvals.js';
import type { RedisApprovalStore } from '../adapters/redis/approval-store.js';
import type { ApproverRegistry } from '../engine/approvals/approvers.js';
import type { GateJobStore } from '../engine/gate/types.js';
import { tidyHeapAfterCompile } from './heap-tidy.js';

export { STAGES, type StageName } from './stage-topics.js';

export interface PipelineDeps {
  engine?: DecideScoreEngine;
  /** The gate stage's engine (StewardEngine with a finalization gate). */
  finalizer?: FinalizeEngine;
  /** The tripwire stage's sender check (agents.*, docs/security.md). */
  identity?: (trace: Trace, m: InMessage) => void;
  engineVersion?: string;
  trustDebtStore?: Pick<TrustDebtStore, 'apply'>;
  trustDebtConfigFor?: (blueprintId: string | undefined, tenant: string, agentId: string) => TrustDebtConfig;
  tenantOf?: (agentId: string) => string;
  /** The store the trust-debt stage's periodic good-behaviour audit sweeps (absent: lazy audit credits only). */
  trustDebtSweepStore?: SweepableStore;
  /** The trust_debt settings of the blueprint selected for an agent (the sweep has no trace to select by). */
  trustDebtConfigForAgent?: (tenant: string, agentId: string) => TrustDebtConfig;
  /** Clock of the audit sweep (tests inject event time); default wall clock. */
  sweepNow?: () => number;
  /** Marks of scored traces, so the scorer skips scoring records the tripwire stage wrote twice (absent: it scores each). */
  scoredMarks?: ScoredMarks;
  /** http.idempotency.dedupe 'pipeline': the tripwire stage drops later copies of an agent's idempotency key (D52). */
  ingestMarks?: IngestMarks;
  /** Agents whose records may name an ingest key (TripwireStageDeps.ingestKeyAgent). */
  ingestKeyAgent?: (agentId: string) => boolean;
  /** ACM run governance is on (acm.yaml next to the blueprints): the scorer answers run events for the sink's join (docs/acm.md). */
  runRecords?: boolean;
  /** The approvals stage's Redis store and approver registry (docs/approvals.md), and the gate's job store (an approved job call ran). */
  approvals?: { store: RedisApprovalStore; approvers: () => ApproverRegistry | undefined; signOutcome?: (value: string) => string; gateJobs?: GateJobStore };
  /** docs/rollout.md: after a decision (rollout counts, shadow diff) and after a verdict (review queue). */
  afterDecision?: TripwireStageDeps['afterDecision'];
  afterVerdict?: ScorerStageDeps['afterVerdict'];
  /** Starts the sink stage (src/process/sink-stage.ts); absent → sink not available. */
  startSink?: () => Promise<{ stop(): Promise<void>; isReady?(): boolean }>;
}

export interface RunningPipeline {
  topics: TopicNames;
  metrics: StewardMetrics;
  runners: StageRunner[];
  /** The trust-debt stage's audit sweep when it runs in this process (trust_debt.audit_sweep_interval_ms > 0). */
  auditSweep?: AuditSweep;
  isReady(): boolean;
  /** Graceful: stop consuming, drain in-flight chunks, commit, disconnect. */
  stop(): Promise<void>;
}

export async function startPipeline(
  cfg: StewardConfig,
  stages: readonly StageName[],
  deps: PipelineDeps,
  opts: {
    logger: Logger;
    metrics?: StewardMetrics;
    /** StageRunnerOptions.lagRefreshMs (tests shorten it). */
    lagRefreshMs?: number;
    /** StageRunnerOptions.onFatal: a stage whose consumer the broker refuses before it ever joined. */
    onFatal?: (stage: string, err: Error) => void;
  },
): Promise<RunningPipeline> {
  const metrics = opts.metrics ?? new StewardMetrics();
  const topics = topicNames(cfg.topics.prefix);
  const adapter = new KafkaAdapter(cfg.kafka, opts.logger);
  const registry = cfg.schemaRegistryUrl ? createRegistry(cfg.schemaRegistryUrl) : undefined;
  const decoder = new TraceDecoder({ registry, maxBytes: cfg.limits.maxTraceBytes });
  // Decisions, verdicts and trust-debt changes in either encoding, for every stage that reads them (topics.avro_outputs).
  const outputs = new OutputDecoder(registry);
  const procs: StageProcessor[] = [];
  // What each stage needs from the caller, checked before anything is contacted or started.
  for (const s of stages) {
    if ((s === 'tripwire' || s === 'scorer') && !deps.engine) throw new Error(`stage ${s} needs an engine`);
    if (s === 'gate' && !deps.finalizer) throw new Error('stage gate needs an engine with a finalization gate');
    if (s === 'trust-debt' && (!deps.trustDebtStore || !deps.trustDebtConfigFor)) throw new Error('stage trust-debt needs a trust-debt store');
    if (s === 'sink' && !deps.startSink) throw new Error('stage sink is not available in this build');
  }
  // What the started stages need of the cluster, checked on one admin connection before anything starts.
  const replies = await pipelinePreflight(adapter, cfg, stages, topics, opts.logger);
  // topics.avro_outputs: the writing stages' schemas registered (or their ids looked up) once, here.
  const avroOut = cfg.topics.avroOutputs;
  const encoders = await outputEncoders(registry, {
    decision: avroOut.includes('decisions') && stages.includes('tripwire') ? `${topics.decisions}-value` : undefined,
    verdict: avroOut.includes('verdicts') && stages.includes('scorer') ? `${topics.verdicts}-value` : undefined,
    trustDebt: avroOut.includes('trust_debt') && stages.includes('trust-debt') ? `${topics.trustDebt}-value` : undefined,
  });
  const routeLog = opts.logger.child({ stage: 'tripwire' });
  // The replies topic may gain partitions (or be created) while the stage runs: clients of the new partitions
  // must be answered without a restart. Re-read every minute, and at once (at most every 5 s) when a route
  // points past the known partitions.
  // A new partition is used only once the stage's producers refreshed their metadata: kafkajs drops a record
  // for a partition it does not know yet without an error (METADATA_MAX_AGE_MS).
  let lastReplyRefresh = 0;
  let growing = false;
  const refreshReplies = (force = false): void => {
    const target = replies;
    if (!target || growing || (!force && Date.now() - lastReplyRefresh < 5_000)) return;
    lastReplyRefresh = Date.now();
    void (async () => {
      const admin = await adapter.admin();
      try {
        const n = await admin.partitionCount(target.topic);
        if (n <= target.partitions) return;
        routeLog.info({ topic: target.topic, partitions: n, before: target.partitions, in_ms: METADATA_MAX_AGE_MS + 5_000 }, 'replies topic has more partitions: answering them once producers know them');
        growing = true;
        setTimeout(() => {
          growing = false;
          target.partitions = Math.max(target.partitions, n);
        }, METADATA_MAX_AGE_MS + 5_000).unref();
      } finally {
        await admin.disconnect();
      }
    })().catch((e: unknown) => routeLog.warn({ err: (e as Error).message }, 'could not re-read the replies topic'));
  };
  const replyTimer = replies ? setInterval(() => refreshReplies(true), 60_000).unref() : undefined;
  const extra: { stop(): Promise<void>; isReady?(): boolean }[] = [];
  const producers: StewardProducer[] = [];
  const runners: StageRunner[] = [];
  let auditSweep: AuditSweep | undefined;
  // Partitions where a stage of this pipeline has records stamped before `cutoffMs` still to process. A record is
  // stamped after the event it carries (pipeline latency, and up to the allowed skew), hence the margin. Upstream
  // stages count too: a trace or scoring message not yet turned into a decision or verdict carries an event an
  // audit window may have to restart on. Those stages may run elsewhere or not at all (ifStarted).
  const behindBefore = async (cutoffMs: number): Promise<string[]> => {
    const admin = await adapter.admin();
    try {
      const stampedBy = cutoffMs + (cfg.limits.maxEventTimeSkewMs ?? 0) + 60_000;
      const check = (s: StageName, ifStarted: boolean) => ({ groupId: groupId(cfg, s), topics: stageInputs(cfg, s).map((k) => topics[k]), ifStarted });
      return await pipelineBacklogBefore(admin, [check('trust-debt', false), check('tripwire', true), check('scorer', true)], stampedBy);
    } finally {
      await admin.disconnect();
    }
  };
  // Reviews ask whether the pipeline is behind by more than the sweep's lag; the answer is reused for 5 s, and a
  // failed check answers yes (deferring audit credits only delays them).
  let behindCache: { atMs: number; value: Promise<boolean> } | undefined;
  const pipelineBehind = (): Promise<boolean> => {
    const wall = Date.now();
    if (!behindCache || wall - behindCache.atMs > 5_000) {
      behindCache = { atMs: wall, value: behindBefore((deps.sweepNow ?? Date.now)() - cfg.trustDebt.auditSweepLagMs).then((b) => b.length > 0, () => true) };
    }
    return behindCache.value;
  };
  try {
    for (const s of stages) {
      if (s === 'tripwire' || s === 'scorer') {
        if (!deps.engine) throw new Error(`stage ${s} needs an engine`);
        procs.push(
          s === 'tripwire'
            ? new TripwireProcessor({
                engine: deps.engine,
                decoder,
                topics,
                metrics,
                engineVersion: deps.engineVersion,
                maxEventTimeSkewMs: cfg.limits.maxEventTimeSkewMs,
                maxMessageBytes: cfg.limits.maxMessageBytes,
                identity: deps.identity,
                afterDecision: deps.afterDecision,
                scorerInput: cfg.consumer.scorerInput,
                encodeDecision: encoders.decision,
                ingestMarks: deps.ingestMarks,
                ingestKeyAgent: deps.ingestKeyAgent,
                onMarksUnavailable: marksWarning(opts.logger.child({ stage: 'tripwire' }), 'ingest marks unavailable: deciding the chunk whole (a retried event sent again is decided again)'),
                replies: replies!,
                onRejectedRoute: (m) => {
                  routeLog.warn({ topic: m.topic, partition: m.partition, offset: m.offset, key: m.key?.toString('utf8') }, 'reply route outside the replies topic ignored');
                  refreshReplies();
                },
              })
            : (() => {
                const sc = scorerProcessor(cfg, { engine: deps.engine, topics, metrics, encodeVerdict: encoders.verdict, marks: deps.scoredMarks, afterVerdict: deps.afterVerdict, runRecords: deps.runRecords, onMarksUnavailable: marksWarning(opts.logger.child({ stage: 'scorer' })) }, { adapter, topics, decoder, outputs, replies: replies!, logger: opts.logger, metrics });
                extra.push({ stop: sc.stop });
                return sc.proc;
              })(),
        );
      } else if (s === 'gate') {
        if (!deps.finalizer) throw new Error('stage gate needs an engine with a finalization gate');
        const log = opts.logger.child({ stage: 'gate' });
        procs.push(
          new GateProcessor({
            engine: deps.finalizer,
            topics,
            metrics,
            replies: replies!,
            engineVersion: deps.engineVersion,
            maxMessageBytes: cfg.limits.maxMessageBytes,
            onOrphanFeedback: (jobId, agentId) => log.info({ job_id: jobId, agent_id: agentId }, 'user_feedback for a job that has not ended (or whose state expired): nothing to update'),
          }),
        );
      } else if (s === 'trust-debt') {
        if (!deps.trustDebtStore || !deps.trustDebtConfigFor) throw new Error('stage trust-debt needs a trust-debt store');
        procs.push(
          new TrustDebtProcessor({
            store: deps.trustDebtStore,
            configFor: deps.trustDebtConfigFor,
            tenantOf: deps.tenantOf ?? (() => 'default'),
            topics,
            metrics,
            logger: opts.logger.child({ stage: 'trust-debt' }),
            pipelineBehind,
            maxRecordAgeMs: trustDebtMaxRecordAgeMs(cfg.trustDebt.dedupTtlSeconds),
            outputs,
            encodeTrustDebt: encoders.trustDebt,
          }),
        );
      } else if (s === 'approvals') {
        if (!deps.approvals) throw new Error('stage approvals needs Redis');
        procs.push(new ApprovalsProcessor({ store: deps.approvals.store, approvers: deps.approvals.approvers, signOutcome: deps.approvals.signOutcome, gateJobs: deps.approvals.gateJobs, topics }));
      } else if (s === 'sink') {
        if (!deps.startSink) throw new Error('stage sink is not available in this build');
        extra.push(await deps.startSink());
      }
    }
    // One producer per stage: with one request in flight per producer, a shared one would queue the
    // tripwire stage's synchronous replies behind the scorer's sends.
    // allSettled: the producers that did connect are disconnected again when another one fails.
    const connected = await Promise.allSettled(procs.map(() => adapter.producer()));
    for (const c of connected) if (c.status === 'fulfilled') producers.push(c.value);
    const failed = connected.find((c): c is PromiseRejectedResult => c.status === 'rejected');
    if (failed) throw failed.reason;
    runners.push(...procs.map(
      (p, i) =>
        new StageRunner(p, {
          adapter,
          producer: producers[i],
          // consumer.exactly_once: the stage's outputs commit through transactional producers of their own, one per
          // input partition it is assigned (replies still go through `producer`, after each commit).
          transactions: cfg.consumer.exactlyOnce.includes(p.stage as 'tripwire' | 'scorer') ? new PartitionTransactions({ adapter, groupId: groupId(cfg, p.stage), logger: opts.logger.child({ stage: p.stage }) }) : undefined,
          groupId: groupId(cfg, p.stage),
          dlqTopic: topics.dlq,
          metrics,
          logger: opts.logger.child({ stage: p.stage }),
          chunkSize: cfg.limits.chunkSize,
          maxMessageBytes: cfg.limits.maxMessageBytes,
          partitionsConcurrently: cfg.limits.partitionsConcurrently,
          // spec-decisions D32: a write Redis refuses at maxmemory does not hold the partition for ever.
          retryLimitsMs: { STEWARD_STATE_OOM: cfg.redis.oomRetryMs },
          autoCommitIntervalMs: cfg.consumer.autoCommitIntervalMs,
          sessionTimeoutMs: cfg.consumer.sessionTimeoutMs,
          lagRefreshMs: opts.lagRefreshMs,
          onFatal: opts.onFatal ? (err) => opts.onFatal!(p.stage, err) : undefined,
        }),
    ));
    const started = await Promise.allSettled(runners.map((r) => r.start()));
    const notStarted = started.find((c): c is PromiseRejectedResult => c.status === 'rejected');
    if (notStarted) throw notStarted.reason;
    // docs/approvals.md: every approvals instance sweeps due deadlines (Redis decides which one fires each).
    const apIndex = procs.findIndex((p) => p.stage === 'approvals');
    if (apIndex >= 0 && deps.approvals) {
      const log = opts.logger.child({ stage: 'approvals', task: 'sweep' });
      const sweeper = new ApprovalSweeper({ ...deps.approvals, topics, producer: producers[apIndex]! }, { intervalMs: cfg.approvals.sweepIntervalMs, onError: (e) => log.warn({ err: (e as Error).message }, 'approval sweep failed; retried next interval') });
      sweeper.start();
      extra.push({ stop: () => sweeper.stop() });
    }
    // The good-behaviour audit sweep runs beside the trust-debt stage and publishes with its producer.
    const tdIndex = procs.findIndex((p) => p.stage === 'trust-debt');
    if (tdIndex >= 0 && deps.trustDebtSweepStore && deps.trustDebtConfigForAgent && cfg.trustDebt.auditSweepIntervalMs > 0) {
      auditSweep = startTrustDebtAuditSweep({
        store: deps.trustDebtSweepStore,
        producer: producers[tdIndex]!,
        topics,
        cfgFor: deps.trustDebtConfigForAgent,
        metrics,
        logger: opts.logger.child({ stage: 'trust-debt', task: 'audit-sweep' }),
        intervalMs: cfg.trustDebt.auditSweepIntervalMs,
        lagMs: cfg.trustDebt.auditSweepLagMs,
        now: deps.sweepNow,
        backlogBefore: behindBefore,
        encodeTrustDebt: encoders.trustDebt,
      });
    }
  } catch (e) {
    // A start that fails half-way must not leave a sink, consumers or producers running (a half-started
    // process would keep consuming, or keep the event loop alive, after reporting its failure).
    clearInterval(replyTimer);
    await Promise.allSettled([...runners.map((r) => r.stop()), ...extra.map((x) => x.stop())]);
    await Promise.allSettled(producers.map((p) => p.disconnect()));
    throw e;
  }
  // The blueprints, schemas and codecs were compiled on the way here (src/process/heap-tidy.ts).
  tidyHeapAfterCompile();
  let stopped = false;
  return {
    topics,
    metrics,
    runners,
    auditSweep,
    isReady: () => runners.every((r) => r.isReady()) && extra.every((e) => e.isReady?.() ?? true),
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(replyTimer);
      // Every part is stopped even when one fails (a sink that cannot drain must not keep producers open), and
      // the first failure is reported after.
      const results = [
        await Promise.allSettled([auditSweep?.stop()]),
        await Promise.allSettled([...runners.map((r) => r.stop()), ...extra.map((e) => e.stop())]),
        await Promise.allSettled(producers.map((p) => p.disconnect())),
      ].flat();
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

/** Logs that a stage works without its duplicate marks (Redis unreachable), at most once a minute. */
function marksWarning(log: Logger, msg = 'scored marks unavailable: scoring without them (a trace the tripwire stage decided twice may get two verdicts)'): (e: unknown) => void {
  let lastMs = -Infinity;
  return (e) => {
    const now = Date.now();
    if (now - lastMs < 60_000) return;
    lastMs = now;
    log.warn({ err: e instanceof Error ? e.message : String(e) }, msg);
  };
}
