// http.idempotency.* reach the running ingress (docs/http.md "Idempotency"): through startHttpIngress on real Kafka
// and Redis, a batch meeting a key pending under another request waits pending_wait_ms (not the 15 s default)
// before its 503, and a key pending longer than pending_stale_ms (its replica crashed) is claimed and produced.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { createRedis } from '../../../src/adapters/redis/client.js';
import { redisIdempotencyClaims } from '../../../src/adapters/redis/idempotency-claims.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

function agentsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'steward-http-settings-'));
  writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: set-agent\n    api_keys: ["${apiKeyHash('set-key')}"]\n`);
  return dir;
}

const batch = (key: string) => ({ batch_id: key, event_count: 1, events: [{ trace_id: `t-${key}`, reasoning_text: 'r', idempotency_key: key }] });

describe('http.idempotency settings (real Kafka, Redis)', () => {
  it('pending_wait_ms bounds the wait for a key another request holds; pending_stale_ms lets a crashed claim be taken over', async () => {
    const dir = agentsDir();
    const prefix = uniqueRedisPrefix('http-set');
    await withPipelineEnv('http-settings', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, {
        blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false },
        redis: { key_prefix: prefix },
        http: { enabled: true, port: 0, limits: { rate_per_second: 1000 }, idempotency: { pending_wait_ms: 400, send_timeout_ms: 300, pending_stale_ms: 1500 } },
      });
      const ing = await startHttpIngress(cfg, quietLogger());
      const out = await new Collector(adapter, [topics.traces]).start();
      // Another replica's claims on the same Redis, as the ingress keeps them (its window, the default 24 h).
      const redis = createRedis(services().redisUrl, { maxRetriesPerRequest: 1 });
      const other = redisIdempotencyClaims(redis, { prefix, windowSeconds: cfg.http.idempotency.windowSeconds });
      const post = (body: unknown) =>
        fetch(`http://127.0.0.1:${ing.port}/v1/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'set-key' }, body: JSON.stringify(body) });
      try {
        expect((await other.claim('set-agent', ['held', 'crashed'])).states).toEqual(['claimed', 'claimed']);
        const claimedAt = Date.now();
        // Held by a live request: the batch polls it for at most its 400 ms (the last poll that fits in them: from
        // ~150 ms), then 503 — the default would poll for ~15 s.
        const t0 = Date.now();
        const r1 = await post(batch('held'));
        const waited = Date.now() - t0;
        expect(r1.status).toBe(503);
        expect(((await r1.json()) as { error: string }).error).toBe('STEWARD_HTTP_PENDING');
        expect(waited).toBeGreaterThanOrEqual(140);
        expect(waited).toBeLessThan(5000);
        // Pending past 1.5 s: the other replica is taken for crashed, the key is claimed here and produced.
        await new Promise((r) => setTimeout(r, Math.max(0, claimedAt + 1800 - Date.now())));
        const r2 = await post(batch('crashed'));
        expect(r2.status).toBe(200);
        expect(await r2.json()).toEqual({ accepted: 1, duplicates: 0, batch_id: 'crashed' });
        await waitFor(() => out.json(topics.traces).some((t) => t.trace_id === 't-crashed'), { timeoutMs: 20_000 });
        // And now done: a retry is a duplicate.
        await waitFor(async () => ((await (await post(batch('crashed'))).json()) as { duplicates?: number }).duplicates === 1, { timeoutMs: 5000 });
        expect(out.json(topics.traces).filter((t) => t.trace_id === 't-crashed')).toHaveLength(1);
      } finally {
        await out.stop();
        await ing.close();
        await deleteRedisPrefix(redis, prefix);
        redis.disconnect();
      }
    });
  });
});
