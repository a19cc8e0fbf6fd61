/**
 * Sink stage: acgp.decisions, .verdicts, .ledger, .trust-debt, .gate and .dlq (metadata) → ClickHouse.
 *
 * Delivery: a partition's batch is mapped to rows and handed to the ClickHouseSink; its offsets are resolved
 * (and so committed) only after every row was inserted or dead-lettered. A crash replays the uncommitted
 * tail, and the tables' dedupe keys (trace_id / event_id / DLQ offset) plus FINAL reads make that harmless.
 * Ledger: each decision becomes a POLICY_DECISION draft published to acgp.ledger (keyed by agent_id) before
 * the decision's offset is committed; the ledger topic is the only input that chains entries. One agent's
 * drafts sit on one partition, and Kafka gives a partition to one instance at a time, so every chain has a
 * single writer even with many sink instances.
 */
import { KafkaAdapter, type InMessage, type KafkaSettings, type StewardConsumer, type StewardProducer } from '../adapters/kafka/client.js';
import { topicNames } from '../adapters/kafka/topics.js';
import { ClickHouseStore, type ClickHouseSettings } from '../adapters/clickhouse/client.js';
import { migrate } from '../adapters/clickhouse/migrations.js';
import { LedgerWriter, RUN_CHAINS } from '../adapters/clickhouse/ledger-store.js';
import { stagedRunParts } from '../adapters/clickhouse/replay-source.js';
import { RunRecordJoin, runRecordPart, type RunRecordPart } from '../consumers/run-record-join.js';
import type { PoolableLedgerSigner } from '../adapters/clickhouse/ledger-keys.js';
import { ClickHouseSink, type PoisonRow } from '../adapters/clickhouse/sink.js';
import type { LedgerDraftMessage } from '../adapters/clickhouse/decision-writer.js';
import type { LedgerSigner } from '../engine/ledger/index.js';
import { StewardError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StewardMetrics } from '../observability/metrics.js';
import { SinkConsumerLoop } from '../consumers/sink-loop.js';
import { SinkProcessor } from '../consumers/sink-processor.js';
import { OutputDecoder } from '../adapters/kafka/output-decoder.js';
import { createRegistry } from '../adapters/kafka/serde.js';
import { fittedDlqMessage } from '../consumers/stage-io.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../config/steward-config.js';

export interface SinkStageOptions {
  kafka: KafkaSettings;
  topicPrefix: string;
  groupId: string;
  clickhouse: ClickHouseSettings;
  /** Ledger signer; one with `signPool` (ledger-keys.ts) signs on `signThreads` worker threads. */
  signer: LedgerSigner | PoolableLedgerSigner;
  /** Signing threads (default: cores − 1, 1..4); 0 signs on this thread. */
  signThreads?: number;
  logger: Logger;
  maxRows?: number;
  maxDelayMs?: number;
  retry?: { initialMs?: number; maxMs?: number };
  partitionsConcurrently?: number;
  autoCommitIntervalMs?: number;
  sessionTimeoutMs?: number;
  /** Run migrations before consuming (default true). */
  migrate?: boolean;
  /** How long stop() waits for buffered rows before giving up on them (they are then re-read after restart). */
  shutdownTimeoutMs?: number;
  /** A consumer kafkajs gave up on (crash without restart) is replaced after this delay (default 2 000 ms). */
  restartDelayMs?: number;
  /** Prometheus metrics (steward_sink_*, and the sink's DLQ count, messages and consumer lag). */
  metrics?: StewardMetrics;
  /** The Kafka client to use (default: a KafkaAdapter of `kafka`); tests wrap it to play kafkajs giving up. */
  adapter?: Pick<KafkaAdapter, 'producer' | 'consumer'>;
  nowMs?: () => number;
  /** limits.max_message_bytes: DLQ records are cut to fit, like the stages' (default 1 000 000). */
  maxMessageBytes?: number;
  /** schema_registry.url: decisions and verdicts in Avro are read through it (topics.avro_outputs); without it they are dead-lettered. */
  schemaRegistryUrl?: string;
}

export interface RunningSink {
  readonly sink: ClickHouseSink;
  readonly store: ClickHouseStore;
  isReady(): boolean;
  stop(): Promise<void>;
}


export async function startSinkStage(opts: SinkStageOptions): Promise<RunningSink> {
  const store = new ClickHouseStore(opts.clickhouse);
  // What a start that fails half-way must close again (the caller only stops a sink that started).
  const opened: (() => Promise<unknown>)[] = [() => store.close()];
  try {
    return await openSinkStage(opts, store, opened);
  } catch (e) {
    for (const close of opened.reverse()) await close().catch(() => undefined);
    throw e;
  }
}

/** A staged half read back (it was checked when it arrived; a row that no longer parses is left out, not fatal). */
function stagedPart(v: unknown): RunRecordPart[] {
  try {
    const p = runRecordPart(v);
    return p ? [p] : [];
  } catch {
    return [];
  }
}

async function openSinkStage(opts: SinkStageOptions, store: ClickHouseStore, opened: (() => Promise<unknown>)[]): Promise<RunningSink> {
  const log = opts.logger;
  const now = opts.nowMs ?? Date.now;
  const metrics = opts.metrics;
  if (opts.migrate !== false) {
    const r = await migrate(store);
    if (r.applied.length > 0) log.info({ applied: r.applied, database: r.database }, 'clickhouse migrations applied');
  }
  const topics = topicNames(opts.topicPrefix);
  const adapter = opts.adapter ?? new KafkaAdapter(opts.kafka, log);
  const producer: StewardProducer = await adapter.producer();
  opened.push(() => producer.disconnect());

  const deadLetter = async (m: InMessage, err: StewardError) => {
    if (m.topic === topics.dlq) {
      // Never dead-letter the dead-letter topic into itself; the record stays readable there.
      log.error({ offset: m.offset, partition: m.partition, err: err.message }, 'sink: unstorable DLQ record skipped');
      return;
    }
    log.warn({ topic: m.topic, partition: m.partition, offset: m.offset, code: err.code, err: err.message }, 'sink: record dead-lettered');
    // Cut to the output limit: a record near the broker's max.message.bytes plus the DLQ headers would be refused,
    // the batch would fail, and the partition would stall on it for ever.
    const limit = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    await producer.send([{ topic: topics.dlq, messages: [fittedDlqMessage(m, { code: err.code, message: err.message }, 'sink', now(), limit)] }]);
    metrics?.dlq.inc({ stage: 'sink', code: err.code });
    metrics?.messages.inc({ stage: 'sink', outcome: 'dlq' });
  };
  const onPoison = async (rows: PoisonRow[]) => {
    for (const p of rows) {
      const src = p.source as InMessage | undefined;
      if (src) await deadLetter(src, p.error);
      else log.error({ table: p.table, err: p.error.message }, 'sink: poison row without source dropped');
    }
  };
  const sink = new ClickHouseSink(store, {
    maxRows: opts.maxRows,
    maxDelayMs: opts.maxDelayMs,
    retry: opts.retry,
    onPoison,
    onRetry: (e, attempt, delay, table) => {
      metrics?.sinkRetries.inc({ table });
      log.warn({ table, attempt, delay_ms: delay, err: (e as Error).message }, 'sink: ClickHouse insert failed, retrying');
    },
    onInserted: metrics
      ? (table, rows, seconds) => {
          metrics.sinkRows.inc({ table }, rows);
          metrics.sinkInsertSeconds.observe({ table }, seconds);
          metrics.messages.inc({ stage: 'sink', outcome: 'ok' }, rows);
        }
      : undefined,
  });
  metrics?.watchSinkBuffer(() => sink.unsettled);
  // Per-entry Ed25519 signatures on worker threads when the signer can (steward run): on this thread they
  // were ~40 % of the stage's CPU (bench:sink, full-stage line).
  const pool = 'signPool' in opts.signer && opts.signThreads !== 0 ? (opts.signer as PoolableLedgerSigner).signPool(opts.signThreads) : undefined;
  if (pool) opened.push(() => pool.close());
  const ledger = new LedgerWriter(store, opts.signer, { nowMs: now, signMany: pool ? (h) => pool.signMany(h) : undefined });
  // ACM runs' own chains (spec-decisions D30): same signer and pool, heads apart from the agents'.
  const runLedger = new LedgerWriter(store, opts.signer, { nowMs: now, signMany: pool ? (h) => pool.signMany(h) : undefined, space: RUN_CHAINS });
  const publishDrafts = (messages: LedgerDraftMessage[]) => producer.send([{ topic: topics.ledger, messages }]);
  const proc = new SinkProcessor(
    topics,
    sink,
    ledger,
    deadLetter,
    publishDrafts,
    now,
    (e) => log.warn({ err: (e as Error).message }, 'sink: ledger id-index write failed; the next head load repairs it'),
    runLedger,
    // ACM runs' replay records (docs/acm.md "In the stream"): the tripwire stage's and the scorer's halves, joined.
    new RunRecordJoin(async (keys) => (await stagedRunParts(store, keys)).flatMap((v) => stagedPart(v)), { nowMs: now }),
    new OutputDecoder(opts.schemaRegistryUrl ? createRegistry(opts.schemaRegistryUrl) : undefined),
  );

  let consumer: StewardConsumer | undefined;
  let joined = false;
  let stopped = false;
  // A restart in progress, which stop() waits for; failed restarts back off (2 s doubling, at most 30 s).
  let restarting: Promise<void> | undefined;
  let failedRestarts = 0;
  const loop = new SinkConsumerLoop(proc, {
    serialTopics: [topics.ledger],
    commitIntervalMs: opts.autoCommitIntervalMs,
    seek: (t, p, o) => consumer?.seek(t, p, o),
    logger: log,
    onLag: metrics ? (topic, partition, lag) => metrics.setLag('sink', topic, partition, lag) : undefined,
  });
  const startConsumer = async (): Promise<void> => {
    const c = adapter.consumer({ groupId: opts.groupId, sessionTimeoutMs: opts.sessionTimeoutMs });
    consumer = c;
    c.onGroupJoin((assignment) => {
      joined = true;
      metrics?.retainLag('sink', assignment);
      failedRestarts = 0;
      loop.onGroupJoin();
      proc.forgetDraftChains();
      ledger.forgetHeads();
      runLedger.forgetHeads();
    });
    c.onCrash((e, restart) => {
      log.error({ err: e.message, restart }, 'sink: consumer crashed');
      if (restart) return;
      joined = false;
      metrics?.retainLag('sink');
      // kafkajs gave up on this consumer (e.g. retries exhausted while a broker was down): without a new one
      // the stage would sit idle in a live process. Its batches still in flight may finish inserting, but
      // their offsets are no longer committed (a new generation): the next consumer re-reads them.
      loop.onGroupJoin();
      proc.forgetDraftChains();
      if (!stopped && consumer === c) restartLater(c);
    });
    await c.subscribe(proc.inputTopics, true);
    if (stopped) return; // stop() ran during a restart: it stops and disconnects this consumer
    await c.runBatches(loop.handler, { partitionsConcurrently: opts.partitionsConcurrently ?? 6, autoCommit: false });
  };
  const restartLater = (dead: StewardConsumer): void => {
    const current = () => !stopped && consumer === dead;
    const delay = Math.min(30_000, (opts.restartDelayMs ?? 2000) * 2 ** failedRestarts);
    setTimeout(() => {
      if (!current()) return;
      restarting = (async () => {
        await dead.disconnect().catch(() => undefined);
        // This instance's next consumer waits for the dead one's batches (its ledger inserts above all). Another
        // instance may have taken the partitions meanwhile: that is a rebalance's case, and the ledger verifier
        // reports a raced entry (docs/analytics.md, Sink delivery).
        await loop.idle();
        if (!current()) return;
        log.warn('sink: restarting the crashed consumer');
        try {
          await startConsumer();
        } catch (e) {
          failedRestarts++;
          log.error({ err: (e as Error).message }, 'sink: consumer restart failed; retrying');
          if (!stopped && consumer) restartLater(consumer);
        }
      })();
    }, delay).unref();
  };
  opened.push(() => consumer?.disconnect() ?? Promise.resolve());
  await startConsumer();

  return {
    sink,
    store,
    isReady: () => joined,
    async stop() {
      if (stopped) return;
      stopped = true;
      const timeout = opts.shutdownTimeoutMs ?? 10_000;
      // Outstanding batches are inserted (and their offsets committed) before the consumer stops. If ClickHouse
      // is down they would wait forever: after the timeout the sink is aborted, the batches fail, and their
      // offsets stay uncommitted, so the next owner of the partitions re-reads those records.
      await loop.drain(timeout, () => {
        log.warn({ pending: sink.pending, batches: loop.pendingBatches }, 'sink: stopping with inserts outstanding; their offsets stay uncommitted');
        sink.abort('sink stopping with ClickHouse unavailable');
      });
      // A restart that is joining the group: let it finish, then stop the consumer it made.
      await restarting;
      await consumer?.stop().catch(() => undefined);
      sink.abort('sink stopped');
      await Promise.allSettled([consumer?.disconnect(), producer.disconnect()]);
      await pool?.close();
      await ledger.idsWritten();
      await runLedger.idsWritten();
      await store.close();
      metrics?.retainLag('sink');
    },
  };
}

/** `steward run sink` / startPipeline: options from the steward config. */
export async function startSinkFromConfig(
  cfg: { kafka: KafkaSettings; schemaRegistryUrl?: string; topics: { prefix: string }; clickhouse: ClickHouseSettings; consumer: { groupPrefix: string; sessionTimeoutMs: number; autoCommitIntervalMs: number }; signing?: { key: string; keyId?: string }; limits?: { shutdownTimeoutMs: number; maxMessageBytes?: number } },
  logger: Logger,
  signer: LedgerSigner,
  metrics?: StewardMetrics,
): Promise<RunningSink> {
  return startSinkStage({
    metrics,
    kafka: cfg.kafka,
    topicPrefix: cfg.topics.prefix,
    groupId: `${cfg.consumer.groupPrefix}-sink`,
    clickhouse: cfg.clickhouse,
    signer,
    logger,
    sessionTimeoutMs: cfg.consumer.sessionTimeoutMs,
    autoCommitIntervalMs: cfg.consumer.autoCommitIntervalMs,
    // 80 % of the process's budget: the sink must time out its drain (abort, leave the group, disconnect) before
    // `steward run`'s forced exit at the full budget.
    shutdownTimeoutMs: cfg.limits ? Math.floor(cfg.limits.shutdownTimeoutMs * 0.8) : undefined,
    maxMessageBytes: cfg.limits?.maxMessageBytes,
    schemaRegistryUrl: cfg.schemaRegistryUrl,
  });
}
