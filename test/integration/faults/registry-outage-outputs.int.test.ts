// topics.avro_outputs fault test: the schema registry stops answering (an HTTP proxy in front of the real registry
// answers 503, then cuts connections) while the sink has Avro decisions and verdicts to store whose writer schemas
// it has not fetched yet. They wait: nothing is dead-lettered or dropped, and once the registry answers every
// record is stored. Real Kafka, registry and ClickHouse.
import { describe, expect, it } from 'vitest';
import { createRegistry, registerAvro } from '../../../src/adapters/kafka/serde.js';
import { decisionCodec, verdictCodec } from '../../../src/adapters/kafka/output-avro.js';
import type { DecisionMessage, VerdictMessage } from '../../../src/contracts/messages.js';
import { deleteSubjects, kafkaClient, services, waitFor } from '../setup/helpers.js';
import { HttpFaultProxy } from './fault-proxy.js';
import { decisionMsg, setupEnv, verdictMsg } from '../clickhouse/fixtures.js';

describe('schema registry outage with Avro outputs', () => {
  it('the sink retries Avro decisions and verdicts until the registry answers: none dead-lettered, all stored', { timeout: 120_000 }, async () => {
    const proxy = await HttpFaultProxy.start(services().schemaRegistryUrl);
    const env = await setupEnv('avro-outage');
    const subjects = [`${env.topics.decisions}-value`, `${env.topics.verdicts}-value`];
    try {
      const direct = createRegistry(services().schemaRegistryUrl);
      const dc = decisionCodec(await registerAvro(direct, 'decision', subjects[0]!));
      const vc = verdictCodec(await registerAvro(direct, 'verdict', subjects[1]!));
      proxy.decide = () => ({ status: 503, body: '{"error_code":50301,"message":"Service Unavailable"}', headers: { 'content-type': 'application/json' } });
      await env.startSink({ schemaRegistryUrl: proxy.url });
      const n = 12;
      const ds = Array.from({ length: n }, (_, i) => decisionMsg(i) as unknown as DecisionMessage);
      const vs = Array.from({ length: n }, (_, i) => verdictMsg(i) as unknown as VerdictMessage);
      // Avro and JSON mixed on both topics (a JSON record behind an Avro one in its partition waits with it).
      const producer = kafkaClient().producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      await producer.send({ topic: env.topics.decisions, acks: -1, messages: ds.map((d, i) => ({ key: d.agent_id, value: i % 3 ? dc.encode(d) : Buffer.from(JSON.stringify(d)) })) });
      await producer.send({ topic: env.topics.verdicts, acks: -1, messages: vs.map((v, i) => ({ key: v.agent_id, value: i % 3 ? vc.encode(v) : Buffer.from(JSON.stringify(v)) })) });
      await producer.disconnect();

      await waitFor(() => proxy.answered.filter((a) => a.status === 503).length >= 3, { timeoutMs: 30_000, message: 'the sink asking the registry' });
      proxy.decide = () => 'reset';
      const before = proxy.answered.length;
      await waitFor(() => proxy.answered.length >= before + 2, { timeoutMs: 30_000, message: 'the sink retrying through connection resets' });
      const dlq = async () => Number((await env.store.query<{ n: string }>(`SELECT count() AS n FROM ${env.store.table('dlq_events')}`))[0]!.n);
      expect(await dlq()).toBe(0);
      expect((await env.count('decisions')).u).toBeLessThan(n); // the Avro ones wait

      proxy.decide = () => 'pass';
      await waitFor(async () => (await env.count('decisions')).u === n && (await env.count('verdicts')).u === n, { timeoutMs: 45_000, message: 'every decision and verdict stored after the outage' });
      expect(await dlq()).toBe(0);
      const rows = await env.store.query<{ trace_id: string; intervention: string; rules_json: string }>(`SELECT trace_id, intervention, rules_json FROM ${env.store.table('decisions')} FINAL ORDER BY trace_id`);
      expect(rows).toEqual([...ds].sort((a, b) => (a.trace_id < b.trace_id ? -1 : 1)).map((d) => ({ trace_id: d.trace_id, intervention: d.intervention, rules_json: JSON.stringify(d.rules) })));
    } finally {
      await env.close();
      await deleteSubjects(subjects);
      await proxy.close();
    }
  });
});
