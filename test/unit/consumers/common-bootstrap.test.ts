import { describe, expect, it } from 'vitest';
import { bootstrapEngine } from '../../../src/consumers/common-bootstrap.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { createLogger } from '../../../src/logger.js';

const logger = createLogger({ level: 'silent' });
const KEY = 'MC4CAQAwBQYDK2VwBCIEIBs2QmZoSupErSeCrEtKeYmAtErIaLnotReallyPemXyZ';

describe('bootstrapEngine startup errors', () => {
  it('never echoes a signing key that is neither PEM nor a file', async () => {
    const cfg = buildConfig({ blueprints: { dir: 'blueprints', watch: false } }, { STEWARD_SIGNING_KEY: KEY });
    const err = (await bootstrapEngine(cfg, ['scorer'], logger).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(`signing key (signing.key / STEWARD_SIGNING_KEY) is not PEM and not a readable file (value hidden, ${KEY.length} chars)`);
    expect(err.message).not.toContain(KEY.slice(0, 10));
  });

  it('an unreachable Redis fails with its URL minus the password, and closes the client', async () => {
    const cfg = buildConfig({ blueprints: { dir: 'blueprints', watch: false } }, { REDIS_URL: 'redis://:SuperSecretPw@127.0.0.1:1' });
    const t0 = Date.now();
    const err = (await bootstrapEngine(cfg, ['trust-debt'], logger, undefined, { redisWaitMs: 500 }).catch((e: unknown) => e)) as Error & { code: string };
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(err.code).toBe('STEWARD_STATE_UNAVAILABLE');
    expect(err.message).toMatch(/^redis not reachable at redis:\/\/:\*\*\*@127\.0\.0\.1:1 after 0\.5 s/);
    expect(err.message).not.toContain('SuperSecretPw');
  });
});
