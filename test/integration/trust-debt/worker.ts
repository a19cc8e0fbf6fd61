/**
 * A separate OS process for the trust-debt acceptance tests.
 *   apply MODE: node --import tsx worker.ts apply REDIS_URL PREFIX SEED TOTAL DUP AGENTS PARTIES INFLIGHT JITTER_SEED
 *     applies the stream (up to INFLIGHT applies in flight, sent in order), prints one JSON summary line.
 *   hold MODE:  node --import tsx worker.ts hold REDIS_URL PREFIX
 *     applies a fixed history + a pending remediation request, prints `ready <json>`, then waits to be killed.
 */
import { createRedis } from '../../../src/adapters/redis/client.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { type TrustDebtChange } from '../../../src/engine/trust-debt/index.js';
import { STREAM_CFG, eventStream } from './events.js';

const [mode, url, prefix, ...rest] = process.argv.slice(2);
const redis = createRedis(url);
const store = new RedisTrustDebtStore(redis, { prefix: prefix! });
const cfg = STREAM_CFG;

async function applyMode(): Promise<void> {
  const [seed, total, dup, agents, parties, inflight, jitter] = rest.map(Number) as [number, number, number, number, number, number, number];
  // Each process pauses at its own pseudo-random points so the lead changes hands many times.
  let js = jitter >>> 0;
  const rnd = () => ((js = (Math.imul(js, 1664525) + 1013904223) >>> 0) / 4294967296);
  const events = eventStream(seed, total, dup, agents);
  // start barrier: every process starts applying only when all are connected (startup time varies a lot here)
  const barrier = `${prefix}barrier`;
  await redis.incr(barrier);
  const deadline = Date.now() + 30_000;
  while (Number(await redis.get(barrier)) < parties) {
    if (Date.now() > deadline) throw new Error('start barrier timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
  let applied = 0;
  let duplicates = 0;
  const inFlight = new Set<Promise<void>>();
  for (const ev of events) {
    const p: Promise<void> = store.apply(ev, cfg).then((c: TrustDebtChange) => {
      if (c.duplicate) duplicates++;
      else applied++;
      inFlight.delete(p);
    });
    inFlight.add(p);
    if (inFlight.size >= inflight) await Promise.race(inFlight);
    if (jitter && rnd() < 0.01) await new Promise((r) => setTimeout(r, Math.floor(rnd() * 25)));
  }
  await Promise.all(inFlight);
  process.stdout.write(JSON.stringify({ applied, duplicates }) + '\n');
}

async function holdMode(): Promise<void> {
  const t0 = Date.UTC(2026, 0, 1);
  await store.apply({ eventId: 'h-1', tenant: 'hold', agentId: 'x', atMs: t0, kind: 'intervention', intervention: 'block', severity: 'critical' }, cfg);
  const last = await store.apply({ eventId: 'h-2', tenant: 'hold', agentId: 'x', atMs: t0 + 3_600_000, kind: 'intervention', intervention: 'halt' }, cfg);
  const req = await store.requestRemediation('hold', 'x', { requestId: 'hold-rq-1', reason: 'retrained', atMs: t0 + 7_200_000 }, cfg);
  process.stdout.write(`ready ${JSON.stringify({ after: last.after, level: last.level, request: req })}\n`);
  await new Promise(() => undefined);
}

(mode === 'hold' ? holdMode() : applyMode()).then(
  () => {
    redis.disconnect();
  },
  (e: unknown) => {
    process.stderr.write(`worker failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
