// `steward run` side of source-match: steward.yaml `sources:` reaches the stream engine (real Redis for
// state and trust debt). The same trace scores knowledge_grounding with the registry and is skipped without.
import { describe, it, expect } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { buildConfig } from '../../../src/config/steward-config.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import type { ScoreRecord } from '../../../src/engine/steward-engine.js';
import type { Trace } from '../../../src/engine/types.js';
import { quietLogger } from './harness.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix } from '../setup/helpers.js';

const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));
const SOURCES = fileURLToPath(new URL('../../golden/eval/sources.yaml', import.meta.url));

const trace = (id: string): Trace => ({
  trace_id: id,
  agent_id: 'unregistered-writer',
  timestamp: '2026-03-01T09:00:00Z',
  hook: 'output',
  content: 'Revenue rose 12% [sec-10k]. Shares fell 3% [2].',
  sources: [{ id: 'sec-10k' }, { id: 'reuters' }],
});

async function grounding(sources: string | undefined, id: string) {
  const prefix = uniqueRedisPrefix('sources');
  const cfg = buildConfig({ blueprints: { dir: BLUEPRINTS, watch: false }, redis: { key_prefix: prefix }, ...(sources ? { sources } : {}) }, { REDIS_URL: services().redisUrl });
  const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer'], quietLogger());
  try {
    const t = trace(id);
    const decision = await rt.deps.engine!.decide(t, Date.parse(t.timestamp));
    const score = (await rt.deps.engine!.score(t, decision, Date.parse(t.timestamp))) as ScoreRecord;
    return score.metrics.find((m) => m.name === 'knowledge_grounding');
  } finally {
    await rt.close();
    const r = redisClient();
    await deleteRedisPrefix(r, prefix).catch(() => 0);
    await r.quit();
  }
}

describe('source registry in the stream engine', () => {
  it('steward.yaml sources: scores source-match metrics; without it they are skipped', async () => {
    expect(await grounding(SOURCES, 'src-with')).toMatchObject({ scorer: 'source-match', status: 'ok', score: 1 });
    expect(await grounding(undefined, 'src-without')).toMatchObject({ status: 'skipped', score: null });
  });
});

describe('signing.require_key', () => {
  it('the scorer refuses to start with an ephemeral key; a configured key or a tripwire-only process is fine', async () => {
    const base = { blueprints: { dir: BLUEPRINTS, watch: false }, redis: { key_prefix: uniqueRedisPrefix('signing') } };
    const env = { REDIS_URL: services().redisUrl, STEWARD_REQUIRE_SIGNING_KEY: '1' };
    await expect(bootstrapEngine(buildConfig(base, env), ['tripwire', 'scorer'], quietLogger())).rejects.toMatchObject({ code: 'STEWARD_CONFIG', message: expect.stringContaining('require_key') });
    const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    for (const [cfg, stages] of [[buildConfig(base, { ...env, STEWARD_SIGNING_KEY: pem }), ['tripwire', 'scorer']], [buildConfig(base, env), ['tripwire']]] as const) {
      const rt = await bootstrapEngine(cfg, stages, quietLogger());
      await rt.close();
    }
  });
});
