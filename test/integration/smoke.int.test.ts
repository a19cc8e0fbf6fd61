// Smoke test of the integration environment: each real service answers the client library Steward uses.
import { describe, expect, inject, it } from 'vitest';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import {
  consumeMessages,
  deleteSubjects,
  kafkaClient,
  schemaRegistry,
  uniqueName,
  withClickHouseDatabase,
  withRedis,
  withTopics,
} from './setup/helpers.js';

describe('integration services', () => {
  it('provides the URLs to tests and to the environment', () => {
    const s = inject('services');
    expect(s.kafkaBrokers.length).toBeGreaterThan(0);
    expect(s.schemaRegistryUrl).toMatch(/^https?:\/\/.+\/apis\/ccompat\/v7$/);
    expect(process.env.KAFKA_BROKERS).toBe(s.kafkaBrokers.join(','));
    expect(process.env.SCHEMA_REGISTRY_URL).toBe(s.schemaRegistryUrl);
    expect(process.env.REDIS_URL).toBe(s.redisUrl);
    expect(process.env.CLICKHOUSE_URL).toBe(s.clickhouseUrl);
  });

  it('Kafka: produces and consumes keyed messages on a fresh topic', async () => {
    await withTopics([uniqueName('smoke')], async ([topic]) => {
      const producer = kafkaClient().producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      try {
        await producer.send({
          topic: topic!,
          acks: -1,
          messages: [
            { key: 'agent-1', value: JSON.stringify({ n: 1 }), headers: { h: 'x' } },
            { key: 'agent-1', value: JSON.stringify({ n: 2 }) },
            { key: 'agent-2', value: JSON.stringify({ n: 3 }) },
          ],
        });
      } finally {
        await producer.disconnect();
      }
      const messages = await consumeMessages(topic!, 3);
      expect(messages.map((m) => JSON.parse(m.value!.toString()).n)).toEqual([1, 2, 3]);
      expect(messages.map((m) => m.key!.toString())).toEqual(['agent-1', 'agent-1', 'agent-2']);
      expect(messages[0]!.headers!.h!.toString()).toBe('x');
    }, { partitions: 1 });
  });

  it('Schema registry (Confluent API): registers an Avro schema, encodes and decodes', async () => {
    const registry = schemaRegistry();
    const subject = `${uniqueName('smoke')}-value`;
    const schema = {
      type: 'record',
      name: 'SmokeTrace',
      namespace: 'steward.test',
      fields: [
        { name: 'trace_id', type: 'string' },
        { name: 'agent_id', type: 'string' },
        { name: 'response_size', type: ['null', 'long'], default: null },
      ],
    };
    try {
      const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject });
      expect(id).toBeGreaterThan(0);
      expect(await registry.getLatestSchemaId(subject)).toBe(id);
      const payload = { trace_id: 't-1', agent_id: 'trader-1', response_size: 1024 };
      const encoded = await registry.encode(id, payload);
      expect(encoded[0]).toBe(0); // Confluent wire format: magic byte, then the 4-byte schema id
      expect(encoded.readInt32BE(1)).toBe(id);
      // A fresh client must fetch the schema by id from the registry to decode.
      expect(await schemaRegistry().decode(encoded)).toEqual(payload);
    } finally {
      await deleteSubjects([subject]);
    }
  });

  it('Redis: round trip under a unique key prefix', async () => {
    await withRedis(async (redis, prefix) => {
      await redis.set(`${prefix}k`, 'v', 'PX', 60_000);
      await redis.hset(`${prefix}h`, { debt: '0.15', level: 'normal' });
      expect(await redis.get(`${prefix}k`)).toBe('v');
      expect(await redis.hgetall(`${prefix}h`)).toEqual({ debt: '0.15', level: 'normal' });
      // Lua is available (the trust-debt stage applies updates atomically with scripts).
      expect(await redis.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", 1, `${prefix}n`, 5)).toBe(5);
    });
  });

  it('ClickHouse: MergeTree table, JSONEachRow insert, select', async () => {
    await withClickHouseDatabase(async ({ name, client }) => {
      await client.command({
        query: `CREATE TABLE ${name}.smoke (
          trace_id String,
          agent_id String,
          ts_ms UInt64,
          risk Nullable(Float64),
          approved UInt8
        ) ENGINE = MergeTree ORDER BY (agent_id, ts_ms)`,
      });
      const rows = [
        { trace_id: 't-1', agent_id: 'a', ts_ms: 1_700_000_000_000, risk: 0.25, approved: 1 },
        { trace_id: 't-2', agent_id: 'a', ts_ms: 1_700_000_000_001, risk: null, approved: 0 },
      ];
      await client.insert({ table: `${name}.smoke`, values: rows, format: 'JSONEachRow' });
      const rs = await client.query({
        query: `SELECT trace_id, toString(ts_ms) AS ts, risk, approved FROM ${name}.smoke ORDER BY ts_ms`,
        format: 'JSONEachRow',
      });
      expect(await rs.json()).toEqual([
        { trace_id: 't-1', ts: '1700000000000', risk: 0.25, approved: 1 },
        { trace_id: 't-2', ts: '1700000000001', risk: null, approved: 0 },
      ]);
    });
  });
});
