/**
 * What must hold before a pipeline starts its stages, checked on one admin connection before anything is
 * consumed: the topics the started stages use exist, consumer groups do not move silently to a new prefix,
 * trace timestamps are the broker's, the scorer's join inputs are co-partitioned; and where replies go.
 */
import type { KafkaAdapter, StewardAdmin } from '../adapters/kafka/client.js';
import { TOPIC_KEYS, type TopicKey, type TopicNames } from '../adapters/kafka/topics.js';
import type { ReplyTarget } from '../adapters/kafka/request-reply.js';
import type { StewardConfig } from '../config/steward-config.js';
import { groupId } from '../config/steward-config.js';
import { StewardError } from '../errors.js';
import type { Logger } from '../logger.js';
import { checkCoPartitioned } from './scorer-stage.js';
import { STAGE_OUTPUTS, stageInputs, type StageName } from './stage-topics.js';

/** Runs the start-up checks; returns the replies topic and its partitions when a started stage answers clients. */
export async function pipelinePreflight(adapter: KafkaAdapter, cfg: StewardConfig, stages: readonly StageName[], topics: TopicNames, logger: Logger): Promise<ReplyTarget | undefined> {
  let replies: ReplyTarget | undefined;
  const admin = await adapter.admin();
  try {
    // A missing topic fails later inside kafkajs as "This server does not host this topic-partition", naming
    // neither the topic nor the fix. Only what the started stages read and write: a split deployment's
    // credentials may not see the rest.
    const present = new Set(await admin.listTopics());
    const needed = new Set<TopicKey>(stages.flatMap((s) => [...stageInputs(cfg, s), ...STAGE_OUTPUTS[s]]));
    const missing = TOPIC_KEYS.filter((k) => needed.has(k) && !present.has(topics[k])).map((k) => topics[k]);
    if (missing.length > 0) {
      throw new StewardError('STEWARD_KAFKA', `topics missing: ${missing.join(', ')} (run \`steward topics create\` with the same topics.prefix)`);
    }
    await refuseSilentGroupMove(admin, cfg, stages, topics);
    if (stages.includes('tripwire')) await checkTraceTimestamps(admin, cfg, topics.traces, logger);
    const joined = stages.includes('scorer') && cfg.consumer.scorerInput === 'join';
    if (joined) await checkCoPartitioned(admin, topics);
    if (stages.includes('tripwire') || stages.includes('gate') || joined) replies = { topic: topics.replies, partitions: await admin.partitionCount(topics.replies) };
  } finally {
    await admin.disconnect();
  }
  if (replies?.partitions === 0) logger.warn({ topic: topics.replies }, 'replies topic missing: synchronous decide() calls will time out (run steward topics create)');
  return replies;
}

/**
 * Until 2026-11-25 every deployment's groups were `steward-<stage>` whatever its topic prefix. A deployment
 * with its own prefix that still relies on the default now gets `steward-<prefix>-<stage>`: new groups that
 * would re-read every topic from the earliest offset. Refused when the new group has never committed on the
 * stage's inputs and the old one has, naming the setting that keeps the old offsets.
 */
async function refuseSilentGroupMove(admin: StewardAdmin, cfg: StewardConfig, stages: readonly StageName[], topics: TopicNames): Promise<void> {
  if (!cfg.consumer.groupPrefixDefaulted || cfg.consumer.groupPrefix === 'steward') return;
  const started = async (group: string, s: StageName) =>
    (await Promise.all(stageInputs(cfg, s).map((k) => admin.groupOffsets(group, topics[k])))).flat().some((o) => BigInt(o.offset) >= 0n);
  // Credentials allowed only this deployment's groups may not read the old one (GROUP_AUTHORIZATION_FAILED): then
  // it is not this deployment's, and nothing was moved.
  const oldStarted = (s: StageName) => started(`steward-${s}`, s).catch(() => false);
  for (const s of stages) {
    if ((await started(groupId(cfg, s), s)) || !(await oldStarted(s))) continue;
    throw new StewardError(
      'STEWARD_CONFIG',
      `consumer group ${groupId(cfg, s)} is new, but steward-${s} has committed offsets on this deployment's topics (the default group prefix before 2026-11-25): set consumer.group_prefix: steward (or STEWARD_GROUP_PREFIX=steward) to continue from them, or delete group steward-${s} to start over from the earliest offsets`,
    );
  }
}

/**
 * The event-time clamp (limits.max_event_time_skew_ms) bounds an agent's timestamp by the record's Kafka
 * timestamp: only meaningful when the broker stamps it (LogAppendTime). `steward topics create` sets that; a
 * topic created elsewhere may not have it, and then the agent writes both sides of the clamp.
 */
async function checkTraceTimestamps(admin: StewardAdmin, cfg: StewardConfig, topic: string, logger: Logger): Promise<void> {
  if (cfg.limits.maxEventTimeSkewMs === null) return;
  const type = await admin.topicConfig(topic, 'message.timestamp.type');
  if (type === 'LogAppendTime') return;
  const why = `topic ${topic} has message.timestamp.type=${type ?? 'unknown'}: its record timestamps are the agents' own, so the event-time clamp (limits.max_event_time_skew_ms) bounds nothing; set message.timestamp.type=LogAppendTime on the topic`;
  if (cfg.requireLogAppendTime) throw new StewardError('STEWARD_KAFKA', `${why} (or kafka.require_log_append_time: false to start anyway)`);
  logger.warn({ topic, timestamp_type: type }, why);
}
