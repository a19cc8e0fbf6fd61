/**
 * `steward dlq list|replay`: read the dead-letter topic from its start to its current end, filtered by error
 * code, stage or source topic; `replay` publishes each matching record's original key, value and headers again
 * to its source topic (after the cause was fixed: a blueprint bug behind STEWARD_EVAL, a schema registered
 * late). Replays go through the normal pipeline, whose consumers dedupe by trace and event id, so replaying a
 * record twice is harmless. Records whose value the DLQ had to leave out, or that name a topic outside this
 * deployment, are reported and skipped.
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
  'usage: steward dlq list|replay [--config FILE] [--prefix P] [--code CODE] [--stage STAGE] [--source-topic T] [--limit N] [--dry-run] [--json] [--timeout-ms MS]';

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
      'timeout-ms': { type: 'string' },
    },
  });
  const sub = positionals[0];
  if ((sub !== 'list' && sub !== 'replay') || positionals.length > 1) throw new StewardError('STEWARD_USAGE', USAGE);
  const limit = positiveInt(values.limit, '--limit', Number.MAX_SAFE_INTEGER);
  const timeoutMs = positiveInt(values['timeout-ms'], '--timeout-ms', 60_000);
  const cfg = loadStewardConfig(values.config);
  const names = topicNames(values.prefix ?? cfg.topics.prefix);
  const filter: Filter = { code: values.code, stage: values.stage, sourceTopic: values['source-topic'] };
  const allowed = new Set(Object.values(names).filter((t) => t !== names.dlq && t !== names.replies));
  const adapter = new KafkaAdapter(cfg.kafka, createLogger({ level: cfg.logLevel === 'debug' ? 'debug' : 'warn' }));
  const dryRun = sub === 'list' || values['dry-run'] === true;
  const producer = dryRun ? undefined : await adapter.producer();
  const out = (line: string) => process.stdout.write(line + '\n');
  let seen = 0;
  let matched = 0;
  let replayed = 0;
  let skipped = 0;
  const handle = async (batch: InMessage[]): Promise<void> => {
    const records: OutRecord[] = [];
    for (const m of batch) {
      seen++;
      if (matched >= limit || !matches(m, filter)) continue;
      matched++;
      const h = readDlqHeaders(m);
      const at = `${m.topic}/${m.partition}/${m.offset}`;
      if (sub === 'list') {
        if (values.json) out(JSON.stringify({ dlq: at, ...h, key: m.key?.toString('utf8') ?? null, value_bytes: m.value?.length ?? 0, timestamp_ms: m.timestampMs }));
        else out(`${at}  ${h.code ?? '?'}  ${h.stage ?? '?'}  ${h.sourceTopic ?? '?'}/${h.sourcePartition ?? '?'}/${h.sourceOffset ?? '?'}  ${h.message ?? ''}`);
        continue;
      }
      const plan = replayOf(m, allowed);
      if (!plan.ok) {
        skipped++;
        out(values.json ? JSON.stringify({ dlq: at, skipped: plan.reason }) : `skipped ${at}: ${plan.reason}`);
        continue;
      }
      if (values.json) out(JSON.stringify({ dlq: at, replay_to: plan.topic, code: h.code, dry_run: dryRun }));
      records.push({ topic: plan.topic, messages: [plan.message] });
      replayed++;
    }
    // One send per DLQ batch, awaited before the next: one agent's records (one DLQ partition) keep their order.
    if (producer && records.length > 0) await producer.send(records);
  };
  try {
    await readToEnd(adapter, names.dlq, `${cfg.consumer.groupPrefix}-dlq-cli-${randomBytes(6).toString('hex')}`, handle, () => matched >= limit, timeoutMs);
  } finally {
    await producer?.disconnect();
  }
  if (!values.json) {
    const verb = sub === 'list' ? 'listed' : dryRun ? 'would replay' : 'replayed';
    process.stderr.write(`${names.dlq}: ${seen} records read, ${matched} matched, ${sub === 'list' ? matched : replayed} ${verb}${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
  return skipped > 0 ? 1 : 0;
}

/** Reads `topic` from its start up to the high watermarks it has now, in a throwaway consumer group. */
async function readToEnd(adapter: KafkaAdapter, topic: string, groupId: string, handle: (batch: InMessage[]) => Promise<void>, enough: () => boolean, timeoutMs: number): Promise<void> {
  const admin = await adapter.admin();
  try {
    const ends = new Map((await admin.topicOffsets(topic)).filter((p) => BigInt(p.high) > BigInt(p.low)).map((p) => [p.partition, BigInt(p.high)]));
    if (ends.size === 0) return;
    const consumer = adapter.consumer({ groupId, maxWaitTimeMs: 200 });
    let done!: () => void;
    let fail!: (e: Error) => void;
    const finished = new Promise<void>((resolve, reject) => ((done = resolve), (fail = reject)));
    consumer.onCrash((err, willRestart) => {
      if (!willRestart) fail(err);
    });
    const timer = setTimeout(() => fail(new StewardError('STEWARD_KAFKA', `reading ${topic} did not reach its end within ${timeoutMs} ms (--timeout-ms)`)), timeoutMs);
    try {
      await consumer.subscribe([topic], true);
      await consumer.runBatches(
        async (b, ctl) => {
          const end = ends.get(b.partition);
          if (end === undefined) return;
          const upTo = b.messages.filter((m) => BigInt(m.offset) < end);
          if (upTo.length > 0) await handle(upTo);
          if (upTo.length > 0) ctl.resolveOffset(upTo[upTo.length - 1]!.offset);
          if (b.messages.some((m) => BigInt(m.offset) >= end - 1n) || enough()) ends.delete(b.partition);
          if (ends.size === 0 || enough()) done();
        },
        { partitionsConcurrently: 1, autoCommit: false },
      );
      await finished;
    } finally {
      clearTimeout(timer);
      await consumer.disconnect().catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
  } finally {
    await admin.disconnect();
  }
}
