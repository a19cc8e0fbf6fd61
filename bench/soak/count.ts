// bench:soak's output count: how many records of each topic name each trace id of the run, read from the
// beginning to the end the topics have now (read_committed: aborted transactions are not counted).
import { Kafka, logLevel } from 'kafkajs';

export interface TraceCounts {
  /** Distinct trace ids (matching `idPrefix`) with at least one record. */
  distinct: number;
  /** Records beyond the first for the same trace id: written twice. */
  twice: number;
}

/** Per topic, the records whose JSON value has a `trace_id` starting with `idPrefix`. */
export async function countTraceRecords(brokers: string[], topics: string[], idPrefix: string): Promise<Map<string, TraceCounts>> {
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<string, number>();
  try {
    for (const t of topics) for (const p of await admin.fetchTopicOffsets(t)) ends.set(`${t}/${p.partition}`, Number(p.high));
  } finally {
    await admin.disconnect();
  }
  const seen = new Map<string, Map<string, number>>(topics.map((t) => [t, new Map()]));
  const pending = new Set([...ends].filter(([, high]) => high > 0).map(([k]) => k));
  const consumer = kafka.consumer({ groupId: `soak-count-${Date.now().toString(36)}`, maxBytes: 32 << 20, maxWaitTimeInMs: 500 });
  let lastAt = Date.now();
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      if (pending.size === 0) return resolve();
      const t = setTimeout(() => reject(new Error(`soak count: topics not read to their end in 300 s (${[...pending].join(', ')} left)`)), 300_000);
      void consumer.run({
        eachBatch: async ({ batch }) => {
          const ids = seen.get(batch.topic)!;
          for (const m of batch.messages) {
            const id = traceIdOf(m.value);
            if (id !== undefined && id.startsWith(idPrefix)) ids.set(id, (ids.get(id) ?? 0) + 1);
          }
          lastAt = Date.now();
          // A transactional topic ends with a commit marker, not a record: the idle check below ends those.
          const last = batch.messages.length > 0 ? Number(batch.messages[batch.messages.length - 1]!.offset) : -1;
          if (last + 1 >= (ends.get(`${batch.topic}/${batch.partition}`) ?? 0)) pending.delete(`${batch.topic}/${batch.partition}`);
        },
      });
      // Done when every partition was read to its end, or (markers left) nothing came for 8 s.
      const poll = setInterval(() => {
        if (pending.size > 0 && Date.now() - lastAt < 8000) return;
        clearInterval(poll);
        clearTimeout(t);
        resolve();
      }, 500);
    });
  } finally {
    await consumer.disconnect();
  }
  const out = new Map<string, TraceCounts>();
  for (const [t, ids] of seen) {
    let twice = 0;
    for (const n of ids.values()) twice += n - 1;
    out.set(t, { distinct: ids.size, twice });
  }
  return out;
}

function traceIdOf(v: Buffer | null): string | undefined {
  if (v === null) return undefined;
  try {
    const o = JSON.parse(v.toString('utf8')) as { trace_id?: unknown };
    return typeof o.trace_id === 'string' ? o.trace_id : undefined;
  } catch {
    return undefined;
  }
}
