/**
 * The floor of any HTTP ingress that answers a batch after Kafka has it: a bare Fastify route on the acgp batch
 * path that parses the body (Fastify's JSON parser, no schema), produces each event as it came (JSON, one send per
 * batch, keyed by one agent) through the same producer the ingress uses, and answers 200. No API key, mapping,
 * validation, idempotency claim, budget or metrics. With `producer` undefined it answers at once: the HTTP
 * exchange alone (also on POST /v1/decide: the exchange under a decide round trip, timed by agent.ts). bench:ingress times the child load generator against both in each round
 * (`ingest_floor_vs_kafka_produce=`, `http_exchange_alone_vs_kafka_produce=`; docs/http.md "Benchmark").
 */
import Fastify from 'fastify';
import type { StewardProducer } from '../../src/adapters/kafka/kafka-types.js';

export async function startFloorServer(producer: StewardProducer | undefined, topic: string, key: string): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ bodyLimit: 16 * 1024 * 1024, logger: false });
  app.post('/v1/ingest/traces/batch', async (req, reply) => {
    const events = (req.body as { events: unknown[] }).events;
    if (producer) await producer.send([{ topic, messages: events.map((e) => ({ key, value: JSON.stringify(e) })) }]);
    return reply.code(200).send({ accepted: events.length });
  });
  // The bare server also answers a decide at once: the HTTP exchange alone, under http_p99_vs_kafka_sync.
  if (!producer) app.post('/v1/decide', async (_req, reply) => reply.code(200).send({ decision: 'ok', fallback: false }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => app.close() };
}
