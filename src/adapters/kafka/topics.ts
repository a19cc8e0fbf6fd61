/**
 * Topic names (docs/architecture.md, stages) under a configurable prefix, and their creation. `replies` carries synchronous
 * decisions back to waiting StewardClients (see request-reply.ts); it is ours, not one of the stage topics.
 */
import type { StewardAdmin, TopicSpec } from './client.js';

export const TOPIC_KEYS = ['traces', 'decisions', 'scoring', 'finalize', 'verdicts', 'reviews', 'trustDebt', 'ledger', 'gate', 'dlq', 'replies', 'rollouts', 'shadowDiffs', 'reviewQueue', 'approvals', 'approvalAnswers'] as const;
export type TopicKey = (typeof TOPIC_KEYS)[number];
export type TopicNames = Record<TopicKey, string>;

const SUFFIX: Record<TopicKey, string> = {
  traces: 'traces',
  decisions: 'decisions',
  scoring: 'scoring',
  finalize: 'finalize',
  verdicts: 'verdicts',
  reviews: 'reviews',
  trustDebt: 'trust-debt',
  ledger: 'ledger',
  gate: 'gate',
  dlq: 'dlq',
  replies: 'replies',
  // docs/rollout.md (contracts C8)
  rollouts: 'rollouts',
  shadowDiffs: 'shadow-diffs',
  reviewQueue: 'review-queue',
  // docs/approvals.md (contracts C9): requests and outcomes (Steward's principal writes) apart from approvers'
  // answers, so broker ACLs can keep an approver from writing a request or an outcome.
  approvals: 'approvals',
  approvalAnswers: 'approval-answers',
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
        : { topic: names[k], numPartitions: layout.partitions, replicationFactor: layout.replicationFactor },
  );
}

/** Idempotent: returns the topics that were missing and got created. */
export async function createTopics(admin: StewardAdmin, names: TopicNames, layout: TopicLayout = DEFAULT_TOPIC_LAYOUT): Promise<string[]> {
  return admin.createTopics(topicSpecs(names, layout));
}
