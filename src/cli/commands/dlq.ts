/**
 * `steward dlq list|replay`: read the dead-letter topic from its start to its current end, filtered by error
 * code, stage or source topic; `replay` publishes the traces the tripwire stage dead-lettered again to the traces
 * topic, with their original key, value and headers (after the cause was fixed: a blueprint bug behind
 * STEWARD_EVAL, an Avro schema registered late). The same bytes give the same idempotency id, so a trace replayed
 * twice is counted once. Records of other stages, and records whose value the DLQ had to leave out, are reported
 * and skipped (adapters/kafka/dlq.ts replayOf says why).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { KafkaAdapter, type InMessage, type OutRecord } from '../../adapters/kafka/client.js';
import { readDlqHeaders, replayOf } from '../../adapters/kafka/dlq.js';
import { topicNames } from '../../adapters/kafka/topics.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';
import { createLogger } from '../../logger.js';

export const USAGE =
  'usage: steward dlq list|replay [--config FILE] [--prefix P] [--code CODE] [--stage STAGE] [--source-topic T] [--limit N] [--dry-run] [--json] [--idle-ms MS]';

interface Filter {
  code?: string;
  stage?: string;
  sourceTopic?: string;
}

function matches(m: InMessage, f: Filter): boolean {
  const h = readDlqHeaders(m);
  return (f.code === undefined || h.code === f.code) && (f.stage === undefined || h.stage === f.stage) && (f.sourceTopic === undefined || h.sourceTopic === f.sourceTopic);
}

function positiveInt(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new StewardError('STEWARD_USAGE', `${name} must be a positive integer\n${USAGE}`);
  return n;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      prefix: { type: 'string' },
      code: { type: 'string' },
      stage: { type: 'string' },
      'source-topic': { type: 'string' },
      limit: { type: 'string' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      'idle-ms': { type: 'string' },
    },
  });
  const sub = positionals[0];
  if ((sub !== 'list' && sub !== 'replay') || positionals.length > 1) throw new StewardError('STEWARD_USAGE', USAGE);
  const limit = positiveInt(values.limit, '--limit', Number.MAX_SAFE_INTEGER);
  const idleMs = positiveInt(values['idle-ms'], '--idle-ms', 15_000);
  const cfg = loadStewardConfig(values.config);
  const names = topicNames(values.prefix ?? cfg.topics.prefix);
  const filter: Filter = { code: values.code, stage: values.stage, sourceTopic: values['source-topic'] };
  const adapter = new KafkaAdapter(cfg.kafka, createLogger({ level: cfg.logLevel === 'debug' ? 'debug' : 'warn' }));
  const dryRun = sub === 'list' || values['dry-run'] === true;
  const producer = dryRun ? undefined : await adapter.producer();
  const out = (line: string) => process.stdout.write(line + '\n');
  let seen = 0;
  let matched = 0;
  let done = 0; // listed, or replayed (or would be, with --dry-run): what --limit counts
  let skipped = 0;
  const handle = async (batch: InMessage[]): Promise<void> => {
    const records: OutRecord[] = [];
    for (const m of batch) {
      if (done >= limit) break;
      seen++;
      if (!matches(m, filter)) continue;
      matched++;
      const h = readDlqHeaders(m);
      const at = `${m.topic}/${m.partition}/${m.offset}`;
      if (sub === 'list') {
        done++;
        if (values.json) out(JSON.stringify({ dlq: at, ...h, key: m.key?.toString('utf8') ?? null, value_bytes: m.value?.length ?? 0, timestamp_ms: m.timestampMs }));
        else out(`${at}  ${h.code ?? '?'}  ${h.stage ?? '?'}  ${h.sourceTopic ?? '?'}/${h.sourcePartition ?? '?'}/${h.sourceOffset ?? '?'}  ${h.message ?? ''}`);
        continue;
      }
      const plan = replayOf(m, names.traces);
      if (!plan.ok) {
        skipped++;
        out(values.json ? JSON.stringify({ dlq: at, skipped: plan.reason }) : `skipped ${at}: ${plan.reason}`);
        continue;
      }
      done++;
      if (values.json) out(JSON.stringify({ dlq: at, replay_to: plan.topic, code: h.code, dry_run: dryRun }));
      records.push({ topic: plan.topic, messages: [plan.message] });
    }
    // One send per DLQ batch, awaited before the next: one agent's records (one DLQ partition) keep their order.
    if (producer && records.length > 0) await producer.send(records);
  };
  let unfinished: number[];
  try {
    unfinished = await readToEnd(adapter, names.dlq, `${cfg.consumer.groupPrefix}-dlq-cli-${randomBytes(6).toString('hex')}`, handle, () => done >= limit, idleMs);
  } finally {
    await producer?.disconnect();
  }
  if (unfinished.length > 0) {
    process.stderr.write(`note: partitions ${unfinished.join(', ')} of ${names.dlq} sent nothing more for ${idleMs} ms before their end at the start (control records or compaction there, or a slow broker: run again to be sure)\n`);
  }
  if (!values.json) {
    const verb = sub === 'list' ? 'listed' : dryRun ? 'would be replayed' : 'replayed';
    process.stderr.write(`${names.dlq}: ${seen} records read, ${matched} matched, ${done} ${verb}${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
  return skipped > 0 ? 1 : 0;
}

/**
 * Reads `topic` from its start up to the high watermarks it has now, in a throwaway consumer group, and returns
 * the partitions it could not finish: reading stops once every partition delivered its record before that end, or
 * when nothing arrived for `idleMs` (a partition ending in control records or compacted offsets never delivers its
 * last offset). A consumer kafkajs restarts re-reads from the start (nothing is committed); what a partition
 * already handled is skipped.
 */
async function readToEnd(
  adapter: KafkaAdapter,
  topic: string,
  groupId: string,
  handle: (batch: InMessage[]) => Promise<void>,
  enough: () => boolean,
  idleMs: number,
): Promise<number[]> {
  const admin = await adapter.admin();
  try {
    const ends = new Map((await admin.topicOffsets(topic)).filter((p) => BigInt(p.high) > BigInt(p.low)).map((p) => [p.partition, BigInt(p.high)]));
    if (ends.size === 0) return [];
    const handled = new Map<number, bigint>();
    const consumer = adapter.consumer({ groupId, maxWaitTimeMs: 200 });
    let finish!: () => void;
    let fail!: (e: Error) => void;
    const finished = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
    finished.catch(() => undefined); // settled before it is awaited (a crash while subscribing) must not go unhandled
    consumer.onCrash((err, willRestart) => {
      if (!willRestart) fail(err);
    });
    let idle = setTimeout(finish, idleMs + 30_000); // the first fetch waits for the group join too
    try {
      await consumer.subscribe([topic], true);
      await consumer.runBatches(
        async (b, ctl) => {
          clearTimeout(idle);
          idle = setTimeout(finish, idleMs);
          const end = ends.get(b.partition);
          if (end === undefined) return;
          const from = handled.get(b.partition) ?? -1n;
          const todo = b.messages.filter((m) => {
            const o = BigInt(m.offset);
            return o > from && o < end;
          });
          if (todo.length > 0) {
            await handle(todo);
            handled.set(b.partition, BigInt(todo[todo.length - 1]!.offset));
            ctl.resolveOffset(todo[todo.length - 1]!.offset);
          }
          // Past the end (a record appended since) also ends it: the end itself may be a control record.
          const last = b.messages.length > 0 ? BigInt(b.messages[b.messages.length - 1]!.offset) : -1n;
          if ((handled.get(b.partition) ?? -1n) >= end - 1n || last >= end - 1n) ends.delete(b.partition);
          if (ends.size === 0 || enough()) finish();
        },
        { partitionsConcurrently: 1, autoCommit: false },
      );
      await finished;
      return enough() ? [] : [...ends.keys()].sort((a, b) => a - b);
    } finally {
      clearTimeout(idle);
      await consumer.disconnect().catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
  } finally {
    await admin.disconnect();
  }
}
