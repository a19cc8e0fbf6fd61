// Issue #22 fault test: the schema registry stops answering mid-stream (an HTTP proxy in front of the real
// registry answers 503, then cuts connections). Avro traces whose schema the stage has not fetched yet wait:
// none is dead-lettered or lost, and once the registry answers again every trace is decided, scored, and
// stored in ClickHouse. Real Kafka, registry, Redis and ClickHouse; the real engine on the shipped blueprints.
import { describe, expect, it } from 'vitest';
import { createRegistry, encodeTrace, registerAvro } from '../../../src/adapters/kafka/serde.js';
import { services, waitFor } from '../setup/helpers.js';
import { HttpFaultProxy } from './fault-proxy.js';
import { refund, storedDecisions, withFaultStream } from './stream.js';

describe('schema registry outage mid-stream', () => {
  it('Avro traces wait for the registry (no DLQ, none lost) and are all processed once it answers', async () => {
    const proxy = await HttpFaultProxy.start(services().schemaRegistryUrl);
    const direct = createRegistry(services().schemaRegistryUrl);
    try {
      proxy.decide = () => ({ status: 503, body: '{"error_code":50301,"message":"Service Unavailable"}', headers: { 'content-type': 'application/json' } });
      await withFaultStream(
        'flt-registry',
        async ({ cfg, topics, adapter, out, store }) => {
          const schemaId = await registerAvro(direct, 'trace', `${topics.traces}-value`);
          const traces = Array.from({ length: 20 }, (_, i) => refund(cfg.topics.prefix, i));
          const producer = await adapter.producer();
          try {
            const values = await Promise.all(traces.map((t, i) => (i % 4 === 3 ? Buffer.from(JSON.stringify(t)) : encodeTrace(t, { registry: direct, schemaId }))));
            await producer.send([{ topic: topics.traces, messages: traces.map((t, i) => ({ key: t.agent_id, value: values[i] })) }]);

            // 503 from the registry: the stage keeps asking, decides nothing it cannot read, dead-letters nothing.
            await waitFor(() => proxy.answered.filter((a) => a.status === 503).length >= 3, { timeoutMs: 20_000, message: 'stage asking the registry' });
            proxy.decide = () => 'reset';
            const resetsBefore = proxy.answered.length;
            await waitFor(() => proxy.answered.length >= resetsBefore + 2, { timeoutMs: 20_000, message: 'stage retrying through connection resets' });
            expect(out.on(topics.dlq)).toEqual([]);
            const avroIds = traces.filter((_, i) => i % 4 !== 3).map((t) => t.trace_id);
            expect(avroIds.filter((id) => out.byId(topics.decisions).has(id))).toEqual([]);

            proxy.decide = () => 'pass';
            const ids = traces.map((t) => t.trace_id);
            await waitFor(() => ids.every((id) => out.byId(topics.decisions).has(id) && out.byId(topics.verdicts).has(id)), { timeoutMs: 45_000, message: 'every trace decided and scored after the outage' });
            await waitFor(async () => (await storedDecisions(store, ids)).size === ids.length, { timeoutMs: 30_000, message: 'decisions in ClickHouse' });
            expect(out.on(topics.dlq)).toEqual([]);
            // Each decided once (no duplicate from a retried chunk that had partly succeeded).
            const decided = out.json<{ trace_id: string }>(topics.decisions).map((d) => d.trace_id);
            expect(decided.sort()).toEqual([...ids].sort());
          } finally {
            await producer.disconnect();
          }
        },
        { registryUrl: proxy.url },
      );
    } finally {
      await proxy.close();
    }
  }, 150_000);
});
