// The replies topic gains partitions while the tripwire stage runs (real Kafka): a client on a new partition
// is answered without restarting the stage (it used to read the partition count once, at startup).
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { StewardClient } from '../../../src/client/steward-client.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { TestEngine, quietLogger, trace, withPipelineEnv } from './harness.js';

describe('replies topic growing while the stage runs', () => {
  it('a client on a partition added after the stage started gets its decisions', async () => {
    await withPipelineEnv(
      'pl-grow',
      async ({ cfg, topics, adapter }) => {
        const pipe = await startPipeline(cfg, ['tripwire'], { engine: new TestEngine() }, { logger: quietLogger() });
        const kafka = new Kafka({ brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
        const admin = kafka.admin();
        await admin.connect();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, replyPartition: 2, logger: quietLogger() });
        const early = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, replyPartition: 0, logger: quietLogger() });
        try {
          // The stage's producer learns the replies topic's metadata (2 partitions) before it grows.
          expect((await early.decide(trace(100, 'early-agent'), { timeoutMs: 15_000 })).fallback).toBeUndefined();
          await admin.createPartitions({ topicPartitions: [{ topic: topics.replies, count: 3 }] });
          // The first route past the stage's known partitions makes it re-read the topic; once its producers
          // refreshed their metadata (kafkajs would drop a record for an unknown partition silently), calls are answered.
          let answered = false;
          for (let i = 0; i < 45 && !answered; i++) {
            const d = await client.decide(trace(i, 'grow-agent'), { timeoutMs: 1500 });
            answered = d.fallback === undefined;
            if (answered) expect(d).toMatchObject({ trace_id: trace(i, 'grow-agent').trace_id, intervention: 'ok' });
          }
          expect(answered).toBe(true);
        } finally {
          await client.close();
          await early.close();
          await admin.disconnect();
          await pipe.stop();
        }
      },
      { topics: { reply_partitions: 2 } },
    );
  }, 120_000);
});
