// End to end with the real engine, the repository's blueprints and agents.yaml, real Kafka, registry
// and Redis: the demo agents' traffic (JSON and Avro) flows tripwire → scorer → trust-debt, and every
// decision, verdict and trust-debt value equals what the offline engine (`steward eval` semantics)
// computes for the same traces in the same order.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { StewardClient } from '../../../src/client/steward-client.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { bootstrapEngine, loadRegistry } from '../../../src/process/engine-runtime.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { compileBlueprintSet } from '../../../src/engine/blueprint/index.js';
import { readBlueprintFiles } from '../../../src/adapters/fs/blueprint-files.js';
import { MemoryStateStore } from '../../../src/engine/state/memory-state-store.js';
import { MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { demoTrace, DEMO_AGENTS } from '../../../src/demo/agents.js';
import { Collector, quietLogger, withPipelineEnv } from './harness.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';
import type { Trace } from '../../../src/engine/types.js';

const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));

describe('pipeline with the real engine', () => {
  it('stream results equal offline evaluation: decisions, verdicts (signed PVS-1), trust debt', async () => {
    const redisPrefix = uniqueRedisPrefix('e2e');
    await withPipelineEnv(
      'pl-engine',
      async ({ cfg, topics, adapter }) => {
        const logger = quietLogger();
        const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer', 'trust-debt'], logger);
        const pipe = await startPipeline(cfg, ['tripwire', 'scorer', 'trust-debt'], rt.deps, { logger });
        const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.trustDebt, topics.dlq]).start();
        const json = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const avro = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, avro: { registryUrl: cfg.schemaRegistryUrl! } });
        try {
          const t0 = Date.UTC(2026, 2, 1, 9);
          const traces: Trace[] = [];
          for (let i = 0; i < 20; i++) for (const a of DEMO_AGENTS) traces.push(demoTrace(a, i, 7, t0 + traces.length * 30_000, cfg.topics.prefix));
          // Hand-picked cases with known outcomes on top of the generated mix.
          traces.push({ trace_id: `${cfg.topics.prefix}-big-trade`, agent_id: 'trader-1', timestamp: new Date(t0 + 3_600_000).toISOString(), hook: 'tool_call', tool: 'execute_trade', args: { trade_value: 150000, symbol: 'ACME' } });
          traces.push({ trace_id: `${cfg.topics.prefix}-big-refund`, agent_id: 'support-1', timestamp: new Date(t0 + 3_600_000).toISOString(), hook: 'tool_call', tool: 'issue_refund', args: { amount: 5000, order_id: 'ORD-1' } });
          traces.push({ trace_id: `${cfg.topics.prefix}-rm`, agent_id: 'coder-1', timestamp: new Date(t0 + 3_600_000).toISOString(), hook: 'tool_call', tool: 'shell', args: { command: 'rm -rf /', program: 'rm' } });

          // One trace at a time, each waiting for its trust-debt event, so the stream sees the same
          // trust debt (restricted mode) as the offline engine that applies debt after every trace.
          const decided = new Map<string, string>();
          for (const [i, t] of traces.entries()) {
            const d = await (i % 2 ? avro : json).decide(t, { timeoutMs: 10_000 });
            expect(d.fallback, t.trace_id).toBeUndefined();
            decided.set(t.trace_id, d.intervention);
            await waitFor(() => out.byId(topics.trustDebt, 'trace_id').has(t.trace_id), { timeoutMs: 10_000, message: `trust debt of ${t.trace_id}` });
          }

          const files = await readBlueprintFiles([BLUEPRINTS], { base: BLUEPRINTS });
          const set = compileBlueprintSet(files, { config: cfg.engine }).set!;
          const offline = new StewardEngine({ blueprints: () => set, registry: loadRegistry(cfg), config: cfg.engine, state: new MemoryStateStore(), trustDebt: new MemoryTrustDebtStore(), engineVersion: 'test' });
          const decisions = out.byId(topics.decisions);
          const verdicts = out.byId(topics.verdicts);
          const debts = out.byId(topics.trustDebt, 'trace_id');
          const seen = new Set<string>();
          for (const t of traces) {
            const e = await offline.evaluate(t, Date.parse(t.timestamp));
            expect(decided.get(t.trace_id), t.trace_id).toBe(e.decision.intervention);
            expect(decisions.get(t.trace_id).intervention, t.trace_id).toBe(e.decision.intervention);
            if (e.decision.halted) expect(verdicts.has(t.trace_id), t.trace_id).toBe(false);
            else {
              const v = verdicts.get(t.trace_id);
              expect(v.intervention, t.trace_id).toBe(e.score.intervention);
              expect(v.verdict.version).toBe('pvs-1');
              expect(v.verdict.signature).toBeDefined();
            }
            expect(debts.get(t.trace_id).after, t.trace_id).toBeCloseTo(e.trustDebt.after, 9);
            seen.add(e.decision.intervention);
          }
          expect(decisions.get(`${cfg.topics.prefix}-big-trade`).intervention).toBe('halt'); // finance/trading_bot@2.0 trade_size_limit
          expect(decisions.get(`${cfg.topics.prefix}-big-refund`).intervention).toBe('halt');
          expect(decisions.get(`${cfg.topics.prefix}-rm`).intervention).toBe('halt');
          expect(seen.size).toBeGreaterThanOrEqual(3); // a real mix, not all ok
          expect(out.on(topics.dlq)).toHaveLength(0);
        } finally {
          await json.close();
          await avro.close();
          await out.stop();
          await pipe.stop();
          await rt.close();
          const r = new Redis(services().redisUrl);
          await deleteRedisPrefix(r, redisPrefix);
          r.disconnect();
        }
      },
      { redis: { key_prefix: redisPrefix }, blueprints: { dir: BLUEPRINTS, agents: `${BLUEPRINTS}/agents.yaml` } },
    );
  }, 120_000);
});
