// Broker restart mid-stream on a PRIVATE single-node Kafka (scripts/services.sh with its own ports and
// directory; the shared broker is never touched): processing resumes and nothing is lost — every trace
// ends with a decision, a verdict (unless halted) and one trust-debt application.
import { describe, it, expect } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { createTopics, topicNames } from '../../../src/adapters/kafka/topics.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { Collector, MapTrustDebtStore, TestEngine, pipelineConfig, quietLogger, trace } from './harness.js';
import { DEFAULT_TRUST_DEBT_CONFIG_FOR_TESTS } from './fixtures.js';
import { waitFor, uniqueName } from '../setup/helpers.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../scripts/services.sh', import.meta.url));

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('broker restart', () => {
  it('resumes after a broker restart mid-stream with nothing lost', async () => {
    const [kport, cport] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'steward-kafka-'));
    const env = { ...process.env, STEWARD_SERVICES_DIR: dir, STEWARD_KAFKA_PORT: String(kport), STEWARD_KAFKA_CONTROLLER_PORT: String(cport) };
    const svc = (cmd: string) => run('bash', [SCRIPT, cmd, 'kafka'], { env, timeout: 120_000 });
    await svc('up');
    const prefix = uniqueName('pl-broker');
    const cfg = pipelineConfig(prefix);
    cfg.kafka = { ...cfg.kafka, brokers: [`127.0.0.1:${kport}`] };
    const topics = topicNames(prefix);
    const adapter = new KafkaAdapter(cfg.kafka);
    try {
      const admin = await adapter.admin();
      await createTopics(admin, topics, { partitions: 3, replicationFactor: 1, replyPartitions: 2, replyRetentionMs: 600_000 });
      await admin.disconnect();
      const store = new MapTrustDebtStore();
      const pipe = await startPipeline(cfg, ['tripwire', 'scorer', 'trust-debt'], { engine: new TestEngine(), trustDebtStore: store, trustDebtConfigFor: () => DEFAULT_TRUST_DEBT_CONFIG_FOR_TESTS }, { logger: quietLogger() });
      const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.trustDebt]).start();
      const producer = await adapter.producer();
      try {
        const N = 1200;
        const traces = Array.from({ length: N }, (_, i) => trace(i, `k${i % 8}`, i % 10 === 3 ? { args: { amount: 5000 } } : i % 50 === 7 ? { tool: 'rm_rf' } : {}));
        let restarted: Promise<unknown> | undefined;
        for (let i = 0; i < N; i += 50) {
          const batch = traces.slice(i, i + 50).map((t) => ({ key: t.agent_id, value: JSON.stringify(t) }));
          // The test's own producer retries until the broker is back (an agent would do the same).
          await waitFor(async () => (await producer.send([{ topic: topics.traces, messages: batch }]), true), { timeoutMs: 90_000, intervalMs: 500, message: 'produce' });
          if (i === 400) restarted = svc('restart');
          await new Promise((r) => setTimeout(r, 50));
        }
        await restarted;
        await waitFor(() => out.byId(topics.decisions).size === N && out.byId(topics.trustDebt, 'event_id').size === N, { timeoutMs: 90_000, message: 'all outputs after broker restart' });
        const scored = traces.filter((t) => t.tool !== 'rm_rf').map((t) => t.trace_id);
        await waitFor(() => out.byId(topics.verdicts).size === scored.length, { timeoutMs: 30_000, message: 'verdicts' });
        expect([...out.byId(topics.decisions).keys()].sort()).toEqual(traces.map((t) => t.trace_id).sort());
        expect([...out.byId(topics.verdicts).keys()].sort()).toEqual(scored.sort());
        // Each final intervention applied exactly once: block +0.15, halt +0.5, capped at 1.
        for (let a = 0; a < 8; a++) {
          const mine = traces.filter((t) => t.agent_id === `k${a}`);
          const expected = Math.min(1, mine.reduce((d, t) => Math.min(1, d + (t.tool === 'rm_rf' ? 0.5 : (t.args as { amount: number }).amount > 1000 ? 0.15 : 0)), 0));
          expect(store.debt.get(`acme:k${a}`) ?? 0, `k${a}`).toBeCloseTo(expected, 9);
        }
      } finally {
        await producer.disconnect().catch(() => undefined);
        await out.stop().catch(() => undefined);
        await pipe.stop().catch(() => undefined);
      }
    } finally {
      await svc('down').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
