// The HTTP stream feed (src/process/http-stream.ts, docs/http.md "Stream") with topics.avro_outputs: decisions and
// verdicts in Avro on the same topics as JSON ones reach the agent's Redis stream as the JSON they stand for; an
// Avro record under an unknown schema id is skipped, the ones after it still arrive. Real Kafka, registry, Redis.
import { describe, expect, it } from 'vitest';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { OutputDecoder } from '../../../src/adapters/kafka/output-decoder.js';
import { decisionCodec, verdictCodec } from '../../../src/adapters/kafka/output-avro.js';
import { createRegistry, registerAvro } from '../../../src/adapters/kafka/serde.js';
import { AgentEventFeed } from '../../../src/process/http-stream.js';
import { decisionMessage, verdictMessage } from '../../../src/contracts/engine-records.js';
import { blockedRecord, scoreRecord, shellTrace } from '../../unit/consumers/fixtures.js';
import { withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

describe('HTTP stream feed over Avro outputs', () => {
  it('streams JSON and Avro decisions and verdicts of an agent as JSON, in order', { timeout: 90_000 }, async () => {
    await withPipelineEnv('http-stream-avro', async ({ cfg, topics }) => {
      const redis = redisClient();
      const prefix = uniqueRedisPrefix('stream-avro');
      const registry = createRegistry(cfg.schemaRegistryUrl!);
      const dc = decisionCodec(await registerAvro(registry, 'decision', `${topics.decisions}-value`));
      const vc = verdictCodec(await registerAvro(registry, 'verdict', `${topics.verdicts}-value`));
      const feed = new AgentEventFeed(new KafkaAdapter(cfg.kafka), topics, redis, prefix, `${cfg.consumer.groupPrefix}-http-stream`, new OutputDecoder(registry));
      const adapter = new KafkaAdapter(cfg.kafka);
      const producer = await adapter.producer();
      try {
        const ds = [0, 1, 2].map((i) => decisionMessage(blockedRecord({ traceId: `t-${i}` }), { ...shellTrace, trace_id: `t-${i}` }, 1767225600000 + i, 1767225600005 + i, '0.1.0'));
        const v = verdictMessage(scoreRecord({ traceId: 't-1' }), ds[1]!, 1767225600009);
        await producer.send([
          { topic: topics.decisions, messages: [
            { key: 'a1', value: JSON.stringify(ds[0]) },
            { key: 'a1', value: decisionCodec(2_000_000_000).encode(ds[1]!) }, // unknown schema id: skipped
            { key: 'a1', value: dc.encode(ds[1]!) },
            { key: 'a1', value: dc.encode(ds[2]!) },
          ] },
          { topic: topics.verdicts, messages: [{ key: 'a1', value: vc.encode(v) }] },
        ]);
        await feed.start();
        const events = await waitFor(async () => {
          const e = await feed.read('a1', '0-0');
          return e.length >= 4 ? e : undefined;
        }, { timeoutMs: 30_000, message: 'four events on the agent stream' });
        // The record's fields (the feed may add its own, e.g. the acgp client's `feedback`).
        const message = (data: string) => {
          const { feedback: _f, ...rest } = JSON.parse(data) as Record<string, unknown>;
          return rest;
        };
        const decisions = events.filter((e) => e.event === 'trace_processed').map((e) => message(e.data));
        expect(decisions).toEqual(ds.map((d) => JSON.parse(JSON.stringify(d)) as unknown));
        const verdicts = events.filter((e) => e.event === 'feedback_generated').map((e) => message(e.data));
        expect(verdicts).toEqual([JSON.parse(JSON.stringify(v))]);
      } finally {
        await producer.disconnect();
        await feed.stop();
        await deleteRedisPrefix(redis, prefix);
        redis.disconnect();
      }
    });
  });
});
