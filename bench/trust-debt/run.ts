/**
 * Trust-debt updates per second through ioredis (auto-pipelining, many applies in flight) against the
 * real Redis at REDIS_URL. Baseline in the same run: plain HINCRBYFLOAT with the same pipelining and
 * concurrency, i.e. the cheapest possible "add a number to an agent's hash" — the ratio shows what
 * atomic decay + dedup + crossings cost on top. Prints `trust_debt_updates_per_sec=<n>` last.
 */
import { randomBytes } from 'node:crypto';
import { createRedis } from '../../src/adapters/redis/client.js';
import { RedisTrustDebtStore } from '../../src/adapters/redis/trust-debt-store.js';
import { DEFAULT_TRUST_DEBT_CONFIG, type TrustDebtEvent } from '../../src/engine/trust-debt/index.js';
import type { Intervention } from '../../src/engine/types.js';

const N = Number(process.env.BENCH_TD_EVENTS ?? 60_000);
const AGENTS = Number(process.env.BENCH_TD_AGENTS ?? 1_000);
const IN_FLIGHT = Number(process.env.BENCH_TD_IN_FLIGHT ?? 512);
const url = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:16379';
const prefix = `bench-td-${randomBytes(4).toString('hex')}:`;
const redis = createRedis(url);

async function pump(n: number, one: (i: number) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < n) await one(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return n / ((performance.now() - start) / 1000);
}

async function cleanup(): Promise<void> {
  let cursor = '0';
  do {
    const [c, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = c;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

const KINDS: Intervention[] = ['ok', 'ok', 'nudge', 'flag', 'block', 'escalate'];
const t0 = Date.UTC(2026, 0, 1);
const events: TrustDebtEvent[] = Array.from({ length: N }, (_, i) => ({
  eventId: `b-${i}`,
  tenant: 'bench',
  agentId: `agent-${i % AGENTS}`,
  atMs: t0 + Math.floor(i / AGENTS) * 60_000,
  kind: 'intervention',
  intervention: KINDS[i % KINDS.length]!,
}));

async function main(): Promise<void> {
  await redis.ping();
  const store = new RedisTrustDebtStore(redis, { prefix });
  const cfg = DEFAULT_TRUST_DEBT_CONFIG;
  // warm-up: script load, JIT, connections
  await pump(2_000, (i) => store.apply({ ...events[i]!, eventId: `w-${i}` }, cfg));
  await pump(2_000, (i) => redis.hincrbyfloat(`${prefix}warm:${i % AGENTS}`, 'd', '0.05'));

  const baseline = await pump(N, (i) => redis.hincrbyfloat(`${prefix}base:{bench:agent-${i % AGENTS}}`, 'd', '0.05'));
  const td = await pump(N, (i) => store.apply(events[i]!, cfg));
  const dup = await pump(N, (i) => store.apply(events[i]!, cfg)); // every event redelivered once
  await cleanup();
  redis.disconnect();

  console.log(`events=${N} agents=${AGENTS} in_flight=${IN_FLIGHT} redis=${url}`);
  console.log(`baseline_hincrbyfloat_per_sec=${Math.round(baseline)}`);
  console.log(`trust_debt_duplicate_redeliveries_per_sec=${Math.round(dup)}`);
  console.log(`ratio_trust_debt_vs_baseline=${(td / baseline).toFixed(3)}`);
  console.log(`trust_debt_updates_per_sec=${Math.round(td)}`);
}

main().catch(async (e: unknown) => {
  console.error(e);
  await cleanup().catch(() => undefined);
  process.exit(1);
});
