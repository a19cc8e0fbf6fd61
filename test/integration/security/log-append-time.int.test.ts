// issue #22 item 7: the event-time clamp trusts the traces topic's record timestamps only when the broker
// stamps them (LogAppendTime). A topic altered to (or created with) CreateTime makes the tripwire stage refuse
// to start — naming the topic and the fix — unless the operator explicitly accepts it with a warning.
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix } from '../setup/helpers.js';

type Admin = ReturnType<Kafka['admin']>;

// A topic config change reaches the broker's metadata cache asynchronously (KRaft): the broker may still
// describe the old value right after alterConfigs returns, so wait until it describes the new one.
async function setTimestampType(admin: Admin, topic: string, value: 'CreateTime' | 'LogAppendTime'): Promise<void> {
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'message.timestamp.type', value }] }] });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['message.timestamp.type'] }], includeSynonyms: false });
    if (r.resources[0]?.configEntries.find((e) => e.configName === 'message.timestamp.type')?.configValue === value) return;
    if (Date.now() > deadline) throw new Error(`topic ${topic}: message.timestamp.type is not ${value} 15 s after alterConfigs`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('traces topic timestamps (real Kafka)', () => {
  it('refuses to start the tripwire stage on a CreateTime traces topic unless kafka.require_log_append_time is false', async () => {
    const redisPrefix = uniqueRedisPrefix('lat');
    await withPipelineEnv('pl-lat', async ({ cfg: base, topics }) => {
      const kafka = new Kafka({ brokers: base.kafka.brokers, logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      const redis = redisClient();
      try {
        await setTimestampType(admin, topics.traces, 'CreateTime');
        const logger = quietLogger();
        const raw = { redis: { key_prefix: redisPrefix }, consumer: { group_prefix: base.consumer.groupPrefix }, limits: { max_event_time_skew_ms: 300_000 } };
        const strict = pipelineConfig(base.topics.prefix, raw);
        const rt = await bootstrapEngine(strict, ['tripwire'], logger);
        try {
          await expect(startPipeline(strict, ['tripwire'], rt.deps, { logger })).rejects.toThrow(`topic ${topics.traces} has message.timestamp.type=CreateTime`);
          // the operator accepts it explicitly: the stage starts (with a warning)
          const lenient = pipelineConfig(base.topics.prefix, { ...raw, kafka: { require_log_append_time: false } });
          const pipe = await startPipeline(lenient, ['tripwire'], rt.deps, { logger });
          await pipe.stop();
          // and back to LogAppendTime: the strict configuration starts
          await setTimestampType(admin, topics.traces, 'LogAppendTime');
          const ok = await startPipeline(strict, ['tripwire'], rt.deps, { logger });
          await ok.stop();
        } finally {
          await rt.close();
        }
      } finally {
        await admin.disconnect();
        await deleteRedisPrefix(redis, redisPrefix);
        await redis.quit();
      }
    });
  }, 120_000);
});
