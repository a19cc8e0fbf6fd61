/**
 * CPU profile of the HTTP ingress's batch path (docs/http.md "Benchmark"): the ingress alone in this process
 * (no tripwire stage), the agents' load from a child process (load.ts), a V8 CPU profile of this process written
 * to BENCH_PROFILE_OUT (default ingress.cpuprofile) plus its CPU time per ingested trace, and Redis's (INFO used_cpu of
 * the whole server: other clients of a shared Redis count too).
 * `flock /tmp/h/bench.lock npx tsx bench/ingress/profile.ts` (BENCH_INGEST_N traces, default 40 000).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { benchProcessEnv } from '../sink/services-env.js';
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../src/adapters/kafka/topics.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { startHttpIngress } from '../../src/process/http-ingress.js';
import { apiKeyHash } from '../../src/adapters/http/ingress-auth.js';
import { createLogger } from '../../src/logger.js';
import { createRedis } from '../../src/adapters/redis/client.js';
import { dropKeys } from './redis-keys.js';
import { batchIdOf, ingestEvents, pool } from './payloads.js';
import { child } from './child.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const N = Number(process.env.BENCH_INGEST_N ?? 40_000);
const AGENT = 'http-p0';
const KEY = 'profile-key';

// No warm-up traces inside the measured window (main() warms up with a run of its own).
const loadChild = (args: string[]) => child<{ rate: number; refused: number }>('./load.ts', args, { BENCH_LOAD_WARM: '0' });

async function inProcess(url: string, n: number, tag: string): Promise<{ rate: number; refused: number }> {
  let refused = 0;
  const t0 = performance.now();
  await pool(n / 100, 4, async (b) => {
    const r = await fetch(`${url}/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'x-idempotency-key': batchIdOf(b, tag) }, body: JSON.stringify({ batch_id: batchIdOf(b, tag), events: ingestEvents(b, 100, tag), event_count: 100 }) });
    if (r.status !== 200) refused++;
    await r.arrayBuffer();
  });
  return { rate: n / ((performance.now() - t0) / 1000), refused };
}

async function main(): Promise<void> {
  const prefix = `bench-httpprof-${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), 'steward-bench-httpprof-'));
  writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: ${AGENT}\n    api_keys: ["${apiKeyHash(KEY)}"]\n`);
  const cfg = buildConfig(
    {
      topics: { prefix, partitions: 6, reply_partitions: 4 },
      consumer: { group_prefix: prefix },
      redis: { key_prefix: `${prefix}:` },
      observability: { enabled: false },
      blueprints: { agents: join(dir, 'agents.yaml'), watch: false },
      http: { enabled: true, port: 0, limits: { rate_per_second: 1_000_000 }, idempotency: { dedupe: process.env.BENCH_INGEST_DEDUPE === 'pipeline' ? 'pipeline' : 'ingress' } },
    },
    benchProcessEnv(),
  );
  const names = topicNames(prefix);
  const admin = await new KafkaAdapter(cfg.kafka).admin();
  await createTopics(admin, names, { partitions: 6, replicationFactor: 1, replyPartitions: 4, replyRetentionMs: 600_000 });
  const ing = await startHttpIngress(cfg, createLogger({ level: 'silent' }));
  const url = `http://127.0.0.1:${ing.port}/v1`;
  const session = new Session();
  session.connect();
  const redis = createRedis(cfg.redis.url);
  const redisCpu = async () => {
    const text = await redis.info('cpu');
    return ['used_cpu_user', 'used_cpu_sys'].reduce((a, k) => a + Number(new RegExp(`${k}:(\\S+)`).exec(text)?.[1] ?? NaN), 0);
  };
  try {
    // Warmed as bench:ingress warms its servers (BENCH_INGEST_WARM): a fresh ingress runs cold code for its first ~300 000 traces.
    await loadChild(['http', url, process.env.BENCH_INGEST_WARM ?? '200000', '100', '4', KEY, `${prefix}-warm`]);
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    const cpu0 = process.cpuUsage();
    const r0 = await redisCpu();
    // BENCH_PROFILE_IN_PROCESS=1: the agents' requests from this process too, as bench:ingress's headline ratio runs them.
    const r = process.env.BENCH_PROFILE_IN_PROCESS === '1' ? await inProcess(url, N, `${prefix}-p`) : await loadChild(['http', url, String(N), '100', '4', KEY, `${prefix}-p`]);
    const cpu = process.cpuUsage(cpu0);
    const rc = (await redisCpu()) - r0;
    const { profile } = await session.post('Profiler.stop');
    const out = process.env.BENCH_PROFILE_OUT ?? 'ingress.cpuprofile';
    writeFileSync(out, JSON.stringify(profile));
    console.log(`http batch ingest ${r.rate.toFixed(0)} traces/s, refused ${r.refused}; ingress CPU ${(((cpu.user + cpu.system) / N)).toFixed(1)} us per trace (child start-up included); Redis ${((rc * 1e6) / N).toFixed(1)} us per trace; load ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}; profile: ${out}`);
  } finally {
    session.disconnect();
    redis.disconnect();
    await ing.close();
    await admin.deleteTopics(Object.values(names)).catch(() => undefined);
    await dropKeys(cfg.redis.url, `${prefix}:`).catch(() => undefined);
    await admin.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
