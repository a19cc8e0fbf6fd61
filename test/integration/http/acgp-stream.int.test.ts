// #24: the real acgp client from PyPI (0.1.4, .venv-acgp) through the whole stream: its SSE stream reports every
// trace it sent (wait_for_feedback), get_score() finds the verdicts in ClickHouse, and its retry of a batch
// whose answer was lost (a proxy answers 502 after the ingress produced it) is not counted twice. Real Kafka,
// Redis, ClickHouse; the real engine on the shipped blueprints; configured only by ACGP_* variables.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ledgerSignerFor } from '../../../src/process/steward-process.js';
import { startLlmServer } from '../../support/llm-server.js';
import { HttpFaultProxy } from '../faults/fault-proxy.js';
import { BLUEPRINTS } from '../faults/stream.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';

const PY = resolve('.venv-acgp/bin/python');

async function python<T>(script: string, endpoint: string, key: string, args: string[], extraEnv: Record<string, string> = {}): Promise<T> {
  const env = { PATH: process.env.PATH ?? '', ACGP_ENDPOINT: endpoint, ACGP_API_KEY: key, ACGP_FAIL_SILENTLY: 'true', ...extraEnv };
  const { stdout } = await promisify(execFile)(PY, [resolve('test/integration/http', script), ...args], { env, timeout: 120_000 });
  const line = stdout.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`${script} printed no result:\n${stdout}`);
  return JSON.parse(line) as T;
}

interface StreamRun {
  connected: boolean;
  trace_ids: string[];
  all_seen: boolean;
  pending: number;
  events: { trace_id: string; keys: string[]; intervention?: string; feedback: { source?: string; intervention?: string; oversight_mode?: string; reasons?: string[] } }[];
  pii: { trace_id: string; feedback: { source?: string; intervention?: string; oversight_mode?: string } | null; oversight_mode: string | null } | null;
  scores: Record<string, { status?: string; trace_id?: string; agent_id?: string; scores?: { ctq: number; risk: number; confidence: number } } | null>;
}

describe('the real acgp client through the stream: SSE, scores, retries', () => {
  it('its stream reports every trace, get_score finds each verdict, and a retried batch is not counted twice', async () => {
    expect(existsSync(PY), `${PY} missing: .ci/run creates it`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'steward-acgp-stream-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: py-stream\n    tenant: acme\n    api_keys: ["${apiKeyHash('py-stream-key')}"]\n`);
    const redisPrefix = uniqueRedisPrefix('acgp-stream');
    // The LLM judge of the baseline metrics: a local server on the OpenAI wire protocol, every metric 0.8.
    const llm = await startLlmServer({ kind: 'score', score: 0.8 });
    await withClickHouseDatabase(async (db) =>
      withPipelineEnv('http-stream', async ({ cfg: base, topics, adapter }) => {
        const cfg = pipelineConfig(base.topics.prefix, {
          blueprints: { dir: BLUEPRINTS, agents: join(dir, 'agents.yaml'), watch: false },
          redis: { key_prefix: redisPrefix },
          clickhouse: { database: db.name },
          consumer: { group_prefix: base.consumer.groupPrefix },
          http: { enabled: true, port: 0 },
          llm: { base_url: llm.url, model: 'judge-test', timeout_ms: 30_000 },
        });
        const logger = quietLogger();
        const stages = ['tripwire', 'scorer', 'sink'] as const;
        const rt = await bootstrapEngine(cfg, [...stages], logger);
        const pipe = await startPipeline(cfg, [...stages], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSignerFor(cfg, logger)) }, { logger });
        const ing = await startHttpIngress(cfg, logger);
        const out = await new Collector(adapter, [topics.traces, topics.dlq]).start();
        const endpoint = `http://127.0.0.1:${ing.port}`;
        const proxy = await HttpFaultProxy.start(endpoint);
        try {
          const run = await python<StreamRun>('acgp_stream_agent.py', endpoint, 'py-stream-key', ['3', 'pii']);
          expect(run.connected, 'SSE connected before sending').toBe(true);
          expect(run.all_seen, `stream reported every trace (pending ${run.pending})`).toBe(true);
          expect(run.pending).toBe(0);
          // The decision and the verdict reached the client's on_feedback for each trace it sent.
          const pii = run.pii!;
          expect([...new Set(run.events.map((e) => e.trace_id))].sort()).toEqual([...run.trace_ids, pii.trace_id].sort());
          for (const id of run.trace_ids) expect(run.events.find((e) => e.trace_id === id && e.feedback.source === 'decision')?.feedback, id).toMatchObject({ intervention: 'ok' });
          // The blocked action, seen by the unmodified client through its stream (D43): the data guard's PII tripwire.
          expect(run.events.find((e) => e.trace_id === pii.trace_id && e.feedback.source === 'decision')?.feedback, JSON.stringify(run.events)).toEqual({
            source: 'decision',
            intervention: 'block',
            oversight_mode: 'strict_guardian',
            reasons: ['PII detected in output'],
          });
          // And through its queries: get_feedback() returns (it waits for a `feedback` object), get_oversight_mode() is set.
          expect(pii.feedback).toMatchObject({ intervention: 'block' });
          expect(pii.oversight_mode).toBe('strict_guardian');
          for (const id of run.trace_ids) {
            const s = run.scores[id];
            expect(s, `score of ${id}`).toMatchObject({ status: 'processed', trace_id: id, agent_id: 'py-stream' });
            expect(s!.scores!.ctq, JSON.stringify(s)).toBeCloseTo(0.8, 6);
            expect(s!.scores!.risk).toBeCloseTo(1 - s!.scores!.ctq, 6);
          }

          // Retry: the first batch reaches the ingress (produced), but its answer is lost behind a 502.
          let batches = 0;
          proxy.decide = (r) => (r.method === 'POST' && r.url.endsWith('/ingest/traces/batch') && batches++ === 0 ? { forwardThen: { status: 502, body: '<h1>502 Bad Gateway</h1>' } } : 'pass');
          const retried = await python<{ trace_ids: string[]; results: { success: boolean; events_sent: number; error: string | null }[] }>('acgp_agent.py', proxy.url, 'py-stream-key', ['4'], {
            ACGP_MAX_RETRIES: '2',
            ACGP_RETRY_BASE_DELAY: '0.05',
          });
          expect(retried.results).toEqual([expect.objectContaining({ success: true, events_sent: 4 })]);
          expect(proxy.answered.map((a) => a.status)).toEqual([502, 'pass']);
          await waitFor(() => retried.trace_ids.every((id) => out.json<{ trace_id: string }>(topics.traces).some((t) => t.trace_id === id)), { timeoutMs: 20_000, message: 'retried batch produced' });
          await new Promise((r) => setTimeout(r, 1000));
          const produced = out.json<{ trace_id: string }>(topics.traces).filter((t) => retried.trace_ids.includes(t.trace_id));
          expect(produced, 'each event of the retried batch produced once').toHaveLength(4);
          expect(out.on(topics.dlq)).toEqual([]);
        } finally {
          await proxy.close();
          await out.stop();
          await ing.close();
          await pipe.stop();
          await rt.close();
          const redis = redisClient();
          await deleteRedisPrefix(redis, redisPrefix).catch(() => undefined);
          redis.disconnect();
        }
      }),
    ).finally(() => llm.close());
  }, 180_000);
});
