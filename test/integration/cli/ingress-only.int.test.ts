// `steward run --stages none` (docs/http.md "Turning it on"): a process with the HTTP ingress and no stage or engine —
// an ingress replica. It is ready without any stage, produces a batch into acgp.traces, and stops cleanly; with
// neither the ingress nor the dashboard enabled the command refuses to start.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { parseStages, run } from '../../../src/cli/commands/run.js';
import { startStewardProcess } from '../../../src/process/steward-process.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

describe('steward run --stages none (real Kafka, Redis)', () => {
  it('serves the ingress alone: ready with no stage, a batch reaches acgp.traces', async () => {
    expect(parseStages('none')).toEqual([]);
    const dir = mkdtempSync(join(tmpdir(), 'steward-ingress-only-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - { id: io-agent, api_keys: ["${apiKeyHash('io-key')}"] }\n`);
    await withPipelineEnv('ingress-only', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, redis: { key_prefix: uniqueRedisPrefix('io') }, http: { enabled: true, port: 0 } });
      const proc = await startStewardProcess(cfg, [], quietLogger());
      const out = await new Collector(adapter, [topics.traces]).start();
      try {
        expect(proc.isReady()).toBe(true);
        const r = await fetch(`http://127.0.0.1:${proc.httpPort}/v1/ingest/traces/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'io-key' },
          body: JSON.stringify({ batch_id: 'io-1', event_count: 1, events: [{ trace_id: 'io-t1', reasoning_text: 'r', idempotency_key: 'io-1_io-t1' }] }),
        });
        expect(r.status).toBe(200);
        expect(await r.json()).toEqual({ accepted: 1, duplicates: 0, batch_id: 'io-1' });
        await waitFor(() => out.json(topics.traces).some((t) => t.trace_id === 'io-t1' && t.agent_id === 'io-agent'), { timeoutMs: 20_000, message: 'trace produced' });
      } finally {
        await out.stop();
        await proc.stop();
      }
    });
  });

  it('refuses to start with nothing to run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-ingress-none-'));
    writeFileSync(join(dir, 'steward.yaml'), 'http:\n  enabled: false\n');
    await expect(run(['--stages', 'none', '--config', join(dir, 'steward.yaml')])).rejects.toThrow(/--stages none runs only the HTTP ingress and the dashboard, and neither is enabled/);
  });
});
