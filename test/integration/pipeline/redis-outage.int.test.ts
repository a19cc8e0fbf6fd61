// Redis stopped mid-stream (a private redis-server started by this test, AOF on so data survives the
// restart; the shared Redis is never touched): stateful tripwires fail closed while it is down, the
// synchronous path keeps answering, trust-debt updates wait and are applied — once each — when it returns.
import { describe, it, expect } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StewardClient } from '../../../src/client/steward-client.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { MemoryTrustDebtStore, DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { Collector, quietLogger, withPipelineEnv } from './harness.js';
import { waitFor } from '../setup/helpers.js';
import { freePort, pingable, startPrivateRedis } from '../setup/private-redis.js';
import { Redis } from 'ioredis';
import type { Trace } from '../../../src/engine/types.js';

const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));

describe('Redis outage', () => {
  it('fails stateful tripwires closed while down (degraded: no trust debt) and applies trust debt once after it returns', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'steward-redis-'));
    let redisProc = startPrivateRedis(port, dir);
    const url = `redis://127.0.0.1:${port}`;
    try {
      await waitFor(() => pingable(port), { timeoutMs: 15000, message: 'private redis' });
      await withPipelineEnv(
        'pl-redis',
        async ({ cfg, topics, adapter }) => {
          const logger = quietLogger();
          const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer', 'trust-debt'], logger);
          const pipe = await startPipeline(cfg, ['tripwire', 'scorer', 'trust-debt'], rt.deps, { logger });
          const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.trustDebt]).start();
          const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
          const t0 = Date.UTC(2026, 3, 1, 8);
          const refund = (i: number, amount: number): Trace => ({
            trace_id: `${cfg.topics.prefix}-r${i}`, agent_id: 'support-1', timestamp: new Date(t0 + i * 600_000).toISOString(),
            hook: 'tool_call', tool: 'issue_refund', args: { amount, order_id: i === 3 || i === 8 ? '' : `ORD-${i}` }, // 3, 8: no order → rule block
          });
          try {
            for (let i = 0; i < 6; i++) {
              const d = await client.decide(refund(i, i === 2 ? 900 : 50), { timeoutMs: 10000 });
              expect(d.fallback).toBeUndefined();
            }
            await waitFor(() => out.byId(topics.trustDebt, 'trace_id').size === 6, { timeoutMs: 15000, message: 'debt before outage' });

            redisProc.kill('SIGTERM');
            await new Promise((r) => redisProc.once('exit', r));
            const during: string[] = [];
            for (let i = 6; i < 10; i++) {
              const d = await client.decide(refund(i, 50), { timeoutMs: 10000 });
              expect(d.fallback, 'the sync path keeps answering').toBeUndefined();
              // refund_rate (exceeds_rate, stateful) cannot be evaluated → fails closed with the blueprint's
              // governance fallback (refund_agent: escalate), never approved, never halted.
              expect(d.intervention).toBe(i === 8 ? 'block' : 'escalate');
              expect(d.approved).toBe(false);
              expect(d.tripwires.find((t) => t.id === 'refund_rate')?.error).toBeDefined();
              // spec-decisions D20: forced by the outage (degraded) unless a rule decided as much on its own.
              expect(d.degraded === true, d.trace_id).toBe(i !== 8);
              during.push(d.trace_id);
            }
            await new Promise((r) => setTimeout(r, 1500));
            const duringApplied = during.filter((id) => out.byId(topics.trustDebt, 'trace_id').has(id));
            expect(duringApplied, 'no trust-debt event while Redis is down').toEqual([]);

            redisProc = startPrivateRedis(port, dir);
            await waitFor(() => pingable(port), { timeoutMs: 15000, message: 'redis back' });
            // The three outcomes the outage forced are degraded: recorded, counted, and they move no debt.
            await waitFor(() => out.byId(topics.trustDebt, 'trace_id').size === 7 && out.byId(topics.verdicts).size === 10, { timeoutMs: 30000, message: 'debt after outage' });
            const degraded = [...out.byId(topics.verdicts).values()].filter((v) => v.degraded === true).map((v) => v.trace_id);
            expect(degraded.sort()).toEqual(during.filter((id) => !id.endsWith('-r8')).sort());
            await new Promise((r) => setTimeout(r, 1000));
            expect(degraded.filter((id) => out.byId(topics.trustDebt, 'trace_id').has(id))).toEqual([]);
            expect(out.byId(topics.trustDebt, 'trace_id').size).toBe(7);

            // Expected: every non-degraded final intervention the stream produced, applied once in trace order.
            const finals = new Map<string, { intervention: string; severity?: string; degraded?: boolean }>();
            for (const [id, d] of out.byId(topics.decisions)) if (d.halted) finals.set(id, d);
            for (const [id, v] of out.byId(topics.verdicts)) finals.set(id, v);
            const mem = new MemoryTrustDebtStore();
            const bp = rt.holder.current().get('support/refund_agent@1.0')?.trustDebt ?? DEFAULT_TRUST_DEBT_CONFIG;
            for (let i = 0; i < 10; i++) {
              const t = refund(i, 0);
              const f = finals.get(t.trace_id)!;
              if (f.degraded) continue;
              await mem.apply({ eventId: t.trace_id, tenant: 'acme', agentId: 'support-1', atMs: Date.parse(t.timestamp), kind: 'intervention', intervention: f.intervention as never, severity: f.severity }, bp);
            }
            const r = new Redis(url);
            try {
              const at = t0 + 10 * 600_000;
              const got = await new RedisTrustDebtStore(r, { prefix: cfg.redis.keyPrefix }).current('acme', 'support-1', at, bp);
              const want = await mem.current('acme', 'support-1', at, bp);
              expect(want.debt).toBeGreaterThan(0);
              expect(got.debt).toBeCloseTo(want.debt, 9);
            } finally {
              r.disconnect();
            }
          } finally {
            await client.close();
            await out.stop();
            await pipe.stop();
            await rt.close();
          }
        },
        { redis: { url, key_prefix: 'outage:' }, blueprints: { dir: BLUEPRINTS, agents: `${BLUEPRINTS}/agents.yaml` } },
      );
    } finally {
      redisProc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
