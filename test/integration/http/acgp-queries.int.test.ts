// The real acgp client (PyPI 0.1.4, .venv-acgp) with ACGP_FAIL_SILENTLY=false against the query routes on real
// ClickHouse (docs/http.md "Queries", D43): get_score() waits for a trace the sink has not stored yet and returns its
// scores once stored; another agent's trace is answered like one never stored, and no call raises. Before audit #24
// r2 (finding 5) a trace not stored answered 404, on which the client raises at once instead of waiting.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { pipelineConfig, quietLogger } from '../pipeline/harness.js';
import { uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const PY = resolve('.venv-acgp/bin/python');

type Call<T> = { value?: T; raised?: string };
interface QueryRun {
  score: Call<{ status?: string; trace_id?: string; scores?: { ctq: number; risk: number; confidence: number } }>;
  score_waited_s: number;
  not_ours_score: Call<Record<string, unknown>>;
  not_ours_feedback: Call<Record<string, unknown>>;
  not_ours_oversight: Call<string | null>;
}

describe('the real acgp client on the query routes (ACGP_FAIL_SILENTLY=false, real ClickHouse)', () => {
  it('get_score() waits for a trace stored while it asks; another agent\'s trace answers as not stored, nothing raises', async () => {
    expect(existsSync(PY), `${PY} missing: .ci/run creates it`).toBe(true);
    const dbName = `steward_http_acgpq_${process.pid}_${Date.now().toString(36)}`;
    const dir = mkdtempSync(join(tmpdir(), 'steward-acgp-q-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: q-py\n    api_keys: ["${apiKeyHash('q-py-key')}"]\n`);
    const cfg = pipelineConfig(`http-acgpq-${process.pid}`, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, redis: { key_prefix: uniqueRedisPrefix('acgpq') }, clickhouse: { database: dbName }, http: { enabled: true, port: 0 } });
    const store = new ClickHouseStore(cfg.clickhouse);
    await store.command(`CREATE DATABASE IF NOT EXISTS ${dbName}`);
    await migrate(store);
    const ing = await startHttpIngress(cfg, quietLogger());
    const now = Date.now();
    const verdict = (trace_id: string, agent_id: string) => ({ trace_id, agent_id, tenant: 'default', blueprint: 'b', intervention: 'ok', approved: 1, stage: 'ctq', ctq: 0.81, risk: 0.19, confidence: 0.9, policy_violations: [], metric_names: ['m'], metric_scores: [0.81], metric_statuses: ['ok'], metrics_json: '{}', verdict_json: '{"ctq":0.81}', signature: 's', event_time_ms: now, scored_at_ms: now, ingested_at_ms: now });
    try {
      // Stored, but under another agent: this key's agent must not see it, nor tell it from a trace never stored.
      await store.insert('verdicts', [verdict('q-foreign', 'someone-else')]);
      const env = { PATH: process.env.PATH ?? '', ACGP_ENDPOINT: `http://127.0.0.1:${ing.port}`, ACGP_API_KEY: 'q-py-key', ACGP_FAIL_SILENTLY: 'false' };
      const child = spawn(PY, [resolve('test/integration/http/acgp_query_agent.py'), 'q-later', 'q-foreign'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      await waitFor(() => stdout.includes('asking'), { timeoutMs: 20_000, message: 'the agent started asking' });
      // The sink stores the verdict a second after the client began asking (its attempts: 0, 0.3, 0.75, 1.4 s…).
      await new Promise((r) => setTimeout(r, 1000));
      await store.insert('verdicts', [verdict('q-later', 'q-py')]);
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await exited;
      clearTimeout(timer);
      expect(code, stderr).toBe(0);
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      expect(line, `no result:\n${stdout}\n${stderr}`).toBeDefined();
      const run = JSON.parse(line!) as QueryRun;
      expect(run.score.raised).toBeUndefined();
      expect(run.score.value).toMatchObject({ status: 'processed', trace_id: 'q-later', agent_id: 'q-py', scores: { ctq: 0.81, risk: 0.19, confidence: 0.9 } });
      // It waited across the insert rather than answering (or raising) at its first attempt.
      expect(run.score_waited_s).toBeGreaterThanOrEqual(0.9);
      // Another agent's trace: the not-stored answer, with no field of the stored row; get_oversight_mode() None.
      expect(run.not_ours_score).toEqual({ value: { status: 'not_found', trace_id: 'q-foreign' } });
      expect(run.not_ours_feedback).toEqual({ value: { status: 'not_found', trace_id: 'q-foreign' } });
      expect(run.not_ours_oversight).toEqual({ value: null });
    } finally {
      await ing.close();
      await store.command(`DROP DATABASE IF EXISTS ${dbName}`);
      await store.close();
    }
  }, 90_000);
});
