// /readyz follows Redis: a `steward run` process (tripwire stage, its Redis a private redis-server) is ready once
// its stage joined the group and Redis is connected, not ready while Redis is down, and ready again after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startStewardProcess } from '../../../src/process/steward-process.js';
import { quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { waitFor } from '../setup/helpers.js';
import { freePort, pingable, startPrivateRedis } from '../setup/private-redis.js';

const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));

describe('readiness (real Kafka, private Redis)', () => {
  it('is not ready while Redis is down, and ready again once it is back', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'steward-ready-'));
    let redis = startPrivateRedis(port, dir);
    try {
      await waitFor(() => pingable(port), { timeoutMs: 15_000, message: 'private redis' });
      await withPipelineEnv('cli-ready', async ({ cfg }) => {
        const proc = await startStewardProcess(
          { ...cfg, redis: { ...cfg.redis, url: `redis://127.0.0.1:${port}` }, blueprints: { ...cfg.blueprints, dir: BLUEPRINTS, watch: false }, observability: { ...cfg.observability, enabled: false } },
          ['tripwire'],
          quietLogger(),
        );
        try {
          await waitFor(() => proc.isReady(), { timeoutMs: 30_000, message: 'ready' });
          redis.kill('SIGKILL');
          await waitFor(() => !proc.isReady(), { timeoutMs: 15_000, message: 'not ready without Redis' });
          redis = startPrivateRedis(port, dir);
          await waitFor(() => proc.isReady(), { timeoutMs: 30_000, message: 'ready again' });
          expect(proc.isReady()).toBe(true);
        } finally {
          await proc.stop();
        }
      });
    } finally {
      redis.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
