/**
 * Where the deduplication costs (docs/http.md "Idempotency", D52): the tripwire stage's ingest marks (one script call
 * per key, a chunk of 100 in one round) against the ingress's batch claims (D39/D48: claim, then finalise, per batch
 * of 100 in the acgp client's key form), for the same keys on the same Redis, alternating in rounds. Per trace: this
 * process's CPU and Redis's (INFO cpu: other clients of a shared Redis count too); then the same keys again (a
 * retried batch: every key a duplicate).
 * Prints `marks_vs_claims_redis_cpu=` and `marks_vs_claims_client_cpu=` (medians of the rounds; fresh keys).
 * `flock /tmp/h/bench.lock npx tsx bench/ingress/marks.ts` (BENCH_MARKS_N traces a round, default 20 000; BENCH_ROUNDS, default 5).
 */
import { benchProcessEnv } from '../sink/services-env.js';
import { createRedis } from '../../src/adapters/redis/client.js';
import { RedisIngestMarks, type IngestRecord } from '../../src/adapters/redis/ingest-marks.js';
import { redisIdempotencyClaims } from '../../src/adapters/redis/idempotency-claims.js';
import { redisCpuUs } from '../proc-cpu.js';
import { dropKeys } from './redis-keys.js';

const N = Number(process.env.BENCH_MARKS_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BATCH = 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const url = benchProcessEnv().REDIS_URL ?? 'redis://127.0.0.1:16379';
  const prefix = `bench-marks-${Date.now().toString(36)}:`;
  // As deployed: the stage's marks on the engine's auto-pipelined connection, the claims on their own without it.
  const stageRedis = createRedis(url, { maxRetriesPerRequest: 1 });
  const claimsRedis = createRedis(url, { maxRetriesPerRequest: 1, enableAutoPipelining: false });
  const info = createRedis(url, { maxRetriesPerRequest: 1 });
  const marks = new RedisIngestMarks(stageRedis, { prefix, ttlSeconds: 3600 });
  const claims = redisIdempotencyClaims(claimsRedis, { prefix, windowSeconds: 3600, pendingStaleMs: 40_000, groups: true, finaliseRideMs: 0 });
  /** CPU µs per trace of this process and of Redis over `run`. */
  const timed = async (run: () => Promise<void>) => {
    const r0 = await redisCpuUs(() => info.info('cpu'));
    const c0 = process.cpuUsage();
    await run();
    const c = process.cpuUsage(c0);
    const r = (await redisCpuUs(() => info.info('cpu'))) - r0;
    return { client: (c.user + c.system) / N, redis: r / N };
  };
  const keyOf = (round: string, b: number, i: number) => `${round}-b${b}_t${i}`;
  const viaMarks = (round: string) =>
    timed(async () => {
      for (let b = 0; b < N / BATCH; b++) {
        const recs: IngestRecord[] = [];
        for (let i = 0; i < BATCH; i++) recs.push({ agentId: 'bench-agent', key: keyOf(round, b, i), topic: 'bench.traces', partition: 0, offset: String(b * BATCH + i) });
        await marks.firsts(recs);
      }
    });
  const viaClaims = (round: string) =>
    timed(async () => {
      // 4 batches in flight, as the ingress serves them; each claimed, then finalised as its send was acknowledged.
      let next = 0;
      const worker = async () => {
        for (let b = next++; b < N / BATCH; b = next++) {
          const keys = Array.from({ length: BATCH }, (_, i) => keyOf(round, b, i));
          const c = await claims.claim('bench-agent', keys, undefined, `${round}-b${b}`);
          await claims.finalise('bench-agent', keys.filter((_, i) => c.states[i] === 'claimed'), c.id, `${round}-b${b}`);
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
    });
  const rows: { marks: Awaited<ReturnType<typeof timed>>; claims: Awaited<ReturnType<typeof timed>>; marksAgain: Awaited<ReturnType<typeof timed>>; claimsAgain: Awaited<ReturnType<typeof timed>> }[] = [];
  try {
    await viaMarks('warm');
    await viaClaims('warm-c');
    for (let r = 0; r < ROUNDS; r++) {
      const m = await viaMarks(`m${r}`);
      const c = await viaClaims(`c${r}`);
      rows.push({ marks: m, claims: c, marksAgain: await viaMarks(`m${r}`), claimsAgain: await viaClaims(`c${r}`) });
    }
    const f = (x: { client: number; redis: number }) => `client ${x.client.toFixed(1)} / redis ${x.redis.toFixed(1)}`;
    for (const r of rows) console.log(`round: marks ${f(r.marks)}; claims ${f(r.claims)}; retried: marks ${f(r.marksAgain)}; claims ${f(r.claimsAgain)} (CPU µs per trace)`);
    console.log(`marks_vs_claims_retried_redis_cpu=${median(rows.map((r) => r.marksAgain.redis / r.claimsAgain.redis)).toFixed(3)}`);
    console.log(`marks_vs_claims_client_cpu=${median(rows.map((r) => r.marks.client / r.claims.client)).toFixed(3)}`);
    console.log(`marks_vs_claims_redis_cpu=${median(rows.map((r) => r.marks.redis / r.claims.redis)).toFixed(3)}`);
  } finally {
    await dropKeys(url, prefix).catch(() => undefined);
    await claims.close?.();
    stageRedis.disconnect();
    claimsRedis.disconnect();
    info.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
