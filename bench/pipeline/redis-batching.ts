// bench:redis-batching (issue #23 part A, docs/pipeline.md "Batched state"): the engine alone, in-process, deciding
// the bench:pipeline traffic (30 agents, each agent's traces in order, all agents at once — as the tripwire stage
// runs a chunk) with the decision-path Redis work batched (RedisStateRounds: one script call per hash slot and
// turn) and unbatched (one script call per rate hit or trust-debt read), after a discarded warm-up, alternating B U U B in one run, fresh
// key prefixes each time. BENCH_REDIS_CLUSTER=1 runs it on the opt-in cluster profile too
// (scripts/services.sh up redis-cluster). Prints decide/s per run and `redis_batched_vs_unbatched=` (mean ratio).
import { execFileSync } from 'node:child_process';
import { benchProcessEnv } from '../sink/services-env.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { bootstrapEngine } from '../../src/process/engine-runtime.js';
import { createLogger } from '../../src/logger.js';
import { demoTrace } from '../../src/demo/agents.js';
import type { Trace } from '../../src/engine/types.js';
import { scanNodes } from '../../src/adapters/redis/client.js';
import { BENCH_AGENTS } from './engine.js';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** bench:pipeline's 30 agents (engine.ts), registered the same way. */
function benchAgentsFile(): string {
  const kind = { 'trader-1': ['ACL-3', '[execute_trade, market_data_api]', '[production]'], 'coder-1': ['ACL-2', '[database_query, shell]', '[staging]'], 'support-1': ['ACL-2', '[issue_refund, send_email]', '[production]'] } as const;
  const file = join(mkdtempSync(join(tmpdir(), 'steward-rbench-')), 'agents.yaml');
  writeFileSync(file, ['agents:', ...BENCH_AGENTS.map((a) => `  - { id: ${a.id}, tenant: bench, tier: ${kind[a.type][0]}, tools: ${kind[a.type][1]}, domains: ${kind[a.type][2]} }`)].join('\n') + '\n');
  return file;
}

const N = Number(process.env.BENCH_ENGINE_N ?? 6000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RUN = Date.now().toString(36);

function lanesOf(offset: number): Trace[][] {
  const lanes = new Map<string, Trace[]>();
  for (let i = 0; i < N; i++) {
    const a = BENCH_AGENTS[(offset + i) % BENCH_AGENTS.length]!;
    const t = demoTrace(a.type, offset + i, 3, Date.UTC(2026, 0, 1) + (offset + i) * 60_000, `rb${RUN}`, a.id);
    lanes.set(t.agent_id, [...(lanes.get(t.agent_id) ?? []), t]);
  }
  return [...lanes.values()];
}

/** Operations per script call of the batched runs (the unbatched ones make one call per operation). */
const opsPerCall: number[] = [];
/** This process's CPU µs per decision (less disturbed by other load than the rate), batched / unbatched runs. */
const cpuB: number[] = [];
const cpuU: number[] = [];

async function once(cluster: string[] | undefined, batch: boolean, run: number): Promise<number> {
  const env = benchProcessEnv();
  const prefix = `rbench-${RUN}-${run}-${batch ? 'b' : 'u'}:`;
  const cfg = buildConfig(
    {
      blueprints: { dir: fileURLToPath(new URL('../../blueprints', import.meta.url)), agents: benchAgentsFile(), watch: false },
      redis: { key_prefix: prefix, ...(cluster ? { cluster_nodes: cluster } : {}) },
      limits: { max_event_time_skew_ms: null },
      observability: { enabled: false },
    },
    env,
  );
  const rt = await bootstrapEngine(cfg, ['tripwire'], createLogger({ level: 'silent' }), undefined, { stateRounds: { batch } });
  const lanes = lanesOf(run * 1_000_000);
  try {
    // warm-up: compile caches, script load
    await Promise.all(lanes.map((l) => rt.deps.engine!.decide(l[0]!, Date.parse(l[0]!.timestamp))));
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await Promise.all(lanes.map(async (l) => { for (const t of l.slice(1)) await rt.deps.engine!.decide(t, Date.parse(t.timestamp)); }));
    const rate = (N - lanes.length) / ((performance.now() - t0) / 1000);
    const c = process.cpuUsage(c0);
    (batch ? cpuB : cpuU).push((c.user + c.system) / (N - lanes.length));
    const r = rt.stateRounds!;
    if (batch) opsPerCall.push(r.ops / Math.max(1, r.calls));
    return rate;
  } finally {
    const r = rt.redis!;
    for (const node of scanNodes(r)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        for (const k of keys) await node.unlink(k);
      } while (cursor !== '0');
    }
    await rt.close();
  }
}

async function compare(label: string, cluster: string[] | undefined): Promise<void> {
  const b: number[] = [];
  const u: number[] = [];
  opsPerCall.length = 0;
  cpuB.length = 0;
  cpuU.length = 0;
  // A discarded warm-up (JIT, connections, script cache), then B U U B ...: neither side always runs first.
  await once(cluster, true, 99);
  opsPerCall.length = 0;
  cpuB.length = 0;
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      b.push(await once(cluster, true, 2 * i));
      u.push(await once(cluster, false, 2 * i + 1));
    } else {
      u.push(await once(cluster, false, 2 * i + 1));
      b.push(await once(cluster, true, 2 * i));
    }
  }
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
  console.log(`${label} engine_decide_per_s batched=${b.map((x) => x.toFixed(0)).join('/')} unbatched=${u.map((x) => x.toFixed(0)).join('/')} (${N} traces, ${BENCH_AGENTS.length} agents, batched: ${(opsPerCall.reduce((x, y) => x + y, 0) / Math.max(1, opsPerCall.length)).toFixed(1)} operations per script call, load ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`);
  console.log(`${label} cpu_us_per_decision batched=${cpuB.map((x) => x.toFixed(1)).join('/')} unbatched=${cpuU.map((x) => x.toFixed(1)).join('/')}`);
  console.log(`${label === 'redis' ? '' : `${label}_`}redis_batched_vs_unbatched=${(mean(b) / mean(u)).toFixed(3)} ${label === 'redis' ? '' : `${label}_`}redis_batched_cpu_vs_unbatched=${(mean(cpuB) / mean(cpuU)).toFixed(3)}`);
}

await compare('redis', undefined);
if (process.env.BENCH_REDIS_CLUSTER === '1') {
  const out = execFileSync('bash', ['scripts/services.sh', 'env', 'redis-cluster'], { encoding: 'utf8' });
  const nodes = /REDIS_CLUSTER_NODES=(\S+)/.exec(out)?.[1]?.split(',');
  await compare('cluster', nodes);
}
