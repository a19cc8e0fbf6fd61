import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/config/steward-config.js';
import { StewardError } from '../../../src/errors.js';

const errorOf = (env: NodeJS.ProcessEnv, raw: Record<string, unknown> = {}, file?: string): StewardError => {
  try {
    buildConfig(raw, env, file);
  } catch (e) {
    return e as StewardError;
  }
  throw new Error('expected a config error');
};

describe('environment override errors', () => {
  it('name the variable and the path, with no file position', () => {
    const e = errorOf({ STEWARD_METRICS_PORT: 'abc' }, { observability: { port: 9464 } }, 'steward.example.yaml');
    expect(e.code).toBe('STEWARD_CONFIG');
    expect(e.format()).toBe('STEWARD_CONFIG: STEWARD_METRICS_PORT=abc: $.observability.port must be integer');
    expect(errorOf({ STEWARD_METRICS_PORT: '70000' }).message).toBe('STEWARD_METRICS_PORT=70000: $.observability.port must be <= 65535');
    expect(errorOf({ STEWARD_REQUIRE_SIGNING_KEY: 'maybe' }).message).toBe('STEWARD_REQUIRE_SIGNING_KEY=maybe: $.signing.require_key must be boolean');
    expect(errorOf({ STEWARD_LOG_LEVEL: 'loud' }).message).toMatch(/^STEWARD_LOG_LEVEL=loud: \$\.log_level must be equal to one of the allowed values/);
  });

  it('mask URL passwords and hide secret values', () => {
    const e = errorOf({ REDIS_URL: 'http://u:SuperSecretPw@redis:6379' });
    expect(e.message).toContain('REDIS_URL=http://u:***@redis:6379: $.redis.url');
    expect(e.message).not.toContain('SuperSecretPw');
  });

  it('still accept valid values', () => {
    expect(buildConfig({}, { STEWARD_METRICS_PORT: '9000', STEWARD_REQUIRE_SIGNING_KEY: 'true' }).observability.port).toBe(9000);
  });
});
