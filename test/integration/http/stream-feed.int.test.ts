// The stream feed's start (docs/http.md "Stream"), audit 24-r2 findings 2 and 3, on real Kafka and Redis:
// 1. the process's first stream client resumes with Last-Event-ID (an EventSource after a restart does): it gets the
//    agent's new events (before, only head() — a client without the header — started the feed: nothing came);
// 2. a feed whose first start failed (Kafka unreachable) starts once Kafka is back (before, the failure was kept for
//    the life of the process: every later stream answered 500).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { AgentEventFeed } from '../../../src/process/http-stream.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';
import { sseReader } from './sse-reader.js';

describe('HTTP stream feed start', () => {
  it('the first stream client, resuming with Last-Event-ID, gets the new events', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-feed-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: feed-agent\n    api_keys: ["${apiKeyHash('feed-key')}"]\n`);
    const redisPrefix = uniqueRedisPrefix('feed-lei');
    await withPipelineEnv('http-feed-lei', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, redis: { key_prefix: redisPrefix }, http: { enabled: true, port: 0 } });
      const ing = await startHttpIngress(cfg, quietLogger());
      const producer = await adapter.producer();
      const redis = redisClient();
      try {
        const sse = await sseReader(`http://127.0.0.1:${ing.port}/v1/stream/traces`, { 'X-API-Key': 'feed-key', 'Last-Event-ID': '0-0' });
        expect((await sse.next()).event).toBe('connected');
        const decision = { trace_id: 'lei-1', agent_id: 'feed-agent', intervention: 'block', approved: false, halted: false, reasons: ['test'] };
        await producer.send([{ topic: topics.decisions, messages: [{ key: 'feed-agent', value: JSON.stringify(decision) }] }]);
        expect(await sse.traces(1)).toEqual(['lei-1']);
        sse.close();
      } finally {
        await producer.disconnect();
        await ing.close();
        await deleteRedisPrefix(redis, redisPrefix).catch(() => undefined);
        redis.disconnect();
      }
    });
  });

  it('a feed whose first start failed (Kafka unreachable) starts once Kafka is back', { timeout: 120_000 }, async () => {
    await withPipelineEnv('http-feed-retry', async ({ cfg, topics, adapter }) => {
      // A bootstrap address where nothing listens at first; later a forwarder to the real broker ("Kafka is back").
      const hold = createServer();
      await new Promise<void>((r) => hold.listen(0, '127.0.0.1', () => r()));
      const port = (hold.address() as { port: number }).port;
      await new Promise<void>((r) => hold.close(() => r()));
      const [kh, kp] = cfg.kafka.brokers[0]!.split(':');
      const redis = redisClient();
      const prefix = uniqueRedisPrefix('feed-retry');
      const failures: string[] = [];
      const feed = new AgentEventFeed(
        new KafkaAdapter({ ...cfg.kafka, brokers: [`127.0.0.1:${port}`] }),
        topics,
        redis,
        prefix,
        `${cfg.consumer.groupPrefix}-http-stream`,
        undefined,
        undefined,
        (err, when) => failures.push(`${when}: ${err.message}`),
      );
      let forwarder: Server | undefined;
      const producer = await adapter.producer();
      try {
        await expect(feed.head('a1')).rejects.toThrow();
        forwarder = createServer((s) => {
          const u = connect(Number(kp), kh);
          s.pipe(u).pipe(s);
          s.on('error', () => u.destroy());
          u.on('error', () => s.destroy());
        });
        await new Promise<void>((r) => forwarder!.listen(port, '127.0.0.1', () => r()));
        // Started again (after the retry delay), it writes the agent's events.
        await waitFor(() => feed.head('a1'), { timeoutMs: 30_000, message: 'the feed starts once Kafka is back' });
        await producer.send([{ topic: topics.decisions, messages: [{ key: 'a1', value: JSON.stringify({ trace_id: 'r-1', agent_id: 'a1', intervention: 'none' }) }] }]);
        const events = await waitFor(async () => {
          const e = await feed.read('a1', '0-0');
          return e.length >= 1 ? e : undefined;
        }, { timeoutMs: 30_000, message: 'the event on the agent stream' });
        expect(JSON.parse(events[0]!.data)).toMatchObject({ trace_id: 'r-1' });
        // The failed start was reported (the process logs it).
        expect(failures.length).toBeGreaterThanOrEqual(1);
        expect(failures[0]).toMatch(/^start: /);
      } finally {
        await producer.disconnect();
        await feed.stop().catch(() => undefined);
        forwarder?.close();
        await deleteRedisPrefix(redis, prefix).catch(() => undefined);
        redis.disconnect();
      }
    });
  });
});
