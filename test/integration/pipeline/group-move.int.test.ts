// A deployment with its own topic prefix that ran before 2026-11-25 has groups steward-<stage>; the default is now
// steward-<prefix>-<stage>. On real Kafka: starting with the default while only the old group has offsets on the
// deployment's topics is refused with the setting to use; with group_prefix: steward it starts from the old offsets.
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { TestEngine, quietLogger } from './harness.js';
import { services, uniqueName } from '../setup/helpers.js';

describe('default consumer groups of a deployment with its own topic prefix (real Kafka)', () => {
  it('refuses to move silently to new groups when the old ones hold offsets', async () => {
    const prefix = uniqueName('gmove');
    const env = { KAFKA_BROKERS: services().kafkaBrokers.join(',') };
    const raw = { topics: { prefix, partitions: 1, reply_partitions: 1 }, consumer: { session_timeout_ms: 6000 }, observability: { enabled: false } };
    const topics = topicNames(prefix);
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-group-move' });
    const admin = await adapter.admin();
    const kadmin = new Kafka({ brokers: services().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
    await kadmin.connect();
    try {
      await createTopics(admin, topics, { partitions: 1, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
      const fresh = buildConfig(raw, env);
      expect(fresh.consumer.groupPrefix).toBe(`steward-${prefix}`);
      // Nothing committed anywhere: a new deployment starts.
      let pipe = await startPipeline(fresh, ['tripwire'], { engine: new TestEngine() }, { logger: quietLogger() });
      await pipe.stop();
      await kadmin.deleteGroups([`steward-${prefix}-tripwire`]).catch(() => undefined);
      // The old default group has offsets on this deployment's traces topic: refused, naming the way out.
      await kadmin.setOffsets({ groupId: 'steward-tripwire', topic: topics.traces, partitions: [{ partition: 0, offset: '0' }] });
      const err = (await startPipeline(fresh, ['tripwire'], { engine: new TestEngine() }, { logger: quietLogger() }).catch((e: unknown) => e)) as { code?: string; message?: string };
      expect(err.code).toBe('STEWARD_CONFIG');
      expect(err.message).toMatch(new RegExp(`consumer group steward-${prefix}-tripwire is new, but steward-tripwire has committed offsets.*group_prefix: steward`));
      // Keeping the old prefix explicitly starts.
      pipe = await startPipeline(buildConfig({ ...raw, consumer: { ...raw.consumer, group_prefix: 'steward' } }, env), ['tripwire'], { engine: new TestEngine() }, { logger: quietLogger() });
      await pipe.stop();
    } finally {
      await kadmin.deleteGroups(['steward-tripwire', `steward-${prefix}-tripwire`]).catch(() => undefined);
      await admin.deleteTopics(Object.values(topics)).catch(() => undefined);
      await kadmin.disconnect();
      await admin.disconnect();
    }
  }, 90_000);
});
