/**
 * The sink stage's record handling (src/process/sink-stage.ts wires it to Kafka): a batch of records from
 * acgp.decisions, .verdicts, .ledger, .trust-debt, .gate and .dlq becomes rows for the ClickHouseSink, ledger
 * drafts for acgp.ledger, and dead letters. Plain decisions and verdicts skip JSON.parse (decision-writer.ts,
 * verdict-writer.ts); everything else is parsed and mapped by rows.ts.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import { readDlqHeaders } from '../adapters/kafka/dlq.js';
import type { topicNames } from '../adapters/kafka/topics.js';
import { ledgerDraftFrom, type LedgerWriter } from '../adapters/clickhouse/ledger-store.js';
import type { ClickHouseSink, SinkItem } from '../adapters/clickhouse/sink.js';
import { DecisionTsvWriter, type LedgerDraftMessage } from '../adapters/clickhouse/decision-writer.js';
import { VerdictTsvWriter } from '../adapters/clickhouse/verdict-writer.js';
import { decisionRow, dlqRow, gateEventTable, gateJudgeResultRow, gateOutcomeRow, gateRow, trustDebtRow, verdictRow, type AcmLedgerRow, type TableName } from '../adapters/clickhouse/rows.js';
import type { LedgerDraft } from '../engine/ledger/index.js';
import { policyDecisionDraft, type PolicyDecisionInput } from '../contracts/policy-decision.js';
import { StewardError } from '../errors.js';
import { reviewQueueRow, rolloutEventRow, shadowDiffRow } from '../adapters/clickhouse/rollout-rows.js';
import { approvalRow } from '../adapters/clickhouse/approval-rows.js';
import { runEventRows, runRecordPart, type RunRecordJoin, type RunRecordPart } from './run-record-join.js';
import { avroSchemaId, OutputDecoder } from '../adapters/kafka/output-decoder.js';

type Kind = 'decisions' | 'verdicts' | 'ledger' | 'trustDebt' | 'gate' | 'dlq' | RolloutKind | 'approvals';
// docs/rollout.md: parsed and mapped by rollout-rows.ts.
type RolloutKind = 'rollouts' | 'shadowDiffs' | 'reviewQueue';
const ROLLOUT_ROWS: Record<RolloutKind, [TableName, (v: unknown, now: number) => object]> = {
  rollouts: ['rollout_events', rolloutEventRow],
  shadowDiffs: ['shadow_diffs', shadowDiffRow],
  reviewQueue: ['review_queue', reviewQueueRow],
};
const TABLE: Record<Exclude<Kind, 'ledger' | RolloutKind | 'approvals'>, TableName> = {
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

/** An acgp.ledger record for a run's chain (spec-decisions D30): a draft marked `chain: "run"`. */
function isRunChainRecord(v: unknown): boolean {
  return typeof v === 'object' && v !== null && (v as { chain?: unknown }).chain === 'run';
}

const runDraftKey = (tenant: string, runId: unknown, agent: string, entry: string): string => JSON.stringify([tenant, typeof runId === 'string' ? runId : '', agent, entry]);

/** Room for a batch's lines: its records' bytes (a TSV line is about as long as its record). */
function bytesOf(messages: readonly InMessage[]): number {
  let n = 4096;
  for (let k = 0; k < messages.length; k++) n += messages[k].value?.length ?? 0;
  return n;
}

export class SinkProcessor {
  private readonly kindOf: Map<string, Kind>;
  /** Per decisions partition: its latest draft publish, and the first offset of a batch whose publish failed. */
  private readonly draftChains = new Map<string, DraftChain>();

  constructor(
    readonly topics: ReturnType<typeof topicNames>,
    private readonly sink: ClickHouseSink,
    private readonly ledger: LedgerWriter,
    private readonly deadLetter: (m: InMessage, err: StewardError) => Promise<void>,
    /** Publishes POLICY_DECISION drafts to acgp.ledger (keyed by agent_id, the draft's JSON as value). */
    private readonly publishDrafts: (messages: LedgerDraftMessage[]) => Promise<void>,
    private readonly nowMs: () => number,
    /** A ledger id-index write failed (logged; repaired at the next head load). */
    private readonly onIndexError?: (e: unknown) => void,
    /** Chains acgp.ledger records marked `chain: "run"` per ACM run (acm_ledger, spec-decisions D30); without it they are dead-lettered. */
    private readonly runLedger?: LedgerWriter,
    /** Joins ACM runs' replay-record halves (run-record-join.ts); without it they are dead-lettered. */
    private readonly runRecords?: RunRecordJoin,
    /** Reads decisions, verdicts and trust-debt changes written in Avro (topics.avro_outputs); without a registry they are dead-lettered. */
    private readonly outputs: OutputDecoder = new OutputDecoder(undefined),
  ) {
    this.kindOf = new Map(
      (['decisions', 'verdicts', 'ledger', 'trustDebt', 'gate', 'dlq', 'rollouts', 'shadowDiffs', 'reviewQueue', 'approvals'] as Kind[]).map((k) => [topics[k], k]),
    );
  }

  get inputTopics(): string[] {
    return [...this.kindOf.keys()];
  }

  /**
   * `messages`: one partition's batch, in offset order (SinkConsumerLoop).
   * Resolves once every message of the batch is in ClickHouse or in the DLQ. `caughtUp`: the batch ends at its
   * partition's high watermark, so its rows need not linger for more (ClickHouseSink expediteRows). Resolves
   * to whether they went out at once for that reason (the loop then commits sooner).
   */
  async process(messages: InMessage[], caughtUp = false): Promise<boolean> {
    // Avro decisions, verdicts and trust-debt changes (topics.avro_outputs): their writer schemas are looked up before the synchronous
    // pass, one registry request per id not met before. A registry outage fails the batch (retried, nothing lost).
    const schemas = await this.outputs.schemasFor(this.outputValues(messages));
    const now = this.nowMs();
    const byTable = new Map<TableName, SinkItem[]>();
    const drafts: LedgerDraft[] = [];
    const draftSources: InMessage[] = [];
    const runDrafts: LedgerDraft[] = [];
    const runDraftSources: InMessage[] = [];
    const runParts: { part: RunRecordPart; source: InMessage }[] = [];
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
        // Avro records take the parse → row path with the decoded message (the same rows and drafts as its JSON).
        const avro = (kind === 'decisions' || kind === 'verdicts' || kind === 'trustDebt') && avroSchemaId(m.value) !== undefined;
        if (kind === 'decisions' && !avro && m.value && this.sink.encodesLines) {
          scanned ??= new DecisionTsvWriter(now, bytesOf(messages));
          const draft = scanned.add(m.value);
          if (draft) {
            scannedSources.push(m);
            decisionDrafts.push(draft);
            continue;
          }
        }
        if (kind === 'verdicts' && !avro && m.value && this.sink.encodesLines) {
          scannedVerdicts ??= new VerdictTsvWriter(now, bytesOf(messages));
          if (scannedVerdicts.add(m.value)) {
            verdictSources.push(m);
            continue;
          }
        }
        const v = avro ? schemas.decode(kind === 'decisions' ? 'decision' : kind === 'verdicts' ? 'verdict' : 'trustDebt', m.value!) : json(m);
        if (kind === 'decisions') {
          const row = decisionRow(v, now);
          push('decisions', { row, source: m });
          // The draft's time is the row's event time (which also accepts an ISO timestamp): set on the draft
          // rather than on a copy of the whole record (same result as passing event_time_ms: row.event_time_ms).
          const draft = policyDecisionDraft(v as PolicyDecisionInput);
          draft.ts_ms = Number.isSafeInteger(row.event_time_ms) ? row.event_time_ms : 0;
          decisionDrafts.push({ key: draft.agent_id, value: JSON.stringify(draft) });
        } else if (kind === 'ledger') {
          const part = runRecordPart(v);
          if (part) {
            if (!this.runRecords) throw new StewardError('STEWARD_SINK_RECORD', 'run record half, but this sink keeps no run records');
            runParts.push({ part, source: m });
          } else if (isRunChainRecord(v)) {
            if (!this.runLedger) throw new StewardError('STEWARD_SINK_RECORD', 'ledger record for a run chain, but this sink keeps no run chains');
            runDrafts.push(ledgerDraftFrom(v));
            runDraftSources.push(m);
          } else {
            drafts.push(ledgerDraftFrom(v));
            draftSources.push(m);
          }
        } else if (kind === 'trustDebt') {
          // A change marked `duplicate: true` is the original change replayed by Redis (same event id, same
          // values). It is stored all the same: if the trust-debt stage crashed after the Redis write and
          // before publishing, the replay is the only copy that ever reaches Kafka. The table dedupes by event_id.
          push('trust_debt_events', { row: trustDebtRow(v, now), source: m });
        } else if (kind === 'gate') {
          // Every gate record keeps its raw row in gate_events; the §9.13 events also get their typed table
          // (docs/analytics.md "Finalization gate"). Both rows are built first: a malformed event stores neither.
          const typed = gateEventTable(v);
          const raw = gateRow(v, now);
          if (typed === 'gate_judge_results') push(typed, { row: gateJudgeResultRow(v, now), source: m });
          else if (typed === 'gate_outcomes') push(typed, { row: gateOutcomeRow(v, now), source: m });
          push('gate_events', { row: raw, source: m });
        } else if (kind === 'rollouts' || kind === 'shadowDiffs' || kind === 'reviewQueue') {
          const [table, row] = ROLLOUT_ROWS[kind];
          push(table, { row: row(v, now), source: m });
        } else if (kind === 'approvals') {
          // docs/approvals.md: requests and outcomes (answers leave no row).
          const row = approvalRow(m.value, now);
          if (row) push('approvals', { row, source: m });
        } else {
          push(TABLE[kind], { row: verdictRow(v, now), source: m });
        }
      } catch (e) {
        const err = e instanceof StewardError ? e : new StewardError('STEWARD_SINK_RECORD', String(e));
        if (err.retryable) throw err;
        rejected.push(this.deadLetter(m, err));
      }
    }
    // Joined before the first await, so joins run in batch order (run-record-join.ts).
    const runJoin = runParts.length > 0 ? this.runRecords!.join(runParts) : undefined;
    runJoin?.catch(() => undefined); // awaited below; a failure before that must not be an unhandled rejection
    // Drafts are on the ledger topic before this batch's offsets can be committed (a redelivered decision
    // publishes its draft again; the chain skips an entry_id it already holds).
    if (decisionDrafts.length > 0) await this.publishInOrder(messages[0], decisionDrafts);
    // Chain (it may wait for ClickHouse to read heads), then hand every table to the sink at once.
    const ledgerRows = drafts.length > 0 ? await this.sink.withRetry('ledger', () => this.ledger.append(drafts)) : [];
    if (ledgerRows.length > 0) {
      const sourceOf = new Map(drafts.map((d, i) => [`${d.agent_id}\u0000${d.entry_id}`, draftSources[i]]));
      for (const row of ledgerRows) push('ledger', { row, source: sourceOf.get(`${row.agent_id}\u0000${row.entry_id}`) });
    }
    const runLedger = this.runLedger;
    // A joined run event: its POLICY_DECISION (with the record digests) and ACM entries go into the run's chain.
    const joinedRuns = runJoin ? await runJoin : undefined;
    if (joinedRuns) {
      if (!runLedger) throw new StewardError('STEWARD_SINK_RECORD', 'run records, but this sink keeps no run chains');
      for (const j of joinedRuns.joined) {
        for (const d of j.completed.drafts) {
          runDrafts.push(d);
          runDraftSources.push(j.source);
        }
      }
      for (const s of joinedRuns.staged) push('acm_run_records', s);
    }
    const runRows = runLedger && runDrafts.length > 0 ? await this.sink.withRetry('acm_ledger', () => runLedger.append(runDrafts)) : [];
    if (runRows.length > 0) {
      const sourceOf = new Map(runDrafts.map((d, i) => [runDraftKey(d.tenant, d.payload.run_id, d.agent_id, d.entry_id), runDraftSources[i]]));
      for (const row of runRows as AcmLedgerRow[]) push('acm_ledger', { row, source: sourceOf.get(runDraftKey(row.tenant, row.run_id, row.agent_id, row.entry_id)) });
    }
    if (joinedRuns && joinedRuns.joined.length > 0) {
      // Records only with a POLICY_DECISION chained now: an event already in the chain (a redelivery, a second
      // scoring) keeps the records its signed digests name.
      const fresh = new Set((runRows as AcmLedgerRow[]).map((r) => runDraftKey(r.tenant, r.run_id, r.agent_id, r.entry_id)));
      for (const j of joinedRuns.joined) {
        const pd = j.completed.drafts[0]!;
        if (fresh.has(runDraftKey(pd.tenant, pd.payload.run_id, pd.agent_id, pd.entry_id))) for (const row of runEventRows(j, now)) push('acm_run_records', { row, source: j.source });
      }
    }
    let expedited = false;
    const writes: Promise<void>[] = [...rejected];
    const write = (table: TableName, rows: number, send: () => Promise<void>) => {
      if (rows === 0) return;
      expedited ||= caughtUp && this.sink.expedites(table, rows);
      writes.push(send());
    };
    // A run event's records are stored before its chain entries: a failed insert between the two then leaves
    // records without entries, which the retried batch chains (a chained event's records are never written again).
    const records = byTable.get('acm_run_records');
    let recordsStored: Promise<void> | undefined;
    if (records) write('acm_run_records', records.length, () => (recordsStored = this.sink.write('acm_run_records', records, caughtUp)));
    for (const [t, items] of byTable) {
      if (t === 'acm_run_records') continue;
      const stored = t === 'acm_ledger' ? recordsStored : undefined;
      write(t, items.length, () => (stored ? stored.then(() => this.sink.write(t, items, caughtUp)) : this.sink.write(t, items, caughtUp)));
    }
    if (scanned) write('decisions', scannedSources.length, () => this.sink.writeEncoded('decisions', scanned.bytes(), scannedSources, caughtUp));
    if (scannedVerdicts) write('verdicts', verdictSources.length, () => this.sink.writeEncoded('verdicts', scannedVerdicts.bytes(), verdictSources, caughtUp));
    if (ledgerRows.length === 0 && runRows.length === 0) {
      await Promise.all(writes);
      return expedited;
    }
    try {
      await Promise.all(writes);
    } catch (e) {
      // The chain heads moved past rows that may not be stored: the redelivery reloads them from ClickHouse.
      if (ledgerRows.length > 0) await this.ledger.discard(ledgerRows);
      if (runRows.length > 0) await runLedger!.discard(runRows);
      throw e;
    }
    // Not awaited: a lost index write is repaired at the next head load (ledger-store.ts).
    if (ledgerRows.length > 0) this.ledger.stored(ledgerRows).catch((e: unknown) => this.onIndexError?.(e));
    if (runRows.length > 0) runLedger!.stored(runRows).catch((e: unknown) => this.onIndexError?.(e));
    return expedited;
  }

  private *outputValues(messages: readonly InMessage[]): Generator<Buffer | null> {
    for (const m of messages) if (m.topic === this.topics.decisions || m.topic === this.topics.verdicts || m.topic === this.topics.trustDebt) yield m.value;
  }

  /** Call on every group join and consumer crash: partitions may come back at other offsets (a new start). */
  forgetDraftChains(): void {
    this.draftChains.clear();
  }

  /**
   * Batches of a partition overlap (SinkConsumerLoop), and an agent's ledger entries chain in the order their
   * drafts reach acgp.ledger: a batch's drafts go out after the previous batch's, also when that one is retried.
   * If a publish fails for good, the batches queued behind it fail unpublished too; the partition is read again
   * from the failed batch (its first offset or earlier starts a new chain), so its drafts still come first.
   */
  private publishInOrder(first: InMessage, drafts: LedgerDraftMessage[]): Promise<void> {
    const key = `${first.topic}\u0000${first.partition}`;
    const from = BigInt(first.offset);
    let chain = this.draftChains.get(key);
    if (!chain || (chain.failedFrom !== undefined && from <= chain.failedFrom)) {
      chain = { tail: Promise.resolve() };
      this.draftChains.set(key, chain);
    }
    const c = chain;
    const published = c.tail.then(() => this.sink.withRetry('ledger-drafts', () => this.publishDrafts(drafts)));
    c.tail = published;
    published.catch(() => {
      if (c.failedFrom === undefined || from < c.failedFrom) c.failedFrom = from;
    });
    return published;
  }
}

interface DraftChain {
  tail: Promise<void>;
  failedFrom?: bigint;
}
