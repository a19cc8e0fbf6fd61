/**
 * Acceptance (#6): a steward process holding debt and a pending remediation request is SIGKILLed and
 * a new one reads everything intact; then Redis itself (a private appendonly instance on a free port)
 * is SIGKILLed and restarted from its AOF, and the state is still there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { DEFAULT_TRUST_DEBT_CONFIG, MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import { uniqueRedisPrefix, waitFor } from '../setup/helpers.js';
import { freePort } from '../setup/private-redis.js';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const REDIS_SERVER = '/usr/bin/redis-server';

function startRedis(dir: string, port: number): ChildProcess {
  return spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--maxmemory-policy', 'noeviction', '--protected-mode', 'no'], {
    stdio: 'ignore',
  });
}

async function killed(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });
}

async function connect(port: number): Promise<Redis> {
  return waitFor(
    async () => {
      const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => undefined); // refused connections while the server starts are expected
      try {
        await r.connect();
        await r.ping();
        return r;
      } catch {
        r.disconnect();
        return undefined;
      }
    },
    { timeoutMs: 15_000, message: `redis on ${port}` },
  );
}

describe('trust debt survives steward and Redis restarts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'td-restart-'));
  const procs: ChildProcess[] = [];
  afterAll(async () => {
    for (const p of procs) await killed(p);
    rmSync(dir, { recursive: true, force: true });
  });

  it('debt and pending remediation requests are intact after SIGKILL of the steward and of Redis', async () => {
    const port = await freePort();
    const prefix = uniqueRedisPrefix('td-restart');
    procs.push(startRedis(dir, port));
    const r1 = await connect(port);

    // a steward process applies debt + a remediation request, then is killed without any shutdown
    const worker = spawn(process.execPath, ['--import', 'tsx', WORKER, 'hold', `redis://127.0.0.1:${port}`, prefix], { stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(worker);
    let out = '';
    worker.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const ready = await waitFor(() => /^ready (.*)$/m.exec(out)?.[1], { timeoutMs: 30_000, message: 'worker ready' });
    const held = JSON.parse(ready) as { after: number; level: string };
    await killed(worker);

    // the expected values, computed independently by the in-memory store
    const cfg = DEFAULT_TRUST_DEBT_CONFIG;
    const t0 = Date.UTC(2026, 0, 1);
    const mem = new MemoryTrustDebtStore();
    await mem.apply({ eventId: 'h-1', tenant: 'hold', agentId: 'x', atMs: t0, kind: 'intervention', intervention: 'block', severity: 'critical' }, cfg);
    const want = await mem.apply({ eventId: 'h-2', tenant: 'hold', agentId: 'x', atMs: t0 + 3_600_000, kind: 'intervention', intervention: 'halt' }, cfg);
    expect(held.after).toBe(want.after);

    const check = async (r: Redis) => {
      const store = new RedisTrustDebtStore(r, { prefix });
      expect(await store.current('hold', 'x', t0 + 3_600_000, cfg)).toEqual({ debt: want.after, level: 're_tiering_review' });
      const pending = await store.pendingRemediations('hold');
      expect(pending).toEqual([{ requestId: 'hold-rq-1', tenant: 'hold', agentId: 'x', reason: 'retrained', atMs: t0 + 7_200_000, status: 'pending' }]);
      const redelivered = await store.apply({ eventId: 'h-2', tenant: 'hold', agentId: 'x', atMs: t0 + 3_600_000, kind: 'intervention', intervention: 'halt' }, cfg);
      expect(redelivered.duplicate).toBe(true);
      expect(redelivered.after).toBe(want.after);
    };
    await check(r1);
    r1.disconnect();

    // now Redis itself crashes (SIGKILL, no SAVE) and comes back from the append-only file
    await killed(procs[0]!);
    procs.push(startRedis(dir, port));
    const r2 = await connect(port);
    await check(r2);

    // the request can still be decided after both restarts, and the credit lands once
    const store = new RedisTrustDebtStore(r2, { prefix });
    const g = await store.decideRemediation('hold-rq-1', 'grant', { reviewer: 'alice', atMs: t0 + 7_200_000 }, cfg);
    expect(g.change?.after).toBeCloseTo(want.after * 0.95 ** (1 / 24) - 0.1, 12);
    expect(await store.pendingRemediations()).toEqual([]);
    r2.disconnect();
  }, 90_000);
});
