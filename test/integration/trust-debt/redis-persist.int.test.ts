// Issue #22 item 11: scripts/services.sh runs Redis with an append-only file when STEWARD_REDIS_PERSIST=1
// (demo/production profile): state written before a restart is there after it. Without it (the test profile)
// Redis keeps nothing. A separate Redis on its own port and directory, started and stopped by the script.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../../..');

function services(args: string[], env: Record<string, string>): void {
  execFileSync('bash', [join(ROOT, 'scripts/services.sh'), ...args], { env: { ...process.env, ...env }, stdio: 'pipe', timeout: 60_000 });
}

async function roundTrip(persist: boolean): Promise<{ appendonly: string; survived: string | null }> {
  const dir = mkdtempSync(join(tmpdir(), 'steward-redis-persist-'));
  const port = String(20_000 + Math.floor(Math.random() * 20_000));
  const env = { STEWARD_SERVICES_DIR: dir, STEWARD_REDIS_PORT: port, STEWARD_REDIS_PERSIST: persist ? '1' : '0' };
  try {
    services(['up', 'redis'], env);
    let r = new Redis({ port: Number(port), host: '127.0.0.1', lazyConnect: true });
    await r.connect();
    const appendonly = ((await r.config('GET', 'appendonly')) as string[])[1]!;
    await r.set('td:debt', '0.42');
    r.disconnect();
    services(['restart', 'redis'], env);
    r = new Redis({ port: Number(port), host: '127.0.0.1', lazyConnect: true });
    await r.connect();
    const survived = await r.get('td:debt');
    r.disconnect();
    return { appendonly, survived };
  } finally {
    try {
      services(['down', 'redis'], env);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

describe('scripts/services.sh Redis durability', () => {
  it('STEWARD_REDIS_PERSIST=1: append-only file on, a write survives a restart', { timeout: 120_000 }, async () => {
    expect(await roundTrip(true)).toEqual({ appendonly: 'yes', survived: '0.42' });
  });

  it('the test profile (default): no persistence, nothing survives', { timeout: 120_000 }, async () => {
    expect(await roundTrip(false)).toEqual({ appendonly: 'no', survived: null });
  });
});
