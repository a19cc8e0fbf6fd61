/**
 * Issue #23 part A (spec-decisions D28): Steward's Redis state on a real three-master Redis Cluster
 * (scripts/services.sh up redis-cluster). Every multi-key script must touch one hash slot: a CROSSSLOT key
 * would fail these tests with a Redis error.
 */
import { describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { RedisStateStore } from '../../../src/adapters/redis/state-store.js';
import { RedisStateRounds } from '../../../src/adapters/redis/state-rounds.js';
import { setRewriteOnly } from '../../../src/engine/gate/agent-index.js';
import { RedisGateJobStore } from '../../../src/adapters/redis/gate-job-store.js';
import { RedisAcmStateStore } from '../../../src/adapters/redis/acm-state-store.js';
import { keySlot } from '../../../src/adapters/redis/slots.js';
import { isCluster } from '../../../src/adapters/redis/client.js';
import { MemoryTrustDebtStore, DEFAULT_TRUST_DEBT_CONFIG, HOUR_MS } from '../../../src/engine/trust-debt/index.js';
import { MemoryStateStore } from '../../../src/engine/state/memory-state-store.js';
import type { GateJobState } from '../../../src/engine/gate/types.js';
import { decideChunk, FinalizationGate, type GateChunkItem, type GateChunkResult } from '../../../src/engine/gate/index.js';
import { compileBlueprintSet } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import type { LlmClient } from '../../../src/engine/types.js';
import type { StoredRun } from '../../../src/engine/acm/state-store.js';
import { STREAM_CFG, eventStream } from '../trust-debt/events.js';
import { clusterClient, mastersHolding, withCluster } from './cluster.js';

describe('Steward state on a 3-master Redis Cluster', () => {
  it('trust debt: 3 000 events of 40 agents (redeliveries included) applied concurrently equal the in-memory store bit for bit', async () => {
    await withCluster(async (c, prefix) => {
      expect(isCluster(c)).toBe(true);
      const red = new RedisTrustDebtStore(c, { prefix });
      const mem = new MemoryTrustDebtStore();
      const events = eventStream(2323, 3000, 0.1, 40);
      // Per agent in order, agents concurrently: the store batches each turn's events per slot.
      const lanes = new Map<string, typeof events>();
      for (const ev of events) lanes.set(ev.agentId, [...(lanes.get(ev.agentId) ?? []), ev]);
      const got = new Map<string, number[]>();
      await Promise.all(
        [...lanes].map(async ([agent, evs]) => {
          const out: number[] = [];
          for (const ev of evs) out.push((await red.apply(ev, STREAM_CFG)).after);
          got.set(agent, out);
        }),
      );
      for (const [agent, evs] of lanes) {
        const want: number[] = [];
        for (const ev of evs) want.push((await mem.apply(ev, STREAM_CFG)).after);
        expect(got.get(agent)).toEqual(want);
      }
      const at = Date.UTC(2026, 3, 1);
      for (const agent of lanes.keys()) expect((await red.current('conc', agent, at, STREAM_CFG)).debt).toBe((await mem.current('conc', agent, at, STREAM_CFG)).debt);
      // The agents' keys are spread over every master, and the known agents are found on all of them.
      expect(await mastersHolding(c, prefix)).toBe(3);
      expect((await red.knownAgents()).map(([, a]) => a).sort()).toEqual([...lanes.keys()].sort());
      // The good-behaviour sweep visits every slot's agent set: the same credits as the in-memory sweep.
      const sweepAt = Date.UTC(2026, 6, 1);
      const swept = (await red.sweep(sweepAt, () => STREAM_CFG)).map((ch) => `${ch.agentId}@${ch.atMs}:${ch.after}`).sort();
      const sweptMem = (await mem.sweep(sweepAt, () => STREAM_CFG)).map((ch) => `${ch.agentId}@${ch.atMs}:${ch.after}`).sort();
      expect(swept).toEqual(sweptMem);
      expect(swept.length).toBeGreaterThan(0);
      expect(await red.auditOutboxLength()).toBe(swept.length);
      expect((await red.drainAuditOutbox(() => undefined)).length).toBe(swept.length);
      expect(await red.auditOutboxLength()).toBe(0);
    });
  });

  it('trust debt: re-tiering queue over slots, resolve per agent, remediation request and grant', async () => {
    await withCluster(async (c, prefix) => {
      const red = new RedisTrustDebtStore(c, { prefix });
      const agents = ['rogue', 'other', 'third', 'fourth'];
      // agents in at least two slots on different masters
      expect(new Set(agents.map((a) => keySlot(red.agentKey('acme', a)))).size).toBe(4);
      for (const [i, a] of agents.entries()) await red.apply({ eventId: `sev-${a}`, tenant: 'acme', agentId: a, atMs: Date.UTC(2026, 0, 1) + i, kind: 'intervention', intervention: 'block', severity: 'severe' }, DEFAULT_TRUST_DEBT_CONFIG);
      expect((await red.retierQueue()).map((r) => r.agentId)).toEqual(agents);
      expect((await red.resolveRetier('acme', 'other')).map((r) => r.agentId)).toEqual(['other']);
      expect((await red.retierQueue()).map((r) => r.agentId)).toEqual(['rogue', 'third', 'fourth']);
      const before = (await red.current('acme', 'rogue', Date.UTC(2026, 0, 1, 1), DEFAULT_TRUST_DEBT_CONFIG)).debt;
      await red.requestRemediation('acme', 'rogue', { requestId: 'r-1', reason: 'fixed', atMs: Date.UTC(2026, 0, 1, 1) });
      expect((await red.pendingRemediations()).map((r) => r.requestId)).toEqual(['r-1']);
      const { change } = await red.decideRemediation('r-1', 'grant', { reviewer: 'ops', atMs: Date.UTC(2026, 0, 1, 1) });
      expect(change!.after).toBeLessThan(before);
      expect(await red.pendingRemediations()).toEqual([]);
    });
  });

  it('rate windows: hits of many agents in one turn go as one script call per slot and count as one key at a time would', async () => {
    await withCluster(async (c, prefix) => {
      const rounds = new RedisStateRounds(c);
      const store = new RedisStateStore(c, prefix, { rounds });
      const mem = new MemoryStateStore();
      const t0 = Date.UTC(2026, 0, 1);
      const ns = Array.from({ length: 24 }, (_, i) => `acme:agent-${i}`);
      for (let step = 0; step < 6; step++) {
        const calls = ns.flatMap((n, i) => [store.hit(n, 'k', 10_000, t0 + step * 3_000 + i, `e-${step}`), store.hit(n, 'k2', 4_000, t0 + step * 3_000, `e-${step}`)]);
        const want = await Promise.all(ns.flatMap((n, i) => [mem.hit(n, 'k', 10_000, t0 + step * 3_000 + i, `e-${step}`), mem.hit(n, 'k2', 4_000, t0 + step * 3_000, `e-${step}`)]));
        expect(await Promise.all(calls)).toEqual(want);
      }
      const slots = new Set(ns.map((n) => keySlot(store.rateKey(n, 'k'))));
      // one call per slot and turn (an agent's two keys share its slot), not one per hit
      expect(rounds.ops).toBe(6 * 48);
      expect(rounds.calls).toBe(6 * slots.size);
      expect(await mastersHolding(c, prefix)).toBe(3);
      // a redelivered hit (same id) counts once
      expect(await store.hit(ns[0]!, 'k', 10_000, t0 + 15_000, 'e-5')).toBe(await mem.hit(ns[0]!, 'k', 10_000, t0 + 15_000, 'e-5'));
    });
  });

  it('gate job state and ACM run state: compare-and-set from two clients at once loses no update', async () => {
    await withCluster(async (c1, prefix) => {
      const c2 = await clusterClient();
      try {
        const gates = [new RedisGateJobStore(c1, { prefix }), new RedisGateJobStore(c2, { prefix })];
        const key = { tenant: 'acme', agentId: 'bot', jobId: 'job-1' };
        const now = Date.UTC(2026, 0, 1);
        const bump = (prev: GateJobState | undefined): GateJobState =>
          prev ? { ...prev, attempt_count: prev.attempt_count + 1, updated_ms: now } : { v: 1, job_id: 'job-1', tenant: 'acme', agent_id: 'bot', created_ms: now, updated_ms: now, attempt_count: 1, attempts: [], tool_calls: [] } as unknown as GateJobState;
        await Promise.all(gates.flatMap((g) => Array.from({ length: 15 }, () => g.update(key, now, bump))));
        expect((await gates[1]!.get(key, now))!.attempt_count).toBe(30);
        // the agent's rewrite-only index (D45) beside the agent's jobs: no entry lost either
        const agent = { tenant: 'acme', agentId: 'bot' };
        await Promise.all(gates.flatMap((g, k) => Array.from({ length: 5 }, (_, i) => g.updateAgent(agent, now, (p) => setRewriteOnly(p, `j${k}-${i}`, now, now)))));
        expect(Object.keys((await gates[0]!.getAgent(agent, now))!.rewrite_only)).toHaveLength(10);

        const runs = [new RedisAcmStateStore(c1, { prefix }), new RedisAcmStateStore(c2, { prefix })];
        const add = (i: number) => (prev: StoredRun | undefined): StoredRun => ({ run: (prev?.run ?? { run_id: 'run-1' }) as StoredRun['run'], answers: [...(prev?.answers ?? []), { i } as unknown as StoredRun['answers'][number]] });
        await Promise.all(runs.flatMap((r, k) => Array.from({ length: 15 }, (_, i) => r.updateRun('acme', 'run-1', now, add(k * 100 + i)))));
        const stored = await runs[0]!.getRun('acme', 'run-1', now + HOUR_MS);
        expect(stored!.answers).toHaveLength(30);
        expect(await runs[1]!.updateContexts('acme', now, () => ({ packets: {} }) as never)).toEqual({ packets: {} });
        expect(await runs[0]!.getContexts('acme', now)).toEqual({ packets: {} });
      } finally {
        c2.disconnect();
      }
    });
  });

  it('gate chunks: a slice of answers over six agents is one script call per slot and round; two instances on the same chunk agree', async () => {
    await withCluster(async (c1, prefix) => {
      const c2 = await clusterClient();
      try {
        const config = defaultEngineConfig();
        const bp = compileBlueprintSet([{ file: 'g.yaml', text: 'id: t/g@1.0\nversion: "1.0.0"\ndescription: g\nfinalization_gate: { enabled: true }\n' }], { config }).set!.blueprints.find((b) => b.id === 't/g@1.0')!;
        const verdict = (v: string): LlmClient => ({ complete: async () => ({ text: `{"quality_score":${v === 'PASS' ? 0.95 : 0.3},"verdict":"${v}","reason_codes":${v === 'PASS' ? '[]' : '["OVERLY_GENERIC"]'},"fix_mode":"REWRITE_ONLY","missing_requirements":[]}`, model: 'j', latencyMs: 0 }) });
        const stores = [new RedisGateJobStore(c1, { prefix }), new RedisGateJobStore(c2, { prefix })];
        const gates = [new FinalizationGate({ llm: verdict('PASS'), jobStore: stores[0]! }), new FinalizationGate({ llm: verdict('FAIL'), jobStore: stores[1]! })];
        const now = Date.UTC(2026, 0, 1);
        const agents = Array.from({ length: 6 }, (_, i) => `bot-${i}`);
        const items: GateChunkItem[] = Array.from({ length: 30 }, (_, i) => ({
          hook: 'final_answer',
          trace: { trace_id: `fa-${i}`, agent_id: agents[i % 6]!, timestamp: new Date(now).toISOString(), hook: 'final_answer', job_id: `job-${i}`, draft_answer: 'done' },
          agent: { id: agents[i % 6]!, tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true },
          blueprint: bp,
          nowMs: now,
          eventId: `e-${i}`,
        }));
        const slots = new Set(agents.map((a) => keySlot(stores[0]!.key({ tenant: 'acme', agentId: a, jobId: 'x' })))).size;
        const [a, b] = await Promise.all(gates.map((g) => decideChunk(g, items)));
        const answer = (r: GateChunkResult) => ('outcome' in r ? [r.outcome.verdict, r.outcome.action, r.outcome.attempt_index] : r);
        expect(a.map(answer)).toEqual(b.map(answer));
        // one read call per slot; the writes of the instance that lost some races re-read those jobs alone
        expect(stores[0]!.rounds.calls).toBeGreaterThanOrEqual(2 * slots);
        for (let i = 0; i < 30; i++) expect((await stores[0]!.get({ tenant: 'acme', agentId: agents[i % 6]!, jobId: `job-${i}` }, now))!.attempt_count).toBe(1);
        const quiet = new RedisGateJobStore(c1, { prefix: `${prefix}q:` });
        await decideChunk(new FinalizationGate({ llm: verdict('PASS'), jobStore: quiet }), items);
        expect(quiet.rounds).toEqual({ calls: 2 * slots, ops: 60 });
      } finally {
        c2.disconnect();
      }
    });
  });
});
