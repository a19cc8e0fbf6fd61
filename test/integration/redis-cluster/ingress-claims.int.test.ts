/**
 * The HTTP ingress's batch claims on a Redis Cluster (docs/http.md "Idempotency"): with redis.cluster_nodes set the
 * claims go to the cluster (an agent's buckets share its hash tag), so a retried batch is a duplicate and nothing of
 * it reaches acgp.traces twice — also when redis.url names a master that does not own the agent's slot (a single
 * connection to it, as the ingress had before, was answered MOVED).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { uniqueRedisPrefix } from '../setup/helpers.js';
import { clusterClient, clusterNodes, deleteClusterPrefix } from './cluster.js';

/** A seed node that is not the master of `key`'s slot. */
async function nodeWithoutSlotOf(key: string): Promise<string> {
  const seeds = clusterNodes().map((n) => n.replace(/^redis:\/\//, ''));
  const probe = new Redis(`redis://${seeds[0]}`);
  try {
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', key)) as number;
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const owner = ranges.find(([from, to]) => slot >= from && slot <= to)![2];
    const other = seeds.find((s) => !s.endsWith(`:${owner[1]}`));
    if (!other) throw new Error(`every seed owns slot ${slot}`);
    return other;
  } finally {
    probe.disconnect();
  }
}

describe('HTTP ingress claims on a Redis Cluster', () => {
  const prefix = uniqueRedisPrefix('http-cl');
  afterAll(async () => {
    const c = await clusterClient();
    await deleteClusterPrefix(c, prefix).catch(() => undefined);
    c.disconnect();
  });

  it('a retried batch is a duplicate, whichever master redis.url names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-cl-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: cl-agent\n    api_keys: ["${apiKeyHash('key-cl')}"]\n`);
    const url = `redis://${await nodeWithoutSlotOf('{cl-agent}')}`;
    await withPipelineEnv('http-cluster', async ({ prefix: topicPrefix, topics, adapter }) => {
      const ing = await startHttpIngress(
        pipelineConfig(topicPrefix, {
          blueprints: { agents: join(dir, 'agents.yaml'), watch: false },
          redis: { url, cluster_nodes: clusterNodes(), key_prefix: prefix },
          http: { enabled: true, port: 0, limits: { rate_per_second: 1000 } },
        }),
        quietLogger(),
      );
      const out = await new Collector(adapter, [topics.traces]).start();
      const post = (body: unknown) =>
        fetch(`http://127.0.0.1:${ing.port}/v1/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'key-cl', 'x-idempotency-key': 'b1' }, body: JSON.stringify(body) });
      try {
        const events = [0, 1, 2].map((i) => ({ trace_id: `c-${i}`, reasoning_text: `r${i}`, idempotency_key: `b1_c-${i}` }));
        const first = await post({ batch_id: 'b1', events, event_count: 3 });
        expect(first.status).toBe(200);
        expect(await first.json()).toEqual({ accepted: 3, duplicates: 0, batch_id: 'b1' });
        // The retry, re-batched with one new event.
        const more = [...events, { trace_id: 'c-3', reasoning_text: 'r3', idempotency_key: 'b2_c-3' }];
        expect(await (await post({ batch_id: 'b1', events: more, event_count: 4 })).json()).toEqual({ accepted: 1, duplicates: 3, batch_id: 'b1' });
        await new Promise((r) => setTimeout(r, 1500));
        expect(out.json(topics.traces).map((t) => t.trace_id).sort()).toEqual(['c-0', 'c-1', 'c-2', 'c-3']);
        // The claims are on the cluster, in the agent's slot.
        const c = await clusterClient();
        try {
          // (this day's bucket, or yesterday's if the day turned during the test)
          const bucket = Math.floor(Date.now() / 1000 / 86_400);
          const held = [...(await c.smembers(`${prefix}http:idem:{cl-agent}:${bucket}`)), ...(await c.smembers(`${prefix}http:idem:{cl-agent}:${bucket - 1}`))];
          // The batch in the acgp form is one group field (D48); the re-batched event of another batch, per key.
          expect(held.sort()).toEqual(['b2_c-3']);
          const group = (await c.hget(`${prefix}http:idem:{cl-agent}:g${bucket}`, 'b1')) ?? (await c.hget(`${prefix}http:idem:{cl-agent}:g${bucket - 1}`, 'b1'));
          expect(group).toBe('\nc-0\nc-1\nc-2\n');
        } finally {
          c.disconnect();
        }
      } finally {
        await out.stop();
        await ing.close();
      }
    });
  });
});
