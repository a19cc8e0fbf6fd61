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
import { KafkaAdapter, type BatchControl, type InBatch, type InMessage, type KafkaSettings, type StewardConsumer, type StewardProducer } from '../adapters/kafka/client.js';
import { dlqMessage, readDlqHeaders } from '../adapters/kafka/dlq.js';
import { topicNames } from '../adapters/kafka/topics.js';
import { ClickHouseStore, type ClickHouseSettings } from '../adapters/clickhouse/client.js';
import { migrate } from '../adapters/clickhouse/migrations.js';
import { LedgerWriter, ledgerDraftFrom } from '../adapters/clickhouse/ledger-store.js';
import type { PoolableLedgerSigner } from '../adapters/clickhouse/ledger-keys.js';
import { ClickHouseSink, type PoisonRow, type SinkItem } from '../adapters/clickhouse/sink.js';
import { DecisionTsvWriter, type LedgerDraftMessage } from '../adapters/clickhouse/decision-writer.js';
import { VerdictTsvWriter } from '../adapters/clickhouse/verdict-writer.js';
import { decisionRow, dlqRow, gateRow, trustDebtRow, verdictRow, type TableName } from '../adapters/clickhouse/rows.js';
import { policyDecisionDraft, type LedgerDraft, type LedgerSigner, type PolicyDecisionInput } from '../engine/ledger/index.js';
import { StewardError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StewardMetrics } from '../observability/metrics.js';
import { SinkConsumerLoop } from './sink-loop.js';

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
}

export interface RunningSink {
  readonly sink: ClickHouseSink;
  readonly store: ClickHouseStore;
  isReady(): boolean;
  stop(): Promise<void>;
}

type Kind = 'decisions' | 'verdicts' | 'ledger' | 'trustDebt' | 'gate' | 'dlq';
const TABLE: Record<Exclude<Kind, 'ledger'>, TableName> = {
  decisions: 'decisions',
  verdicts: 'verdicts',
  trustDebt: 'trust_debt_events',
  gate: 'gate_events',
  dlq: 'dlq_events',
};

function json(m: InMessage): unknown {
  if (!m.value) throw new StewardError('STEWARD_SINK_RECORD', 'empty record value');
  try {
    return JSON.parse(m.value.toString('utf8'));
  } catch (e) {
    throw new StewardError('STEWARD_SINK_RECORD', `not JSON: ${(e as Error).message}`);
  }
}

/** Room for a batch's lines: its records' bytes (a TSV line is about as long as its record). */
function bytesOf(messages: readonly InMessage[]): number {
  let n = 4096;
  for (let k = 0; k < messages.length; k++) n += messages[k].value?.length ?? 0;
  return n;
}

export class SinkProcessor {
  private readonly kindOf: Map<string, Kind>;
  private draftsPublished: Promise<unknown> = Promise.resolve();

  constructor(
    readonly topics: ReturnType<typeof topicNames>,
    private readonly sink: ClickHouseSink,
    private readonly ledger: LedgerWriter,
    private readonly deadLetter: (m: InMessage, err: StewardError) => Promise<void>,
    /** Publishes POLICY_DECISION drafts to acgp.ledger (keyed by agent_id, the draft's JSON as value). */
    private readonly publishDrafts: (messages: LedgerDraftMessage[]) => Promise<void>,
    private readonly nowMs: () => number,
  ) {
    this.kindOf = new Map(
      (['decisions', 'verdicts', 'ledger', 'trustDebt', 'gate', 'dlq'] as Kind[]).map((k) => [topics[k], k]),
    );
  }

  get inputTopics(): string[] {
    return [...this.kindOf.keys()];
  }

  /**
   * Resolves once every message of the batch is in ClickHouse or in the DLQ. `caughtUp`: the batch ends at its
   * partition's high watermark, so its rows need not linger for more (ClickHouseSink expediteRows).
   */
  async process(messages: InMessage[], caughtUp = false): Promise<void> {
    const now = this.nowMs();
    const byTable = new Map<TableName, SinkItem[]>();
    const drafts: LedgerDraft[] = [];
    const draftSources: InMessage[] = [];
    // In batch order, so one agent's entries chain in the order of its decisions.
    const decisionDrafts: LedgerDraftMessage[] = [];
    const rejected: Promise<void>[] = [];
    // Plain decision and verdict records (what the tripwire and scorer stages write) go from their bytes to
    // TSV bytes (decision-writer.ts, verdict-writer.ts); the rest take the parse → row path below.
    let scanned: DecisionTsvWriter | undefined;
    const scannedSources: InMessage[] = [];
    let scannedVerdicts: VerdictTsvWriter | undefined;
    const verdictSources: InMessage[] = [];
    const push = (t: TableName, item: SinkItem) => {
      const list = byTable.get(t);
      if (list) list.push(item);
      else byTable.set(t, [item]);
    };
    for (const m of messages) {
      const kind = this.kindOf.get(m.topic);
      if (!kind) continue;
      try {
        if (kind === 'dlq') {
          const h = readDlqHeaders(m);
          const failedAt = m.headers['x-steward-failed-at'];
          const sourceTs = m.headers['x-steward-source-timestamp'];
          push('dlq_events', {
            row: dlqRow(
              {
                dlq_topic: m.topic, dlq_partition: m.partition, dlq_offset: m.offset,
                source_topic: h.sourceTopic, source_partition: h.sourcePartition, source_offset: h.sourceOffset,
                source_ts_ms: sourceTs ? Number(sourceTs.toString()) : undefined,
                stage: h.stage, code: h.code, message: h.message,
                failed_at_ms: failedAt ? Number(failedAt.toString()) : undefined,
                timestamp_ms: m.timestampMs, key: m.key?.toString('utf8'), value_bytes: m.value?.length ?? 0,
              },
              now,
            ),
            source: m,
          });
          continue;
        }
        if (kind === 'decisions' && m.value && this.sink.encodesLines) {
          scanned ??= new DecisionTsvWriter(now, bytesOf(messages));
          const draft = scanned.add(m.value);
          if (draft) {
            scannedSources.push(m);
            decisionDrafts.push(draft);
            continue;
          }
        }
        if (kind === 'verdicts' && m.value && this.sink.encodesLines) {
          scannedVerdicts ??= new VerdictTsvWriter(now, bytesOf(messages));
          if (scannedVerdicts.add(m.value)) {
            verdictSources.push(m);
            continue;
          }
        }
        const v = json(m);
        if (kind === 'decisions') {
          const row = decisionRow(v, now);
          push('decisions', { row, source: m });
          // The draft's time is the row's event time (which also accepts an ISO timestamp): set on the draft
          // rather than on a copy of the whole record (same result as passing event_time_ms: row.event_time_ms).
          const draft = policyDecisionDraft(v as PolicyDecisionInput);
          draft.ts_ms = Number.isSafeInteger(row.event_time_ms) ? row.event_time_ms : 0;
          decisionDrafts.push({ key: draft.agent_id, value: JSON.stringify(draft) });
        } else if (kind === 'ledger') {
          drafts.push(ledgerDraftFrom(v));
          draftSources.push(m);
        } else if (kind === 'trustDebt') {
          // A change marked `duplicate: true` is the original change replayed by Redis (same event id, same
          // values). It is stored all the same: if the trust-debt stage crashed after the Redis write and
          // before publishing, the replay is the only copy that ever reaches Kafka. The table dedupes by event_id.
          push('trust_debt_events', { row: trustDebtRow(v, now), source: m });
        } else {
          push(TABLE[kind], { row: kind === 'verdicts' ? verdictRow(v, now) : gateRow(v, now), source: m });
        }
      } catch (e) {
        const err = e instanceof StewardError ? e : new StewardError('STEWARD_SINK_RECORD', String(e));
        if (err.retryable) throw err;
        rejected.push(this.deadLetter(m, err));
      }
    }
    // Drafts are on the ledger topic before this batch's offsets can be committed (a redelivered decision
    // publishes its draft again; the chain skips an entry_id it already holds).
    // Batches overlap (SinkConsumerLoop): publish in batch order, also when a publish is retried.
    if (decisionDrafts.length > 0) {
      const published = this.draftsPublished.then(() => this.sink.withRetry('ledger-drafts', () => this.publishDrafts(decisionDrafts)));
      this.draftsPublished = published.catch(() => undefined);
      await published;
    }
    // Chain (it may wait for ClickHouse to read heads), then hand every table to the sink at once.
    const ledgerRows = drafts.length > 0 ? await this.sink.withRetry('ledger', () => this.ledger.append(drafts)) : [];
    if (ledgerRows.length > 0) {
      const sourceOf = new Map(drafts.map((d, i) => [`${d.agent_id}\u0000${d.entry_id}`, draftSources[i]]));
      for (const row of ledgerRows) push('ledger', { row, source: sourceOf.get(`${row.agent_id}\u0000${row.entry_id}`) });
    }
    const writes = [...byTable].map(([t, items]) => this.sink.write(t, items, caughtUp));
    if (scanned && scannedSources.length > 0) writes.push(this.sink.writeEncoded('decisions', scanned.bytes(), scannedSources, caughtUp));
    if (scannedVerdicts && verdictSources.length > 0) writes.push(this.sink.writeEncoded('verdicts', scannedVerdicts.bytes(), verdictSources, caughtUp));
    await Promise.all([...writes, ...rejected]);
  }
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
    await producer.send([{ topic: topics.dlq, messages: [dlqMessage(m, { code: err.code, message: err.message }, 'sink', now())] }]);
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
  metrics?.watchSinkBuffer(() => sink.pending);
  // Per-entry Ed25519 signatures on worker threads when the signer can (steward run): on this thread they
  // were ~40 % of the stage's CPU (bench:sink, full-stage line).
  const pool = 'signPool' in opts.signer && opts.signThreads !== 0 ? (opts.signer as PoolableLedgerSigner).signPool(opts.signThreads) : undefined;
  if (pool) opened.push(() => pool.close());
  const ledger = new LedgerWriter(store, opts.signer, { nowMs: now, signMany: pool ? (h) => pool.signMany(h) : undefined });
  const publishDrafts = (messages: LedgerDraftMessage[]) => producer.send([{ topic: topics.ledger, messages }]);
  const proc = new SinkProcessor(topics, sink, ledger, deadLetter, publishDrafts, now);

  let consumer: StewardConsumer | undefined;
  let joined = false;
  let stopped = false;
  const loop = new SinkConsumerLoop(proc, {
    serialTopics: [topics.ledger],
    commitIntervalMs: opts.autoCommitIntervalMs,
    seek: (t, p, o) => consumer?.seek(t, p, o),
    logger: log,
  });
  const startConsumer = async (): Promise<void> => {
    const c = adapter.consumer({ groupId: opts.groupId, sessionTimeoutMs: opts.sessionTimeoutMs });
    consumer = c;
    c.onGroupJoin(() => {
      joined = true;
      loop.onGroupJoin();
      ledger.forgetHeads();
    });
    c.onCrash((e, restart) => {
      log.error({ err: e.message, restart }, 'sink: consumer crashed');
      if (restart) return;
      joined = false;
      // kafkajs gave up on this consumer (e.g. retries exhausted while a broker was down): without a new one
      // the stage would sit idle in a live process. Its batches still in flight may finish inserting, but
      // their offsets are no longer committed (a new generation): the next consumer re-reads them.
      loop.onGroupJoin();
      if (!stopped && consumer === c) restartLater(c);
    });
    await c.subscribe(proc.inputTopics, true);
    const handler = metrics
      ? (b: InBatch, ctl: BatchControl) => {
          const last = b.messages.length > 0 ? BigInt(b.messages[b.messages.length - 1].offset) + 1n : undefined;
          if (last !== undefined) {
            const lag = BigInt(b.highWatermark) - last;
            metrics.consumerLag.set({ stage: 'sink', topic: b.topic, partition: String(b.partition) }, Number(lag < 0n ? 0n : lag));
          }
          return loop.handler(b, ctl);
        }
      : loop.handler;
    await c.runBatches(handler, { partitionsConcurrently: opts.partitionsConcurrently ?? 6, autoCommit: false });
  };
  const restartLater = (dead: StewardConsumer): void => {
    const current = () => !stopped && consumer === dead;
    setTimeout(() => {
      if (!current()) return;
      void (async () => {
        await dead.disconnect().catch(() => undefined);
        // The dead consumer's ledger batches must be done before a new consumer re-reads their partitions:
        // a chain has one writer at a time.
        await loop.idle();
        if (!current()) return;
        log.warn('sink: restarting the crashed consumer');
        try {
          await startConsumer();
        } catch (e) {
          log.error({ err: (e as Error).message }, 'sink: consumer restart failed; retrying');
          if (!stopped && consumer) restartLater(consumer);
          return;
        }
        if (stopped) await consumer?.disconnect().catch(() => undefined);
      })();
    }, opts.restartDelayMs ?? 2000).unref();
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
      await consumer?.stop().catch(() => undefined);
      sink.abort('sink stopped');
      await Promise.allSettled([consumer?.disconnect(), producer.disconnect()]);
      await pool?.close();
      await store.close();
    },
  };
}

/** `steward run sink` / startPipeline: options from the steward config. */
export async function startSinkFromConfig(
  cfg: { kafka: KafkaSettings; topics: { prefix: string }; clickhouse: ClickHouseSettings; consumer: { groupPrefix: string; sessionTimeoutMs: number; autoCommitIntervalMs: number }; signing?: { key: string; keyId?: string }; limits?: { shutdownTimeoutMs: number } },
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
    shutdownTimeoutMs: cfg.limits?.shutdownTimeoutMs,
  });
}
