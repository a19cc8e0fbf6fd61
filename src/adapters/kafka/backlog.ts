/**
 * Whether a consumer group still has records older than a time to read: the audit sweep (consumers/audit-sweep.ts)
 * must not credit a good-behaviour window while a non-ok event from inside it waits in the trust-debt stage's
 * backlog, or further up: a trace the tripwire stage has not decided, a scoring message the scorer has not
 * turned into a verdict. Record timestamps are the producing stage's clock (CreateTime): later than the event time they
 * carry, by the pipeline's latency plus up to the allowed event-time skew, so callers ask about a time that
 * far after their cutoff.
 */
import type { StewardAdmin } from './client.js';

/**
 * Partitions of `topics` where `groupId` has unread records with a timestamp before `beforeMs` (committed
 * offset below the first offset at `beforeMs`); a partition the group never committed counts from its low
 * watermark. Empty when the group is past `beforeMs` everywhere.
 */
export async function backlogBefore(admin: StewardAdmin, groupId: string, topics: readonly string[], beforeMs: number, opts: { ifStarted?: boolean } = {}): Promise<string[]> {
  const behind: string[] = [];
  for (const topic of topics) {
    const [at, committed, ends] = await Promise.all([admin.offsetsAtTime(topic, beforeMs), admin.groupOffsets(groupId, topic), admin.topicOffsets(topic)]);
    // `ifStarted`: a group that never committed on the topic is a stage this deployment does not run (steward
    // run --stages without it); waiting for it would hold the sweep back forever.
    if (opts.ifStarted && !committed.some((c) => BigInt(c.offset) >= 0n)) continue;
    const done = new Map(committed.map((c) => [c.partition, BigInt(c.offset)]));
    const low = new Map(ends.map((e) => [e.partition, BigInt(e.low)]));
    for (const p of at) {
      // Committed offsets below the low watermark (deleted records) and none at all (-1, kafkajs' -2 after an
      // out-of-range reset) both read from the low watermark.
      const c = done.get(p.partition) ?? -1n;
      const lo = low.get(p.partition) ?? 0n;
      const next = c > lo ? c : lo;
      if (next < BigInt(p.offset)) behind.push(`${topic}/${p.partition}`);
    }
  }
  return behind;
}

export interface BacklogCheck {
  groupId: string;
  topics: readonly string[];
  /** Skip a topic the group never committed on (see backlogBefore). */
  ifStarted?: boolean;
}

/** backlogBefore over several groups (the stages of one pipeline): every partition behind, in check order. */
export async function pipelineBacklogBefore(admin: StewardAdmin, checks: readonly BacklogCheck[], beforeMs: number): Promise<string[]> {
  const out = await Promise.all(checks.map((c) => backlogBefore(admin, c.groupId, c.topics, beforeMs, { ifStarted: c.ifStarted })));
  return out.flat();
}
