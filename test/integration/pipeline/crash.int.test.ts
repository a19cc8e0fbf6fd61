// Crash safety on real Kafka + Redis: the tripwire and scorer processes are killed with SIGKILL
// mid-stream and restarted. Every trace must end with exactly one decision after dedupe by trace id and exactly
// one verdict without (none missing), and trust debt must equal the value of applying each final intervention once.
import { describe, it, expect } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { MemoryTrustDebtStore, DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { Collector, withPipelineEnv, trace, TestEngine } from './harness.js';
import { services, waitFor, uniqueRedisPrefix, deleteRedisPrefix } from '../setup/helpers.js';
import type { Trace } from '../../../src/engine/types.js';
import { killMidStream, stopChildren } from './children.js';

describe('crash safety', () => {
  it('kill -9 of tripwire and scorer mid-stream: one decision and one verdict per trace, trust debt counted once', async () => {
    const redisPrefix = uniqueRedisPrefix('crash');
    await withPipelineEnv(
      'pl-crash',
      async ({ prefix, topics, adapter, cfg }) => {
        const base = { prefix, redisPrefix, delayMs: 2, partitions: cfg.topics.partitions };
        const children: ChildProcess[] = [];
        const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.trustDebt]).start();
        const producer = await adapter.producer();
        try {
          const N = 1800;
          const agents = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];
          const traces: Trace[] = [];
          for (let i = 0; i < N; i++) {
            const a = agents[i % agents.length];
            const kind = i % 10;
            traces.push(trace(i, a, { timestamp: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(), ...(kind === 3 ? { args: { amount: 5000 } } : kind === 7 ? { content: 'password' } : kind === 9 && i % 40 === 9 ? { tool: 'rm_rf' } : {}) }));
          }
          const decidedAtKill = await killMidStream({
            base,
            traces,
            send: (messages) => producer.send([{ topic: topics.traces, messages }]),
            batch: 100,
            pauseMs: 150,
            killWhen: () => out.on(topics.verdicts).length > 150,
            decided: () => out.byId(topics.decisions).size,
            children,
          });

          const engine = new TestEngine();
          const finals = new Map<string, { intervention: string; severity?: string }>();
          for (const t of traces) {
            const d = await engine.decide(t, 0);
            finals.set(t.trace_id, d.halted ? d : await engine.score(t, d, 0));
          }
          const scoredIds = traces.filter((t) => t.tool !== 'rm_rf').map((t) => t.trace_id);
          await waitFor(() => out.byId(topics.decisions).size === N && out.byId(topics.verdicts).size === scoredIds.length && out.byId(topics.trustDebt, 'event_id').size === N, {
            timeoutMs: 90000,
            message: 'all outputs after restart',
          });
          expect(decidedAtKill).toBeLessThan(N); // the kill really happened mid-stream
          expect([...out.byId(topics.decisions).keys()].sort()).toEqual(traces.map((t) => t.trace_id).sort());
          expect([...out.byId(topics.verdicts).keys()].sort()).toEqual([...scoredIds].sort());
          for (const [id, v] of out.byId(topics.verdicts)) expect(v.intervention, id).toBe(finals.get(id)!.intervention);

          // Expected debt: each final intervention applied once, per agent in trace order.
          const mem = new MemoryTrustDebtStore();
          for (const t of traces) {
            const f = finals.get(t.trace_id)!;
            await mem.apply({ eventId: t.trace_id, tenant: 'acme', agentId: t.agent_id, atMs: Date.parse(t.timestamp), kind: 'intervention', intervention: f.intervention as never, severity: f.severity }, DEFAULT_TRUST_DEBT_CONFIG);
          }
          const redis = new Redis(services().redisUrl);
          try {
            const store = new RedisTrustDebtStore(redis, { prefix: redisPrefix });
            const end = Date.UTC(2026, 0, 1) + N * 60_000;
            for (const a of agents) {
              const got = await store.current('acme', a, end, DEFAULT_TRUST_DEBT_CONFIG);
              const want = await mem.current('acme', a, end, DEFAULT_TRUST_DEBT_CONFIG);
              expect(got.debt, a).toBeCloseTo(want.debt, 9);
            }
          } finally {
            await deleteRedisPrefix(redis, redisPrefix);
            redis.disconnect();
          }
          // Verdicts need no dedupe: the scorer commits them with its offsets (consumer.exactly_once) and skips the
          // second scoring record the restarted tripwire stage writes for a trace it decides again.
          expect(out.on(topics.verdicts).length).toBe(scoredIds.length);
          const dupDecisions = out.on(topics.decisions).length - N;
          process.stderr.write(`[crash] decisions=${out.on(topics.decisions).length} (redelivered ${dupDecisions}), verdicts=${out.on(topics.verdicts).length}\n`);
        } finally {
          await stopChildren(children);
          await producer.disconnect();
          await out.stop();
        }
      },
      { topics: { partitions: 6 } },
    );
  }, 180_000);
});
