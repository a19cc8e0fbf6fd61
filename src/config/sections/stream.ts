/** limits.*, consumer.*, trust_debt.*: how the stages consume, size and commit records. */
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';

export interface StreamSection {
  /**
   * maxEventTimeSkewMs: a trace's own timestamp is agent-controlled, yet it drives rate-limit windows and
   * trust-debt decay; it is clamped to within this many ms of the Kafka record time (LogAppendTime on
   * topics we create). null trusts trace timestamps (replays and simulations that move time on purpose).
   * maxMessageBytes: the largest record a stage may produce (key + value + headers); every output is checked
   * before it is sent and an input whose outputs would exceed it is dead-lettered (STEWARD_TRACE_TOO_LARGE),
   * so no input can make a send fail forever. Default 1 000 000, below the broker's default
   * max.message.bytes (1 048 588). Keep maxTraceBytes well below it: the scoring message is the trace plus
   * its decision record (~1-2 KB), so a trace within that margin of the limit is dead-lettered, not scored.
   */
  limits: { maxTraceBytes: number; maxMessageBytes: number; chunkSize: number; partitionsConcurrently: number; shutdownTimeoutMs: number; maxEventTimeSkewMs: number | null };
  /**
   * groupPrefixDefaulted: no group_prefix was given (it derives from the topic prefix).
   * exactlyOnce: stages whose outputs commit with their input offsets in Kafka transactions (consumers/stage-runner.ts).
   */
  consumer: { groupPrefix: string; sessionTimeoutMs: number; autoCommitIntervalMs: number; groupPrefixDefaulted?: boolean; exactlyOnce: ('tripwire' | 'scorer')[]; scorerDedupTtlSeconds: number; scorerInput: 'scoring' | 'join' };
  /**
   * Periodic good-behaviour audit of the trust-debt stage (ACGP-1004 §10.4.2); interval 0 = lazy credits only.
   * dedupTtlSeconds: how long an applied trust-debt event id is remembered (a replay of older records applies them again).
   */
  trustDebt: { auditSweepIntervalMs: number; auditSweepLagMs: number; dedupTtlSeconds: number };
}

/** `steward` for the default topic prefix `acgp`, else `steward-<topic prefix>` (dots kept: valid group ids). */
export function defaultGroupPrefix(topicPrefix: string): string {
  const p = topicPrefix.endsWith('.') ? topicPrefix.slice(0, -1) : topicPrefix;
  return p === 'acgp' ? 'steward' : `steward-${p}`;
}

export function streamSection(raw: Raw): StreamSection {
  return {
    limits: {
      maxTraceBytes: v(raw, 'limits.max_trace_bytes'),
      maxMessageBytes: v(raw, 'limits.max_message_bytes'),
      chunkSize: v(raw, 'limits.chunk_size'),
      partitionsConcurrently: v(raw, 'limits.partitions_concurrently'),
      shutdownTimeoutMs: v(raw, 'limits.shutdown_timeout_ms'),
      maxEventTimeSkewMs: v(raw, 'limits.max_event_time_skew_ms'),
    },
    consumer: {
      // Deployments on one cluster told apart by their topic prefix must not share consumer groups: kafkajs would
      // hand one deployment's partitions to the other's members, which drop topics they did not subscribe to.
      groupPrefix: v(raw, 'consumer.group_prefix') ?? defaultGroupPrefix(v(raw, 'topics.prefix')),
      groupPrefixDefaulted: v(raw, 'consumer.group_prefix') === undefined,
      sessionTimeoutMs: v(raw, 'consumer.session_timeout_ms'),
      autoCommitIntervalMs: v(raw, 'consumer.auto_commit_interval_ms'),
      // The scorer by default: a recomputed verdict can differ from the first (LLM judge), so a redelivery must
      // not leave two behind. The tripwire stage decides deterministically and answers synchronous clients,
      // whose replies a transaction would hold back until its commit.
      exactlyOnce: [...new Set(v(raw, 'consumer.exactly_once'))],
      scorerDedupTtlSeconds: v(raw, 'consumer.scorer_dedup_ttl_seconds'),
      scorerInput: v(raw, 'consumer.scorer_input'),
    },
    trustDebt: {
      auditSweepIntervalMs: v(raw, 'trust_debt.audit_sweep_interval_ms'),
      auditSweepLagMs: v(raw, 'trust_debt.audit_sweep_lag_ms'),
      dedupTtlSeconds: v(raw, 'trust_debt.dedup_ttl_seconds'),
    },
  };
}
