/**
 * Topic names (DESIGN §2) under a configurable prefix, and their creation. `replies` carries synchronous
 * decisions back to waiting StewardClients (see request-reply.ts); it is ours, not part of DESIGN §2.
 */
import type { StewardAdmin, TopicSpec } from './client.js';

export const TOPIC_KEYS = ['traces', 'decisions', 'scoring', 'verdicts', 'reviews', 'trustDebt', 'ledger', 'gate', 'dlq', 'replies'] as const;
export type TopicKey = (typeof TOPIC_KEYS)[number];
export type TopicNames = Record<TopicKey, string>;

const SUFFIX: Record<TopicKey, string> = {
  traces: 'traces',
  decisions: 'decisions',
  scoring: 'scoring',
  verdicts: 'verdicts',
  reviews: 'reviews',
  trustDebt: 'trust-debt',
  ledger: 'ledger',
  gate: 'gate',
  dlq: 'dlq',
  replies: 'replies',
};

/** `acgp` → acgp.traces, acgp.decisions, ... */
export function topicNames(prefix = 'acgp'): TopicNames {
  const p = prefix.endsWith('.') ? prefix.slice(0, -1) : prefix;
  const out = {} as TopicNames;
  for (const k of TOPIC_KEYS) out[k] = `${p}.${SUFFIX[k]}`;
  return out;
}

export interface TopicLayout {
  partitions: number;
  replicationFactor: number;
  /** The replies topic is sized for the number of concurrently connected clients, not for agent throughput. */
  replyPartitions: number;
  /** Retention for replies: they are only useful for seconds. */
  replyRetentionMs: number;
  /**
   * trust_debt.dedup_ttl_seconds in ms: when given, the trust-debt stage's inputs (decisions, verdicts, reviews)
   * get a retention that deletes every record before its event id is forgotten (see dedupSafeRetention).
   */
  dedupTtlMs?: number;
}

/** The trust-debt stage's input topics: a replayed record older than the dedup TTL would be applied twice. */
export const TRUST_DEBT_INPUTS = ['decisions', 'verdicts', 'reviews'] as const satisfies readonly TopicKey[];

/**
 * Kafka deletes whole segments, once their newest record is older than retention.ms: a record can live
 * retention.ms + segment.ms (plus the broker's 5-min retention check). Segments of a seventh of the TTL and a
 * retention of five sevenths keep every record's life a seventh of the TTL short of it (7 d: 1 d + 5 d).
 */
export function dedupSafeRetention(dedupTtlMs: number): { segmentMs: number; retentionMs: number } {
  // trust_debt.dedup_ttl_seconds is at least an hour: segments of 8.5 min and more.
  const segmentMs = Math.floor(dedupTtlMs / 7);
  return { segmentMs, retentionMs: dedupTtlMs - 2 * segmentMs };
}

export const DEFAULT_TOPIC_LAYOUT: TopicLayout = { partitions: 6, replicationFactor: 1, replyPartitions: 12, replyRetentionMs: 3_600_000 };

export function topicSpecs(names: TopicNames, layout: TopicLayout = DEFAULT_TOPIC_LAYOUT): TopicSpec[] {
  return TOPIC_KEYS.map((k) =>
    k === 'replies'
      ? {
          topic: names[k],
          numPartitions: layout.replyPartitions,
          replicationFactor: layout.replicationFactor,
          configEntries: [{ name: 'retention.ms', value: String(layout.replyRetentionMs) }],
        }
      : k === 'traces'
        ? // The broker stamps each trace on arrival: the reference the event-time clamp trusts (agents set CreateTime).
          { topic: names[k], numPartitions: layout.partitions, replicationFactor: layout.replicationFactor, configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] }
        : layout.dedupTtlMs !== undefined && (TRUST_DEBT_INPUTS as readonly string[]).includes(k)
          ? { topic: names[k], numPartitions: layout.partitions, replicationFactor: layout.replicationFactor, configEntries: dedupSafeEntries(layout.dedupTtlMs) }
          : { topic: names[k], numPartitions: layout.partitions, replicationFactor: layout.replicationFactor },
  );
}

function dedupSafeEntries(ttlMs: number): { name: string; value: string }[] {
  const r = dedupSafeRetention(ttlMs);
  return [
    { name: 'retention.ms', value: String(r.retentionMs) },
    { name: 'segment.ms', value: String(r.segmentMs) },
  ];
}

/** One line for operators: what is exposed and how to fix it. */
export function exposureText(e: ReplayExposure, dedupTtlMs: number): string {
  const life = e.retentionMs < 0 ? 'kept forever' : `kept up to ${Math.round((e.retentionMs + e.segmentMs) / 3_600_000)} h (retention.ms ${e.retentionMs} + segment.ms ${e.segmentMs})`;
  const safe = dedupSafeRetention(dedupTtlMs);
  return `${e.topic}: records ${life}, longer than trust_debt.dedup_ttl_seconds ${dedupTtlMs / 1000}: a replay of older records would apply them to trust debt again; set retention.ms ${safe.retentionMs} and segment.ms ${safe.segmentMs}, or raise the TTL`;
}

export interface ReplayExposure {
  topic: string;
  /** -1: kept forever. */
  retentionMs: number;
  segmentMs: number;
}

/**
 * Trust-debt input topics whose records can outlive their dedup key (retention.ms + segment.ms above the TTL,
 * or no time retention): a replay of such a record (a new consumer group, committed offsets expired while the
 * group was idle) would apply it again.
 */
export async function replayExposure(admin: StewardAdmin, names: TopicNames, dedupTtlMs: number): Promise<ReplayExposure[]> {
  const out: ReplayExposure[] = [];
  for (const k of TRUST_DEBT_INPUTS) {
    const c = await admin.topicConfig(names[k], ['retention.ms', 'segment.ms']);
    if (c['retention.ms'] === undefined) continue; // topic missing: reported where it is consumed
    const retentionMs = Number(c['retention.ms']);
    const segmentMs = Number(c['segment.ms'] ?? 0);
    if (retentionMs < 0 || retentionMs + segmentMs > dedupTtlMs) out.push({ topic: names[k], retentionMs, segmentMs });
  }
  return out;
}

/** Idempotent: returns the topics that were missing and got created. */
export async function createTopics(admin: StewardAdmin, names: TopicNames, layout: TopicLayout = DEFAULT_TOPIC_LAYOUT): Promise<string[]> {
  return admin.createTopics(topicSpecs(names, layout));
}
