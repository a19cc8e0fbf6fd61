/**
 * Issue #23 part A: the batched decision-path state (RedisStateRounds, docs/pipeline.md "Batched state") gives
 * every agent the decisions sequential evaluation gives, on one Redis and on a 3-master Redis Cluster; and two
 * Steward engines sharing the cluster (each deciding its own agents, as two instances owning different
 * partitions do) give the decisions one engine gives.
 *
 * The blueprint makes each trace's Redis work depend on earlier answers: a halt skips the later rate tripwire
 * (so which hits a trace makes depends on its content), rate limits fire often (3 in 10 s per agent, 2 in 5 s per
 * kind), and the per-kind key comes from the trace. Latency budgets are a minute, so a slow Redis under load
 * never turns a decision into a timeout fallback (the comparison is of state, not of timing).
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bootstrapEngine, type EngineRuntime } from '../../../src/process/engine-runtime.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { createLogger } from '../../../src/logger.js';
import type { Trace } from '../../../src/engine/types.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix } from '../setup/helpers.js';
import { clusterClient, clusterNodes, deleteClusterPrefix, placement } from './cluster.js';
import { AGENTS, dir, stream, TEST_TIERS } from './fixtures.js';

async function runtime(prefix: string, cluster: boolean): Promise<EngineRuntime> {
  const cfg = buildConfig(
    { blueprints: { dir: join(dir, 'bp'), agents: join(dir, 'agents.yaml'), watch: false }, redis: { url: services().redisUrl, key_prefix: prefix, ...(cluster ? { cluster_nodes: clusterNodes() } : {}) }, observability: { enabled: false }, engine: { tiers: TEST_TIERS } },
    {},
  );
  return bootstrapEngine(cfg, ['tripwire'], createLogger({ level: 'silent' }));
}

type Decided = Record<string, string>;
const view = (d: { intervention: string; halted: boolean; tripwires: { id: string; fired: boolean }[]; reasons: string[] }) =>
  `${d.intervention}|${d.halted}|${d.tripwires.map((t) => `${t.id}:${t.fired ? 1 : 0}`).join(',')}|${d.reasons.join(';')}`;

/** One trace at a time, in stream order. */
async function sequential(rt: EngineRuntime, s: { trace: Trace; at: number }[]): Promise<Decided> {
  const out: Decided = {};
  for (const { trace, at } of s) out[trace.trace_id] = view(await rt.deps.engine!.decide(trace, at, trace.trace_id));
  return out;
}

/** As the stage runs a chunk: each agent's traces in order, all agents at once (their Redis work shares rounds). */
async function lanes(rt: EngineRuntime, s: { trace: Trace; at: number }[], only?: Set<string>): Promise<Decided> {
  const byAgent = new Map<string, { trace: Trace; at: number }[]>();
  for (const x of s) if (!only || only.has(x.trace.agent_id)) byAgent.set(x.trace.agent_id, [...(byAgent.get(x.trace.agent_id) ?? []), x]);
  const out: Decided = {};
  await Promise.all(
    [...byAgent.values()].map(async (l) => {
      for (const { trace, at } of l) out[trace.trace_id] = view(await rt.deps.engine!.decide(trace, at, trace.trace_id));
    }),
  );
  return out;
}

const standalone = redisClient();
const prefixes: { cluster: boolean; prefix: string }[] = [];

/**
 * The runtime's keys are where its config put them: a cluster runtime's on all 3 masters and none on the single
 * Redis (its redis.url, so a runtime that dropped redis.cluster_nodes would decide just as well there); a
 * single-Redis runtime's the reverse.
 */
async function expectKeysOn(cluster: boolean, prefix: string): Promise<void> {
  const c = await clusterClient();
  try {
    const at = await placement(c, prefix);
    if (cluster) expect(at).toEqual({ masters: 3, standalone: 0 });
    else expect(at.masters === 0 && at.standalone > 0).toBe(true);
  } finally {
    c.disconnect();
  }
}
const fresh = (cluster: boolean) => {
  const prefix = uniqueRedisPrefix(cluster ? 'batched-cl' : 'batched');
  prefixes.push({ cluster, prefix });
  return prefix;
};

afterAll(async () => {
  const c = await clusterClient();
  // both places for every prefix: a runtime that wrote to the wrong one (the failure expectKeysOn reports) leaves nothing
  for (const p of prefixes) {
    await deleteClusterPrefix(c, p.prefix);
    await deleteRedisPrefix(standalone, p.prefix);
  }
  c.disconnect();
  standalone.disconnect();
});

describe('batched decision-path state = sequential evaluation', () => {
  for (const cluster of [false, true]) {
    it(`${cluster ? 'Redis Cluster' : 'one Redis'}: all agents' lanes at once decide exactly as one trace at a time`, async () => {
      const s = stream(cluster ? 77 : 76);
      const [pa, pb] = [fresh(cluster), fresh(cluster)];
      const a = await runtime(pa, cluster);
      const b = await runtime(pb, cluster);
      try {
        const seq = await sequential(a, s);
        const bat = await lanes(b, s);
        await expectKeysOn(cluster, pa);
        await expectKeysOn(cluster, pb);
        expect(Object.keys(bat)).toHaveLength(s.length);
        expect(bat).toEqual(seq);
        // the stream exercises every path: halts (later hit skipped), agent and kind limits, plain oks
        const kinds = new Set(Object.values(seq).map((v) => v.split('|')[0]));
        expect([...kinds].sort()).toEqual(['block', 'escalate', 'halt', 'ok']);
      } finally {
        await a.close();
        await b.close();
      }
    });
  }

  it('two engines on the cluster, each deciding half of the agents, decide as one engine does', async () => {
    const s = stream(78);
    const onePrefix = fresh(true);
    const one = await runtime(onePrefix, true);
    const sharedPrefix = fresh(true);
    const two = [await runtime(sharedPrefix, true), await runtime(sharedPrefix, true)];
    try {
      const single = await lanes(one, s);
      const halves = [new Set(AGENTS.filter((_, i) => i % 2 === 0)), new Set(AGENTS.filter((_, i) => i % 2 === 1))];
      const parts = await Promise.all(two.map((rt, i) => lanes(rt, s, halves[i])));
      expect({ ...parts[0], ...parts[1] }).toEqual(single);
      expect(Object.keys(parts[0]!).length).toBeGreaterThan(0);
      expect(Object.keys(parts[1]!).length).toBeGreaterThan(0);
      await expectKeysOn(true, onePrefix);
      await expectKeysOn(true, sharedPrefix);
    } finally {
      await one.close();
      for (const rt of two) await rt.close();
    }
  });
});
