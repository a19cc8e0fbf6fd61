// The README's main job (`npm run demo` → `steward demo`), short: real Kafka, registry, Redis and
// ClickHouse; the sample agents' traffic is decided, scored, debited and lands in ClickHouse once.
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createClient } from '@clickhouse/client';
import { runDemo } from '../../../src/demo/run-demo.js';
import { quietLogger, pipelineConfig } from '../pipeline/harness.js';
import { deleteRedisPrefix, services, uniqueIdent, uniqueName, uniqueRedisPrefix } from '../setup/helpers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('steward demo', () => {
  it('runs the sample agents end to end and counts the run back from ClickHouse', async () => {
    const database = uniqueIdent('steward_demo');
    const redisPrefix = uniqueRedisPrefix('demo');
    const base = pipelineConfig(uniqueName('demo'), { redis: { url: services().redisUrl, key_prefix: redisPrefix } });
    const cfg = {
      ...base,
      blueprints: { dir: `${ROOT}blueprints`, agents: `${ROOT}blueprints/agents.yaml`, watch: false },
      clickhouse: { ...base.clickhouse, url: services().clickhouseUrl, database },
    };
    let text = '';
    const out = new Writable({ write: (chunk, _enc, cb) => ((text += String(chunk)), cb()) });
    try {
      const r = await runDemo(cfg, { durationMs: 6000, rate: 3, withSink: true, keepTopics: false, seed: 7, out, summaryEveryMs: 60_000 }, quietLogger());
      expect(r.decisions).toBeGreaterThan(20);
      expect(r.verdicts).toBeGreaterThan(0);
      expect(r.fallbacks).toBe(0);
      expect(r.clickhouse).toEqual({ decisions: r.decisions, verdicts: r.verdicts, ledger: r.decisions });
      expect(text).toContain('final summary');
      expect(text).toMatch(/clickhouse steward_demo_\w+: (\d+)\/\1 decisions, (\d+)\/\2 verdicts/);
      // The realistic mix exercises more than `ok`.
      const decided = /decisions\s+ok=(\d+)\s+nudge=(\d+)\s+flag=(\d+)\s+escalate=(\d+)\s+block=(\d+)\s+halt=(\d+)/.exec(text);
      expect(decided).not.toBeNull();
      expect(decided!.slice(2).map(Number).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      // The ACM refund example run: the forbidden branch is blocked, the malformed plan refused, the runs in v_acm_runs.
      expect(r.acm!.answers.block).toBeGreaterThan(0);
      expect(r.acm!.refused).toEqual([expect.stringMatching(/:bad-plan: STEWARD_ACM_/)]);
      expect(r.acm!.runs!.map((x) => String(x.run_id).replace(/^[^:]+:/, ''))).toEqual(['run-2025-10-03-REFUND-001', 'run-2025-10-03-REFUND-002', 'run-2025-10-03-REFUND-003']);
      expect(r.acm!.runs!.find((x) => String(x.run_id).endsWith('REFUND-001'))).toMatchObject({ plan_id: 'plan-A' });
      expect(Number(r.acm!.runs!.find((x) => String(x.run_id).endsWith('REFUND-001'))!.forbidden_branches)).toBeGreaterThan(0);
      expect(text).toMatch(/acm: refund example run .*block=[1-9]/);
    } finally {
      const ch = createClient({ url: services().clickhouseUrl });
      await ch.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      await ch.close();
      const redis = new Redis(services().redisUrl);
      await deleteRedisPrefix(redis, redisPrefix);
      redis.disconnect();
    }
  }, 120_000);
});
