import { describe, expect, it } from 'vitest';
import { bootstrapEngine, resilientTrustDebt } from '../../../src/process/engine-runtime.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import type { TrustDebtStore } from '../../../src/engine/trust-debt/store.js';
import { StewardError } from '../../../src/errors.js';
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

  it('a PEM that is not a usable key fails before anything opens, naming the setting, not echoing the value', async () => {
    const bad = '-----BEGIN PRIVATE KEY-----\\nMC4CAQAwBQYDK2VwBCIEIBs2QmZo\\n-----END PRIVATE KEY-----\\n';
    // an unreachable Redis: reaching it would time out instead of failing on the key
    const cfg = buildConfig({ blueprints: { dir: 'blueprints', watch: false } }, { STEWARD_SIGNING_KEY: bad, REDIS_URL: 'redis://127.0.0.1:1' });
    const err = (await bootstrapEngine(cfg, ['scorer'], logger, undefined, { redisWaitMs: 60_000 }).catch((e: unknown) => e)) as StewardError;
    expect(err.code).toBe('STEWARD_CONFIG');
    expect(err.message).toMatch(/^signing key \(signing.key \/ STEWARD_SIGNING_KEY\) is not a usable Ed25519 PEM private key: /);
    expect(err.message).not.toContain('MC4CAQ');
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

describe('resilientTrustDebt (the tripwire stage\'s trust-debt read while Redis is down)', () => {
  it('uses the last value read for the agent, and restricted mode for an agent it never read; a non-retryable error still throws', async () => {
    let down = false;
    let broken = false;
    const debts: Record<string, number> = { a: 0.62, b: 0.1, c: 0.2 };
    const store = {
      current: async (_t: string, agent: string) => {
        if (broken) throw new StewardError('STEWARD_INTERNAL', 'bad reply', { retryable: false });
        if (down) throw new StewardError('STEWARD_STATE_UNAVAILABLE', 'connection refused', { retryable: true });
        return { debt: debts[agent]!, level: debts[agent]! >= 0.5 ? 'restricted_mode' : 'normal' };
      },
    } as unknown as TrustDebtStore;
    const cfg = DEFAULT_TRUST_DEBT_CONFIG;
    const r = resilientTrustDebt(store, logger, 2);
    await r.current('acme', 'a', 0, cfg);
    await r.current('acme', 'b', 0, cfg);
    await r.current('acme', 'a', 0, cfg); // a is the most recently read: c's read evicts b, not a
    await r.current('acme', 'c', 0, cfg);
    down = true;
    expect(await r.current('acme', 'a', 0, cfg)).toEqual({ debt: 0.62, level: 'restricted_mode' });
    expect(await r.current('acme', 'c', 0, cfg)).toEqual({ debt: 0.2, level: 'normal' });
    // Never read here (or evicted): its real debt is unknown, so no restriction is lifted.
    for (const agent of ['b', 'new-agent']) expect(await r.current('acme', agent, 0, cfg)).toEqual({ debt: cfg.thresholds.restrictedMode, level: 'restricted_mode' });
    broken = true;
    await expect(r.current('acme', 'a', 0, cfg)).rejects.toThrow('bad reply');
  });
});

