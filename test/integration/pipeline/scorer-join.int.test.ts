// consumer.scorer_input: join on real Kafka + Redis (docs/pipeline.md "Hot path", spec-decisions D29): the tripwire
// stage writes decisions only, the scorer reads each decision's trace from acgp.traces itself.
import { describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { Collector, TestEngine, quietLogger, withPipelineEnv, trace } from './harness.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { StewardClient } from '../../../src/client/steward-client.js';
import { TRACE_POSITION_HEADERS } from '../../../src/adapters/kafka/trace-position.js';
import { killed, startChild, stopChildren } from './children.js';
import { services, uniqueName, waitFor } from '../setup/helpers.js';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { checkCoPartitioned } from '../../../src/process/scorer-stage.js';

describe('scorer join (consumer.scorer_input: join)', () => {
  it('one record out per trace; the verdict reaches the synchronous client through the trace record\'s reply route; a decision naming another trace is dead-lettered', async () => {
    await withPipelineEnv(
      'pl-join',
      async ({ cfg, topics, adapter }) => {
        const pipe = await startPipeline(cfg, ['tripwire', 'scorer'], { engine: new TestEngine() }, { logger: quietLogger() });
        const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.dlq]).start();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const verdicts: string[] = [];
        client.onVerdict((v) => {
          verdicts.push(v.trace_id);
        });
        const producer = await adapter.producer();
        const admin = await adapter.admin();
        try {
          const d = await client.decide(trace(1, 'j1', { args: { amount: 5000 } }), { timeoutMs: 15_000 });
          expect(d.intervention).toBe('block');
          expect(d.fallback).toBeUndefined();
          await client.publish(trace(2, 'j1'));
          await client.publish(trace(3, 'j2', { tool: 'rm_rf' }));
          await waitFor(() => out.byId(topics.decisions).size === 3 && out.byId(topics.verdicts).size === 2, { timeoutMs: 30_000, message: 'decisions and verdicts' });
          await waitFor(() => verdicts.includes('t-j1-1'), { timeoutMs: 10_000, message: 'the verdict reply' });
          // The halted trace is not scored; nothing went to acgp.scoring.
          expect([...out.byId(topics.verdicts).keys()].sort()).toEqual(['t-j1-1', 't-j1-2']);
          expect((await admin.topicOffsets(topics.scoring)).every((o) => o.high === '0')).toBe(true);
          // A decision whose position names another trace's record: dead-lettered by the scorer, no verdict.
          const first = out.on(topics.decisions).find((m) => out.parsed(m).trace_id === 't-j1-1')!;
          const forged = { ...out.parsed(first), trace_id: 't-j1-99' };
          await producer.send([{ topic: topics.decisions, messages: [{ key: 'j1', value: JSON.stringify(forged), headers: { [TRACE_POSITION_HEADERS.partition]: String(first.headers[TRACE_POSITION_HEADERS.partition]), [TRACE_POSITION_HEADERS.offset]: String(first.headers[TRACE_POSITION_HEADERS.offset]) } }] }]);
          await waitFor(() => out.on(topics.dlq).length === 1, { timeoutMs: 20_000, message: 'the forged decision dead-lettered' });
          expect(String(out.on(topics.dlq)[0].headers['x-steward-error-code'])).toBe('STEWARD_TRACE_SCHEMA');
          expect(out.byId(topics.verdicts).has('t-j1-99')).toBe(false);
        } finally {
          await client.close();
          await producer.disconnect();
          await admin.disconnect();
          await out.stop();
          await pipe.stop();
        }
      },
      { consumer: { scorer_input: 'join' } },
    );
  }, 90_000);

  // Audit #23 r2 finding 1: a decision naming an offset past its traces partition's end, or a partition acgp.traces
  // does not have, stalled its decisions partition for good (retried without bound, nothing dead-lettered).
  it('a decision naming a position the traces topic never had is dead-lettered; the partition goes on', async () => {
    await withPipelineEnv(
      'pl-join-end',
      async ({ cfg, topics, adapter }) => {
        const pipe = await startPipeline(cfg, ['tripwire', 'scorer'], { engine: new TestEngine() }, { logger: quietLogger() });
        const out = await new Collector(adapter, [topics.decisions, topics.verdicts, topics.dlq]).start();
        const producer = await adapter.producer();
        const send = (t: object, key: string) => producer.send([{ topic: topics.traces, messages: [{ key, value: JSON.stringify(t) }] }]);
        try {
          await send(trace(1, 'je'), 'je');
          await waitFor(() => out.byId(topics.verdicts).has('t-je-1'), { timeoutMs: 30_000, message: 'the first verdict' });
          const first = out.on(topics.decisions).find((m) => out.parsed(m).trace_id === 't-je-1')!;
          const part = String(first.headers[TRACE_POSITION_HEADERS.partition]);
          const forged = (id: string, partition: string, offset: string) => ({
            key: 'je',
            value: JSON.stringify({ ...out.parsed(first), trace_id: id }),
            headers: { [TRACE_POSITION_HEADERS.partition]: partition, [TRACE_POSITION_HEADERS.offset]: offset },
          });
          const missing = String(cfg.topics.partitions + 4);
          await producer.send([{ topic: topics.decisions, messages: [forged('t-je-far', part, '999999'), forged('t-je-near', part, String(Number(first.headers[TRACE_POSITION_HEADERS.offset]) + 3)), forged('t-je-nopart', missing, '0')] }]);
          await send(trace(2, 'je'), 'je');
          await waitFor(() => out.byId(topics.verdicts).has('t-je-2') && out.on(topics.dlq).length === 3, { timeoutMs: 40_000, message: 'the next verdict and three dead letters' });
          expect(out.on(topics.dlq).map((m) => String(m.headers['x-steward-error-code']))).toEqual(['STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_SCHEMA']);
          expect([...out.byId(topics.verdicts).keys()].sort()).toEqual(['t-je-1', 't-je-2']);
        } finally {
          await producer.disconnect();
          await out.stop();
          await pipe.stop();
        }
      },
      { consumer: { scorer_input: 'join' } },
    );
  }, 90_000);

  it('refuses to start when traces and decisions differ in partition count', async () => {
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-join-parts' });
    const admin = await adapter.admin();
    const [traces, decisions] = [uniqueName('join-t'), uniqueName('join-d')];
    try {
      await admin.createTopics([{ topic: traces, numPartitions: 3, replicationFactor: 1 }, { topic: decisions, numPartitions: 2, replicationFactor: 1 }]);
      const topics = { ...topicNames('unused'), traces, decisions };
      await expect(checkCoPartitioned(admin, topics)).rejects.toThrow(/same partition count \(they have 3 and 2\)/);
      await expect(checkCoPartitioned(admin, { ...topics, decisions: traces })).resolves.toBeUndefined();
    } finally {
      await admin.deleteTopics([traces, decisions]).catch(() => undefined);
      await admin.disconnect();
    }
  }, 60_000);

  // As exactly-once.int.test.ts's kill test, through the join: the tripwire stage decides the first 100 traces twice
  // (same bytes: a second decision record each), the scorer is killed inside a batch and restarted.
  it('a join scorer killed mid-stream, fed duplicate decisions, leaves exactly one verdict per trace', async () => {
    await withPipelineEnv('pl-join-eo', async ({ prefix, topics, adapter, cfg }) => {
      const base = { prefix, redisPrefix: uniqueName('join'), delayMs: 10, partitions: cfg.topics.partitions, commitIntervalMs: 600_000, scorerInput: 'join' };
      const children: ChildProcess[] = [];
      const out = await new Collector(adapter, [topics.decisions, topics.verdicts]).start();
      const producer = await adapter.producer();
      const start = (stages: string[]) => {
        const c = startChild({ ...base, stages });
        children.push(c.proc);
        return c;
      };
      try {
        const N = 600;
        const traces = Array.from({ length: N }, (_, i) => trace(i, `jo${i % 6}`));
        const tw = start(['tripwire']);
        await tw.ready;
        const records = [...traces, ...traces.slice(0, 100)].map((t) => ({ key: t.agent_id, value: JSON.stringify(t) }));
        await producer.send([{ topic: topics.traces, messages: records }]);
        await waitFor(() => out.on(topics.decisions).length === N + 100, { timeoutMs: 30_000, message: 'every decision' });
        const sc = start(['scorer']);
        await sc.ready;
        await waitFor(() => out.on(topics.verdicts).length >= 150, { timeoutMs: 30_000, message: 'verdicts before the kill' });
        sc.proc.kill('SIGKILL');
        await killed(sc.proc);
        const atKill = out.on(topics.verdicts).length;
        const again = start(['scorer']);
        await again.ready;
        await waitFor(() => out.byId(topics.verdicts).size === N, { timeoutMs: 60_000, message: 'every verdict after the restart' });
        await new Promise((r) => setTimeout(r, 1500));
        expect(atKill).toBeLessThan(N);
        expect(out.on(topics.verdicts).length).toBe(N);
      } finally {
        await stopChildren(children);
        await producer.disconnect();
        await out.stop();
      }
    }, { topics: { partitions: 3 }, consumer: { scorer_input: 'join' } });
  }, 120_000);
});
