// The HTTP ingress's stream feed (GET /v1/stream/traces, src/process/http-stream.ts) on a Redis Cluster deployment:
// redis.url names one master, redis.cluster_nodes the cluster, and the agents' stream keys live on all three
// masters. Before, the feed used a single-server client of redis.url and wrote a batch as one pipeline() whose
// exec() results were never read: the agents of the other masters got no events (MOVED, dropped silently; their
// SSE head read failed too). Also: a write that fails the same way every time (WRONGTYPE, the agent's key made a
// string) skips that event and the feed goes on (a failure that may pass fails the batch: written again).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { sseReader } from '../http/sse-reader.js';
import { clusterNodes, masterNotServing, masterPortOf, placement, withCluster } from './cluster.js';

/** An SSE reader of the ingress's stream for one API key. */
const sse = (url: string, apiKey: string) => sseReader(url, { 'x-api-key': apiKey });

describe('the HTTP stream feed on Redis Cluster', () => {
  it("every agent's events reach its stream whichever master holds it; a write that can never succeed is skipped and does not stall the feed", async () => {
    await withCluster(async (c, prefix) => {
      const streamKey = (agent: string) => `${prefix}http:stream:${agent}`;
      // Two agents per master (the first candidates whose stream keys land there) and one more for the failure case.
      const byPort = new Map<number, string[]>();
      for (let i = 0; [...byPort.values()].flat().length < 6; i++) {
        const a = `st-${i}`;
        const port = await masterPortOf(c, streamKey(a));
        const list = byPort.get(port) ?? [];
        if (list.length < 2) byPort.set(port, [...list, a]);
      }
      expect(byPort.size).toBe(3);
      const agents = [...byPort.values()].flat();
      const bad = 'st-bad';
      const dir = mkdtempSync(join(tmpdir(), 'steward-cl-stream-'));
      writeFileSync(join(dir, 'agents.yaml'), `agents:\n${[...agents, bad].map((a) => `  - id: ${a}\n    api_keys: ["${apiKeyHash(`k-${a}`)}"]\n`).join('')}`);
      try {
        await withPipelineEnv('cl-stream', async ({ cfg: base, topics, adapter }) => {
          const cfg = pipelineConfig(base.topics.prefix, {
            blueprints: { agents: join(dir, 'agents.yaml'), watch: false },
            // a master that does not serve the first agent's stream (nor, with two per master, a third of the others')
            redis: { url: await masterNotServing(c, streamKey(agents[0]!)), key_prefix: prefix, cluster_nodes: clusterNodes() },
            http: { enabled: true, port: 0 },
          });
          const ing = await startHttpIngress(cfg, quietLogger());
          const producer = await adapter.producer();
          const url = `http://127.0.0.1:${ing.port}/v1/stream/traces`;
          const clients: Awaited<ReturnType<typeof sse>>[] = [];
          try {
            for (const a of [...agents, bad]) {
              const s = await sse(url, `k-${a}`);
              clients.push(s);
              expect((await s.next()).event).toBe('connected');
            }
            const decision = (agent: string, trace: string) => ({ key: agent, value: JSON.stringify({ trace_id: trace, agent_id: agent, intervention: 'ok', halted: false, reasons: [], tripwires: [] }) });
            // One send: each partition's batch holds agents of several masters.
            await producer.send([{ topic: topics.decisions, messages: agents.flatMap((a) => [decision(a, `${a}-t1`), decision(a, `${a}-t2`)]) }]);
            for (const [i, a] of agents.entries()) expect(await clients[i]!.traces(2), a).toEqual([`${a}-t1`, `${a}-t2`]);
            expect(await placement(c, `${prefix}http:stream:`)).toEqual({ masters: 3, standalone: 0 });

            // A write that fails the same way every time: the bad agent's stream key holds a string (WRONGTYPE). Its
            // event is skipped (reported), and the feed goes on for everyone — it does not stall on it.
            await c.set(streamKey(bad), 'not a stream');
            // One Kafka key for both: one partition, so one batch of the feed (the feed takes the agent from the record).
            await producer.send([{ topic: topics.decisions, messages: [decision(bad, `${bad}-t1`), { ...decision(agents[0]!, `${agents[0]}-t3`), key: bad }] }]);
            expect(await clients[0]!.traces(1)).toEqual([`${agents[0]}-t3`]);
            await c.del(streamKey(bad));
            await producer.send([{ topic: topics.decisions, messages: [decision(bad, `${bad}-t2`)] }]);
            expect(await clients[agents.length]!.traces(1)).toEqual([`${bad}-t2`]);
          } finally {
            for (const s of clients) s.close();
            await producer.disconnect();
            await ing.close();
          }
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }, 120_000);
});
