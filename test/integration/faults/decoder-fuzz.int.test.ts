// Issue #22 fault tests: hostile bytes on acgp.traces through the whole stream. Random bytes, mutated JSON,
// random and truncated Avro (a real registered schema id), and traces nested 10 000 levels deep: each is either
// a valid trace (decided) or dead-lettered with a reason; the stage never stalls or crashes, and the valid
// traces between them are all decided. Seeded, so a failure replays. Real Kafka, registry, Redis, ClickHouse.
import { describe, expect, it } from 'vitest';
import { readDlqHeaders } from '../../../src/adapters/kafka/dlq.js';
import { createRegistry, encodeTrace, registerAvro } from '../../../src/adapters/kafka/serde.js';
import { services, waitFor } from '../setup/helpers.js';
import { refund, storedDecisions, withFaultStream } from './stream.js';

/** mulberry32: a small seeded PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Decoding, validation, and the Kafka key no longer matching a mutated agent_id (agents.key_must_match).
const DECODE_CODES = new Set(['STEWARD_TRACE_JSON', 'STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_AVRO', 'STEWARD_TRACE_TOO_LARGE', 'STEWARD_AGENT_KEY']);

describe('hostile bytes on acgp.traces', () => {
  it('random, mutated and truncated JSON/Avro: each decided or dead-lettered with a reason; valid traces between them all decided', async () => {
    const registry = createRegistry(services().schemaRegistryUrl);
    await withFaultStream('flt-fuzz', async ({ cfg, topics, adapter, out, store }) => {
      const p = cfg.topics.prefix;
      const schemaId = await registerAvro(registry, 'trace', `${topics.traces}-value`);
      const rand = rng(0x5eed);
      const byte = () => Math.floor(rand() * 256);
      const valid: string[] = [];
      const fuzz: { seq: number; kind: string; value: Buffer }[] = [];
      const messages: { key: string; value: Buffer; headers: Record<string, string> }[] = [];
      for (let i = 0; i < 400; i++) {
        const t = refund(p, i);
        if (i % 4 === 0) {
          valid.push(t.trace_id);
          messages.push({ key: t.agent_id, value: Buffer.from(JSON.stringify(t)), headers: { 'x-fuzz-seq': String(i) } });
          continue;
        }
        const kind = ['random', 'json-mutated', 'avro-random', 'avro-truncated', 'avro-mutated', 'json-truncated'][i % 6];
        let value: Buffer;
        if (kind === 'random') value = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 300) }, byte));
        else if (kind === 'json-truncated') {
          const j = Buffer.from(JSON.stringify(t));
          value = j.subarray(0, 1 + Math.floor(rand() * (j.length - 1)));
        } else if (kind === 'json-mutated') {
          value = Buffer.from(JSON.stringify(t));
          for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) value[Math.floor(rand() * value.length)] = byte();
        } else {
          const avro = await encodeTrace(t, { registry, schemaId });
          if (kind === 'avro-random') value = Buffer.concat([avro.subarray(0, 5), Buffer.from(Array.from({ length: Math.floor(rand() * 200) }, byte))]);
          else if (kind === 'avro-truncated') value = avro.subarray(0, 5 + Math.floor(rand() * (avro.length - 6)));
          else {
            value = Buffer.from(avro);
            for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) value[5 + Math.floor(rand() * (value.length - 5))] = byte();
          }
        }
        fuzz.push({ seq: i, kind, value });
        messages.push({ key: t.agent_id, value, headers: { 'x-fuzz-seq': String(i) } });
      }
      const producer = await adapter.producer();
      try {
        for (let i = 0; i < messages.length; i += 100) await producer.send([{ topic: topics.traces, messages: messages.slice(i, i + 100) }]);
      } finally {
        await producer.disconnect();
      }
      // Every input accounted for: dead-lettered, or decided (a mutation can leave a valid trace, possibly under
      // another trace id, so decisions are counted, not looked up).
      const seqOf = (h: Record<string, Buffer | undefined>) => h['x-fuzz-seq']?.toString();
      await waitFor(() => out.on(topics.dlq).length + out.byId(topics.decisions).size >= messages.length, { timeoutMs: 60_000, message: 'every fuzzed input decided or dead-lettered' });
      const dlqSeqs = out.on(topics.dlq).map((m) => seqOf(m.headers as Record<string, Buffer>));
      expect(new Set(dlqSeqs).size, 'each input dead-lettered at most once').toBe(dlqSeqs.length);
      expect(dlqSeqs.length + out.byId(topics.decisions).size).toBe(messages.length);
      for (const m of out.on(topics.dlq)) {
        const h = readDlqHeaders(m);
        const seq = seqOf(m.headers as Record<string, Buffer>);
        expect(DECODE_CODES.has(h.code ?? ''), `seq ${seq}: ${h.code} ${h.message}`).toBe(true);
        expect(h.message?.length, `seq ${seq}: a reason`).toBeGreaterThan(0);
        expect(m.value!.equals(messages[Number(seq)].value), `seq ${seq}: original bytes kept`).toBe(true);
      }
      expect(valid.filter((id) => !out.byId(topics.decisions).has(id))).toEqual([]);
      // Most fuzz is refused (a handful of one-byte JSON mutations stay valid); every kind reached the DLQ.
      const dlqKinds = new Set(out.on(topics.dlq).map((m) => fuzz.find((f) => String(f.seq) === seqOf(m.headers as Record<string, Buffer>))?.kind));
      expect([...dlqKinds].sort()).toEqual(['avro-mutated', 'avro-random', 'avro-truncated', 'json-mutated', 'json-truncated', 'random']);
      await waitFor(async () => (await storedDecisions(store, valid)).size === valid.length, { timeoutMs: 30_000, message: 'valid decisions in ClickHouse' });
    });
  }, 150_000);

  it('traces nested 10 000 levels deep (args, context, content, ids) are dead-lettered with a reason; no stack overflow; the stage keeps going', async () => {
    await withFaultStream(
      'flt-deep',
      async ({ cfg, topics, adapter, out, client }) => {
        const p = cfg.topics.prefix;
        const deep = (n: number, leaf: string) => '['.repeat(n) + leaf + ']'.repeat(n);
        const deepObj = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
        const base = (i: number) => JSON.stringify(refund(p, i)).slice(0, -1);
        const bodies = [
          `${base(0)},"args":${deepObj(10_000)}}`,
          `${base(1)},"context":{"x":${deep(10_000, '"deep"')}}}`,
          `${base(2)},"content":${deep(10_000, '"text"')}}`,
          `${base(3)},"sources":${deep(10_000, '{}')}}`,
          `${base(4)},"reasoning":${deepObj(10_000)}}`,
        ];
        const producer = await adapter.producer();
        try {
          await producer.send([{ topic: topics.traces, messages: bodies.map((b, i) => ({ key: 'support-1', value: Buffer.from(b), headers: { 'x-deep': String(i) } })) }]);
        } finally {
          await producer.disconnect();
        }
        await waitFor(() => out.on(topics.dlq).length === bodies.length, { timeoutMs: 45_000, message: 'deep traces dead-lettered' });
        for (const m of out.on(topics.dlq)) {
          const h = readDlqHeaders(m);
          expect(['STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_JSON', 'STEWARD_TRACE_TOO_LARGE'], `${m.headers['x-deep']?.toString()}: ${h.message}`).toContain(h.code);
          expect(h.message).toMatch(/nest|deep/i);
        }
        // The stage is alive and decides the next trace of the same agent (same partition, after the deep ones).
        const d = await client.decide(refund(p, 9), { timeoutMs: 20_000 });
        expect(d.fallback).toBeUndefined();
        expect(d.intervention).toBeDefined();
        expect([...out.byId(topics.decisions).keys()].filter((id) => /-r[0-4]$/.test(id))).toEqual([]);
      },
      { raw: { limits: { max_trace_bytes: 1_000_000, chunk_size: 200, partitions_concurrently: 3, max_event_time_skew_ms: null } } },
    );
  }, 150_000);
});
