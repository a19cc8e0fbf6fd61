// Crash safety with the product's engine (repo blueprints, agents.yaml, Redis state — what `steward run`
// bootstraps) instead of the stand-in: the tripwire and scorer processes are killed with SIGKILL
// mid-stream and restarted. Every trace ends with one decision (and one verdict unless halted) after
// dedupe by trace id, and each agent's trust debt in Redis equals its final interventions applied once,
// with the trust_debt settings of the blueprint that decided.
import { describe, it, expect } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { watchBlueprints } from '../../../src/adapters/fs/blueprint-watcher.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { demoTrace, type DemoAgentId } from '../../../src/demo/agents.js';
import { MemoryTrustDebtStore, DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../src/engine/types.js';
import { Collector, withPipelineEnv } from './harness.js';
import { killMidStream, stopChildren } from './children.js';
import { services, waitFor, uniqueRedisPrefix, deleteRedisPrefix } from '../setup/helpers.js';

const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));
// Registered agents (their tiers, tenants and scoped blueprints) and unknown ones (default tier, globals).
const AGENTS: [DemoAgentId, string][] = [
  ['trader-1', 'trader-1'], ['coder-1', 'coder-1'], ['support-1', 'support-1'],
  ['trader-1', 'guest-trader'], ['coder-1', 'guest-coder'], ['support-1', 'guest-support'],
];

/** First message per id in arrival order: what the trust-debt stage applied (later copies are redeliveries). */
function firstById(values: Record<string, any>[]): Map<string, Record<string, any>> {
  const m = new Map<string, Record<string, any>>();
  for (const v of values) if (!m.has(v.trace_id)) m.set(v.trace_id, v);
  return m;
}

describe('crash safety (real engine)', () => {
  it('kill -9 of tripwire and scorer running the real engine: nothing missing, trust debt counted once', async () => {
    const redisPrefix = uniqueRedisPrefix('crash-real');
    await withPipelineEnv(
      'pl-crash-real',
      async ({ prefix, topics, adapter, cfg }) => {
        const base = { prefix, redisPrefix, delayMs: 0, partitions: cfg.topics.partitions, engine: 'real' };
        const children: ChildProcess[] = [];
        const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.trustDebt]).start();
        const producer = await adapter.producer();
        try {
          const PER_AGENT = 200;
          const t0 = Date.UTC(2026, 0, 1, 8);
          const traces: Trace[] = [];
          for (let i = 0; i < PER_AGENT; i++) for (const [kind, id] of AGENTS) traces.push(demoTrace(kind, i, 7, t0 + i * 180_000, prefix, id));
          const N = traces.length;
          const decidedAtKill = await killMidStream({
            base,
            traces,
            send: (messages) => producer.send([{ topic: topics.traces, messages }]),
            batch: 60,
            pauseMs: 100,
            killWhen: () => out.on(topics.verdicts).length > 200,
            decided: () => out.byId(topics.decisions).size,
            children,
          });

          await waitFor(() => out.byId(topics.decisions).size === N, { timeoutMs: 90000, message: 'all decisions after restart' });
          const decisions = firstById(out.json(topics.decisions));
          const halted = [...decisions.values()].filter((d) => d.halted).map((d) => d.trace_id as string);
          const scoredIds = traces.map((t) => t.trace_id).filter((id) => !halted.includes(id));
          // spec-decisions D20: a degraded outcome moves no debt (here a few: the stage children run without an LLM, so an
          // llm-judge metric falls back).
          const degradedIds = () => new Set([...out.byId(topics.verdicts).values(), ...[...decisions.values()].filter((d) => d.halted)].filter((v) => v.degraded === true).map((v) => v.trace_id as string));
          await waitFor(() => out.byId(topics.verdicts).size === scoredIds.length && out.byId(topics.trustDebt, 'event_id').size === N - degradedIds().size, {
            timeoutMs: 90000,
            message: 'all verdicts and debt changes after restart',
          });
          expect(decidedAtKill).toBeLessThan(N); // the kill really happened mid-stream
          expect([...decisions.keys()].sort()).toEqual(traces.map((t) => t.trace_id).sort());
          expect([...out.byId(topics.verdicts).keys()].sort()).toEqual([...scoredIds].sort());
          expect(halted.length).toBeGreaterThan(0); // the mix exercises the halting tripwires
          const verdicts = firstById(out.json(topics.verdicts));
          expect(new Set([...verdicts.values()].map((v) => v.intervention)).size).toBeGreaterThan(2);

          // Expected debt: each trace's final intervention (first verdict, or the halting decision) applied
          // once per agent in trace order with the deciding blueprint's trust_debt settings.
          const engineCfg = buildConfig({}, {}).engine;
          const holder = await watchBlueprints(BLUEPRINTS, { config: engineCfg, watch: false });
          const mem = new MemoryTrustDebtStore();
          const tenants = new Map<string, string>();
          try {
            for (const t of traces) {
              const f = verdicts.get(t.trace_id) ?? decisions.get(t.trace_id)!;
              if (f.degraded === true) continue;
              const bp = holder.current().get(f.blueprint)?.trustDebt ?? DEFAULT_TRUST_DEBT_CONFIG;
              tenants.set(t.agent_id, f.tenant);
              await mem.apply({ eventId: t.trace_id, tenant: f.tenant, agentId: t.agent_id, atMs: Date.parse(t.timestamp), kind: 'intervention', intervention: f.intervention, severity: f.severity }, bp);
            }
          } finally {
            holder.close();
          }
          const redis = new Redis(services().redisUrl);
          try {
            const store = new RedisTrustDebtStore(redis, { prefix: redisPrefix });
            const end = t0 + PER_AGENT * 180_000;
            let indebted = 0;
            for (const [, a] of AGENTS) {
              const got = await store.current(tenants.get(a)!, a, end, DEFAULT_TRUST_DEBT_CONFIG);
              const want = await mem.current(tenants.get(a)!, a, end, DEFAULT_TRUST_DEBT_CONFIG);
              expect(got.debt, a).toBeCloseTo(want.debt, 9);
              if (want.debt > 0) indebted++;
            }
            expect(indebted).toBeGreaterThan(0); // debt actually moved, so counting twice would show
          } finally {
            await deleteRedisPrefix(redis, redisPrefix);
            redis.disconnect();
          }
          // Verdicts need no dedupe: the scorer commits them with its offsets (consumer.exactly_once) and skips the
          // second scoring record the restarted tripwire stage writes for a trace it decides again.
          expect(out.on(topics.verdicts).length).toBe(scoredIds.length);
          expect([...out.byId(topics.trustDebt, 'trace_id').keys()].filter((id) => degradedIds().has(id))).toEqual([]);
          process.stderr.write(`[crash-real] traces=${N} halted=${halted.length} decisions=${out.on(topics.decisions).length} verdicts=${out.on(topics.verdicts).length} at kill=${decidedAtKill}\n`);
        } finally {
          await stopChildren(children);
          await producer.disconnect();
          await out.stop();
        }
      },
      { topics: { partitions: 6 } },
    );
  }, 240_000);
});
