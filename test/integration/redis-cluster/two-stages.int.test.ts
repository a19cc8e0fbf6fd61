/**
 * Issue #23 part A: two Steward tripwire stages (one consumer group, the traces topic's 3 partitions split
 * between them) on the 3-master Redis Cluster give every trace the decision one stage alone gives, on real
 * Kafka. The stream's decisions depend on Redis state (rate limits per agent and per trace-chosen key).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bootstrapEngine, type EngineRuntime } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import type { StewardEngine } from '../../../src/engine/steward-engine.js';
import { Collector, quietLogger, withPipelineEnv, type PipelineEnv } from '../pipeline/harness.js';
import { uniqueRedisPrefix, waitFor } from '../setup/helpers.js';
import { clusterClient, clusterNodes, deleteClusterPrefix, placement } from './cluster.js';
import { dir, stream, TEST_TIERS } from './fixtures.js';

const raw = (keyPrefix: string) => ({
  blueprints: { dir: join(dir, 'bp'), agents: join(dir, 'agents.yaml'), watch: false },
  redis: { key_prefix: keyPrefix, cluster_nodes: clusterNodes() },
  engine: { tiers: TEST_TIERS },
});

/** Runs `instances` tripwire stages over the stream; returns trace_id → decision and how many each stage decided. */
async function decideAll(env: PipelineEnv, instances: number): Promise<{ decided: Map<string, string>; perInstance: number[]; keysAt: { masters: number; standalone: number } }> {
  const { cfg, topics, adapter } = env;
  const s = stream(91);
  const logger = quietLogger();
  const runtimes: EngineRuntime[] = [];
  const pipes: { stop(): Promise<void>; isReady(): boolean }[] = [];
  const perInstance = new Array<number>(instances).fill(0);
  const out = await new Collector(adapter, [topics.decisions, topics.dlq]).start();
  const producer = await adapter.producer();
  try {
    for (let i = 0; i < instances; i++) {
      const rt = await bootstrapEngine(cfg, ['tripwire'], logger);
      runtimes.push(rt);
      const engine = rt.deps.engine!;
      const counting = Object.create(engine) as StewardEngine;
      counting.decide = (...a: Parameters<StewardEngine['decide']>) => {
        perInstance[i]!++;
        return engine.decide(...a);
      };
      pipes.push(await startPipeline(cfg, ['tripwire'], { ...rt.deps, engine: counting }, { logger }));
    }
    await waitFor(() => pipes.every((p) => p.isReady()), { timeoutMs: 60_000, message: 'stages joined' });
    // Both members hold partitions before the traffic starts (a later join would move partitions mid-stream).
    for (let i = 0; i < s.length; i += 60) await producer.send([{ topic: topics.traces, messages: s.slice(i, i + 60).map(({ trace }) => ({ key: trace.agent_id, value: JSON.stringify(trace) })) }]);
    await waitFor(() => out.byId(topics.decisions).size >= s.length, { timeoutMs: 120_000, message: `${s.length} decisions` });
    expect(out.on(topics.dlq)).toHaveLength(0);
    // Where the stages' rate windows went, read while they live (redis.url is the single Redis: see placement()).
    const c = await clusterClient();
    const keysAt = await placement(c, cfg.redis.keyPrefix).finally(() => c.disconnect());
    const decided = new Map<string, string>();
    for (const [id, d] of out.byId(topics.decisions)) decided.set(id, `${d.intervention}|${(d.tripwires as { id: string; fired: boolean }[]).map((t) => `${t.id}:${t.fired ? 1 : 0}`).join(',')}`);
    return { decided, perInstance, keysAt };
  } finally {
    for (const p of pipes) await p.stop();
    for (const rt of runtimes) await rt.close();
    await producer.disconnect();
    await out.stop();
  }
}

describe('two tripwire stages on one Redis Cluster', () => {
  it('decide every trace as one stage does', async () => {
    const prefixes = [uniqueRedisPrefix('two-cl'), uniqueRedisPrefix('one-cl')];
    try {
      const two = await withPipelineEnv('cl-two', (env) => decideAll(env, 2), raw(prefixes[0]!));
      const one = await withPipelineEnv('cl-one', (env) => decideAll(env, 1), raw(prefixes[1]!));
      expect(two.keysAt).toEqual({ masters: 3, standalone: 0 });
      expect(one.keysAt).toEqual({ masters: 3, standalone: 0 });
      expect(two.perInstance.every((n) => n > 0)).toBe(true);
      expect(two.decided.size).toBe(one.decided.size);
      expect(Object.fromEntries(two.decided)).toEqual(Object.fromEntries(one.decided));
      const kinds = new Set([...one.decided.values()].map((v) => v.split('|')[0]));
      expect(kinds.size).toBeGreaterThanOrEqual(3);
    } finally {
      const c = await clusterClient();
      for (const p of prefixes) await deleteClusterPrefix(c, p);
      c.disconnect();
    }
  });
});
