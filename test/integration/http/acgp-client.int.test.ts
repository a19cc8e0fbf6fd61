// The real acgp client from PyPI (0.1.4, installed by .ci/run into .venv-acgp/) governs a small Python agent
// through the HTTP ingress, configured only through its own ACGP_* variables (docs/http.md).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const PY = resolve('.venv-acgp/bin/python');
const AGENT = resolve('test/integration/http/acgp_agent.py');

async function runAgent(endpoint: string, key: string, n: number): Promise<{ trace_ids: string[]; results: { success: boolean; events_sent: number; error: string | null }[] }> {
  const env = { PATH: process.env.PATH ?? '', ACGP_ENDPOINT: endpoint, ACGP_API_KEY: key, ACGP_MAX_RETRIES: '0', ACGP_FAIL_SILENTLY: 'true' };
  const { stdout } = await promisify(execFile)(PY, [AGENT, String(n)], { env, timeout: 60_000 });
  const line = stdout.split('\n').find((l) => l.startsWith('{"trace_ids"'));
  if (!line) throw new Error(`agent printed no result:\n${stdout}`);
  return JSON.parse(line);
}

describe('the real acgp Python client (PyPI) through the HTTP ingress', () => {
  it('batch ingest as the key\'s agent; a wrong key refused', async () => {
    expect(existsSync(PY), `${PY} missing: .ci/run creates it (python3 -m venv .venv-acgp && .venv-acgp/bin/pip install acgp==0.1.4)`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'steward-acgp-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: py-agent\n    api_keys: ["${apiKeyHash('py-key')}"]\n`);
    await withPipelineEnv('http-acgp', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, redis: { key_prefix: uniqueRedisPrefix('acgp') }, http: { enabled: true, port: 0 } });
      const ing = await startHttpIngress(cfg, quietLogger());
      const out = await new Collector(adapter, [topics.traces]).start();
      try {
        const endpoint = `http://127.0.0.1:${ing.port}`;
        const ok = await runAgent(endpoint, 'py-key', 3);
        expect(ok.results).toEqual([expect.objectContaining({ success: true, events_sent: 3 })]);
        await waitFor(() => out.on(topics.traces).length >= 3, { timeoutMs: 20_000 });
        const traces = out.json(topics.traces);
        expect(traces.map((t) => t.trace_id).sort()).toEqual([...ok.trace_ids].sort());
        expect(out.on(topics.traces).every((m) => m.key?.toString() === 'py-agent')).toBe(true);
        expect(traces[0]).toMatchObject({ agent_id: 'py-agent', hook: 'output', sources: [{ id: 'handbook.md' }] });
        expect(traces[0].content).toMatch(/^answer \d$/);
        expect(traces[0].timestamp).toMatch(/Z$/);

        const bad = await runAgent(endpoint, 'wrong-key', 1);
        expect(bad.results).toEqual([expect.objectContaining({ success: false, events_sent: 0 })]);
        expect(bad.results[0].error).toMatch(/401/);
        await new Promise((r) => setTimeout(r, 500));
        expect(out.on(topics.traces)).toHaveLength(3);
      } finally {
        await out.stop();
        await ing.close();
      }
    });
  });
});
