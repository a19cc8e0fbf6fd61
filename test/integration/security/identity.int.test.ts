// The sender of a trace is bound to its agent_id on real Kafka and Redis (docs/security.md): an agent whose
// registry entry lists a public key is answered only when it signs; a record whose key is not the agent id,
// or an unregistered agent under agents.require_registered, is dead-lettered with the reason — and a waiting
// client gets the fail-closed block at once.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StewardClient } from '../../../src/client/steward-client.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import type { Trace } from '../../../src/engine/types.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

describe('agent identity (real Kafka, Redis)', () => {
  it('signed traces of a keyed agent pass; unsigned, foreign-keyed and unregistered ones are refused with the reason', async () => {
    const k = generateKeyPairSync('ed25519');
    const priv = k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pub = k.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const dir = mkdtempSync(join(tmpdir(), 'steward-identity-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: signer-1\n    tenant: acme\n    public_keys:\n      - |\n${pub.trim().split('\n').map((l) => `        ${l}`).join('\n')}\n  - { id: plain-1, tenant: acme }\n`);
    const redisPrefix = uniqueRedisPrefix('id');
    await withPipelineEnv('pl-identity', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, watch: false }, redis: { key_prefix: redisPrefix }, consumer: { group_prefix: base.consumer.groupPrefix }, agents: { require_registered: true }, trust_debt: { audit_sweep_interval_ms: 0 } });
      const logger = quietLogger();
      const rt = await bootstrapEngine(cfg, ['tripwire'], logger);
      const pipe = await startPipeline(cfg, ['tripwire'], rt.deps, { logger });
      const out = await new Collector(adapter, [topics.decisions, topics.dlq]).start();
      const signed = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix, signingKey: priv });
      const unsigned = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
      const redis = redisClient();
      const producer = await adapter.producer();
      try {
        const t = (id: string, agent: string): Trace => ({ trace_id: id, agent_id: agent, timestamp: new Date(Date.UTC(2026, 5, 1)).toISOString(), hook: 'tool_call', tool: 'x' });
        expect((await signed.decide(t('s-ok', 'signer-1'), { timeoutMs: 20_000 })).intervention).toBe('ok');
        expect(await unsigned.decide(t('s-unsigned', 'signer-1'), { timeoutMs: 20_000 })).toMatchObject({ intervention: 'block', approved: false, rejected: { code: 'STEWARD_AGENT_SIGNATURE' } });
        expect(await unsigned.decide(t('u-1', 'nobody'), { timeoutMs: 20_000 })).toMatchObject({ intervention: 'block', rejected: { code: 'STEWARD_AGENT_UNKNOWN' } });
        expect((await unsigned.decide(t('p-ok', 'plain-1'), { timeoutMs: 20_000 })).intervention).toBe('ok');
        // Someone writing plain-1's trace under another agent's key (to land in its partition, or charge it).
        await producer.send([{ topic: topics.traces, messages: [{ key: 'signer-1', value: JSON.stringify(t('p-foreign', 'plain-1')) }] }]);
        // Without a key (the partitioner spreads one agent's events: no ordering, no per-agent partition).
        await producer.send([{ topic: topics.traces, messages: [{ key: null, value: JSON.stringify(t('p-nokey', 'plain-1')) }] }]);
        await waitFor(() => out.on(topics.dlq).length === 4, { timeoutMs: 20_000, message: 'four dead-lettered traces' });
        const codes = out.on(topics.dlq).map((m) => m.headers['x-steward-error-code']?.toString()).sort();
        expect(codes).toEqual(['STEWARD_AGENT_KEY', 'STEWARD_AGENT_KEY', 'STEWARD_AGENT_SIGNATURE', 'STEWARD_AGENT_UNKNOWN']);
        const why = (id: string) => out.on(topics.dlq).find((m) => m.value?.toString('utf8').includes(id))?.headers['x-steward-error-message']?.toString();
        expect(why('p-foreign')).toMatch(/record key is not the agent id/);
        expect(why('p-nokey')).toMatch(/record has no key/);
        expect([...out.byId(topics.decisions).keys()].sort()).toEqual(['p-ok', 's-ok']);
      } finally {
        await producer.disconnect();
        await signed.close();
        await unsigned.close();
        await out.stop();
        await pipe.stop();
        await rt.close();
        await deleteRedisPrefix(redis, redisPrefix);
        await redis.quit();
      }
    });
  }, 120_000);
});
