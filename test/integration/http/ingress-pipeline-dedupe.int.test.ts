// http.idempotency.dedupe 'pipeline' (docs/spec-decisions.md D52) end to end on real Kafka and Redis: the ingress
// claims nothing and produces every event with its key in a header, so a retried batch reaches acgp.traces twice;
// the tripwire stage (marks wired by bootstrapEngine from the same setting) decides each agent's key once. Another
// agent's event under the same key is its own.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { headerText } from '../../../src/adapters/kafka/client.js';
import { INGEST_KEY_HEADER } from '../../../src/adapters/kafka/headers.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { Collector, pipelineConfig, quietLogger, TestEngine, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const batch = (id: string, traces: string[], keys?: string[]) => ({
  batch_id: id,
  event_count: traces.length,
  events: traces.map((t, i) => ({ trace_id: t, reasoning_text: `r ${t}`, idempotency_key: keys ? keys[i] : `${id}_${i}` })),
});

describe("http.idempotency.dedupe 'pipeline' (real Kafka, Redis)", () => {
  it('a retried batch is produced again and decided once; the answer counts no duplicates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-dedupe-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - { id: dd-a, api_keys: ["${apiKeyHash('key-a')}"] }\n  - { id: dd-b, api_keys: ["${apiKeyHash('key-b')}"] }\n`);
    const prefix = uniqueRedisPrefix('http-dedupe');
    const redis = redisClient();
    try {
      await withPipelineEnv('http-dedupe', async ({ cfg: base, topics, adapter }) => {
        const cfg = pipelineConfig(base.topics.prefix, {
          blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false },
          redis: { key_prefix: prefix },
          trust_debt: { audit_sweep_interval_ms: 0 },
          http: { enabled: true, port: 0, limits: { rate_per_second: 1000 }, idempotency: { dedupe: 'pipeline' } },
        });
        const logger = quietLogger();
        const rt = await bootstrapEngine(cfg, ['tripwire'], logger);
        expect(rt.deps.ingestMarks).toBeDefined();
        const engine = new TestEngine();
        const pipe = await startPipeline(cfg, ['tripwire'], { ...rt.deps, engine }, { logger });
        const ing = await startHttpIngress(cfg, logger);
        const out = await new Collector(adapter, [topics.traces, topics.decisions]).start();
        const post = async (key: string, body: unknown) => {
          const r = await fetch(`http://127.0.0.1:${ing.port}/v1/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) });
          return { status: r.status, body: (await r.json()) as Record<string, unknown> };
        };
        const decided = (agent: string) => out.json(topics.decisions).filter((d) => d.agent_id === agent).map((d) => String(d.trace_id));
        try {
          await waitFor(() => pipe.isReady(), { timeoutMs: 30_000, message: 'tripwire stage joined' });
          const b1 = batch('B1', ['t1', 't2', 't3']);
          expect(await post('key-a', b1)).toEqual({ status: 200, body: { accepted: 3, batch_id: 'B1' } });
          // The client's retry (its first answer was lost): produced again, same answer.
          expect(await post('key-a', b1)).toEqual({ status: 200, body: { accepted: 3, batch_id: 'B1' } });
          // The same events re-batched under their own keys, with one new; and agent b using a's keys.
          expect((await post('key-a', batch('B2', ['t2', 't4'], ['B1_1', 'B2_1']))).body).toEqual({ accepted: 2, batch_id: 'B2' });
          expect((await post('key-b', batch('B1', ['t1']))).body).toEqual({ accepted: 1, batch_id: 'B1' });
          // A last batch per agent: the same partition per agent, so once it is decided everything before it was.
          await post('key-a', batch('END', ['t-end-a']));
          await post('key-b', batch('END', ['t-end-b']));
          await waitFor(() => decided('dd-a').includes('t-end-a') && decided('dd-b').includes('t-end-b'), { timeoutMs: 30_000, message: 'last batches decided' });
          const traces = out.json(topics.traces);
          expect(traces.filter((t) => t.agent_id === 'dd-a').map((t) => t.trace_id).sort()).toEqual(['t-end-a', 't1', 't1', 't2', 't2', 't2', 't3', 't3', 't4']);
          const withKey = out.messages.filter((m) => m.topic === topics.traces).map((m) => headerText(m, INGEST_KEY_HEADER));
          expect(withKey.every((k) => typeof k === 'string' && k.length > 0)).toBe(true);
          expect(decided('dd-a').sort()).toEqual(['t-end-a', 't1', 't2', 't3', 't4']);
          expect(decided('dd-b').sort()).toEqual(['t-end-b', 't1']);
          expect(engine.decided).toBe(7);
          // The copies are counted where they were dropped.
          expect(await pipe.metrics.duplicates.get()).toMatchObject({ values: [{ labels: { stage: 'tripwire' }, value: 4 }] });
        } finally {
          await out.stop();
          await ing.close();
          await pipe.stop();
          await rt.close();
        }
      });
    } finally {
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
    }
  });
});
