/**
 * The scorer stage's processor for `consumer.scorer_input` (docs/pipeline.md "Hot path", spec-decisions D29):
 * `scoring` reads acgp.scoring (the tripwire stage's copy of the trace with its decision record); `join` reads
 * acgp.decisions and each decision's trace from acgp.traces (consumers/scorer-join.ts).
 */
import type { KafkaAdapter, StewardAdmin } from '../adapters/kafka/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import type { TraceDecoder } from '../adapters/kafka/serde.js';
import type { OutputDecoder } from '../adapters/kafka/output-decoder.js';
import type { ReplyTarget } from '../adapters/kafka/request-reply.js';
import { PartitionReaders } from '../adapters/kafka/trace-reader.js';
import type { StewardConfig } from '../config/steward-config.js';
import { groupId } from '../config/steward-config.js';
import { StewardError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { StageProcessor } from '../consumers/stage-runner.js';
import { ScorerProcessor, type ScorerStageDeps } from '../consumers/scorer.js';
import { JoinedScorerProcessor } from '../consumers/scorer-join.js';

/**
 * The join reads the trace of a decision from the same partition number of acgp.traces: both topics are keyed by
 * agent_id with the same partitioner, so they place an agent alike only with the same partition count. With
 * different counts the join would still be correct (the decision names the partition) but every scorer instance
 * would read every traces partition: refused, naming the fix.
 */
export async function checkCoPartitioned(admin: StewardAdmin, topics: TopicNames): Promise<void> {
  const [t, d] = await Promise.all([admin.partitionCount(topics.traces), admin.partitionCount(topics.decisions)]);
  if (t !== d) {
    throw new StewardError(
      'STEWARD_CONFIG',
      `consumer.scorer_input: join needs ${topics.traces} and ${topics.decisions} with the same partition count (they have ${t} and ${d}): add partitions to the smaller one, or use scorer_input: scoring`,
    );
  }
}

export function scorerProcessor(
  cfg: StewardConfig,
  base: ScorerStageDeps,
  o: { adapter: KafkaAdapter; topics: TopicNames; decoder: TraceDecoder; outputs?: OutputDecoder; replies: ReplyTarget; logger: Logger; metrics: StewardMetrics },
): { proc: StageProcessor; stop(): Promise<void> } {
  if (cfg.consumer.scorerInput !== 'join') return { proc: new ScorerProcessor(base), stop: async () => undefined };
  const log = o.logger.child({ stage: 'scorer' });
  const readers = new PartitionReaders(o.adapter, o.topics.traces, groupId(cfg, 'scorer'), {
    window: Math.max(1024, 4 * cfg.limits.chunkSize),
    onCrash: (err) => log.warn({ err: err.message }, 'trace reader crashed; the next read starts another'),
  });
  let lastWarn = -Infinity;
  const proc = new JoinedScorerProcessor({
    ...base,
    decoder: o.decoder,
    outputs: o.outputs,
    traces: readers,
    replies: o.replies,
    maxEventTimeSkewMs: cfg.limits.maxEventTimeSkewMs,
    onUnpositioned: (m) => {
      if (Date.now() - lastWarn < 60_000) return;
      lastWarn = Date.now();
      log.warn({ topic: m.topic, partition: m.partition, offset: m.offset }, 'decision without trace position headers (written before the join): not scored by the join');
    },
  });
  return { proc, stop: () => readers.close() };
}
