// Exactly-once output per input partition (consumer.exactly_once) on real Kafka: the outputs and the committed
// offset of a chunk land together or not at all, a partition's new owner fences the old one (its later
// commits fail, its open transaction is aborted), and records the old owner committed are not redone.
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { PartitionTransactions } from '../../../src/adapters/kafka/partition-transactions.js';
import type { ChildProcess } from 'node:child_process';
import { Collector, TestEngine, quietLogger, withPipelineEnv, trace } from './harness.js';
import { startPipeline } from '../../../src/consumers/common-runtime.js';
import { StewardClient } from '../../../src/client/steward-client.js';
import { killed, startChild, stopChildren } from './children.js';
import { RedisScoredMarks } from '../../../src/adapters/redis/scored-marks.js';
import { deleteRedisPrefix, redisClient, services, uniqueName, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

async function readCommitted(adapter: KafkaAdapter, topic: string, until: (values: string[]) => boolean): Promise<string[]> {
  const values: string[] = [];
  const consumer = adapter.consumer({ groupId: uniqueName('eo-read'), maxWaitTimeMs: 100 });
  try {
    await consumer.subscribe([topic], true);
    await consumer.runBatches(async (b, ctl) => {
      for (const m of b.messages) {
        values.push(m.value!.toString());
        ctl.resolveOffset(m.offset);
      }
    });
    await waitFor(() => until(values), { timeoutMs: 20_000, message: `read ${topic}: ${values.join(',')}` });
    // Anything left behind an aborted or later record would arrive now.
    await new Promise((r) => setTimeout(r, 500));
    return values;
  } finally {
    await consumer.disconnect();
  }
}

describe('exactly-once stage output (real Kafka transactions)', () => {
  it('a new owner fences the old one and starts after what the old one committed', async () => {
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-eo' });
    const admin = await adapter.admin();
    const input = uniqueName('eo-in');
    const out = uniqueName('eo-out');
    const groupId = uniqueName('eo-group');
    await admin.createTopics([input, out].map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })));
    const a = new PartitionTransactions({ adapter, groupId });
    const b = new PartitionTransactions({ adapter, groupId });
    const rec = (v: string) => [{ topic: out, messages: [{ key: 'k', value: v }] }];
    try {
      expect(await a.claim(input, 0)).toBe(-1n);
      await a.commit(input, 0, rec('a1'), '4');
      // b takes the partition over: it fences a, and learns that offsets up to 4 are done.
      expect(await b.claim(input, 0)).toBe(5n);
      await expect(a.commit(input, 0, rec('a2'), '9')).rejects.toThrow();
      await b.commit(input, 0, rec('b1'), '9');
      expect(await readCommitted(adapter, out, (v) => v.includes('b1'))).toEqual(['a1', 'b1']);
      expect((await admin.groupOffsets(groupId, input)).find((p) => p.partition === 0)?.offset).toBe('10');
      // The fenced member claims again (a new generation): it fences b in turn and starts at 10.
      a.reassigned();
      expect(await a.claim(input, 0)).toBe(10n);
      await expect(b.commit(input, 0, rec('b2'), '12')).rejects.toThrow();
    } finally {
      await Promise.allSettled([a.disconnect(), b.disconnect()]);
      await admin.deleteTopics([input, out]).catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    }
  }, 60_000);

  it('the open transaction of an owner that died mid-commit is aborted when the partition is claimed', async () => {
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-eo-kill' });
    const admin = await adapter.admin();
    const input = uniqueName('eo-kin');
    const out = uniqueName('eo-kout');
    const groupId = uniqueName('eo-kgroup');
    await admin.createTopics([input, out].map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })));
    const next = new PartitionTransactions({ adapter, groupId });
    // The dead owner: same transactional id, records sent inside a transaction that never ends (a process
    // killed between its send and its commit). Its 60 s transaction timeout is far beyond this test's waits.
    const kafka = new Kafka({ brokers: services().kafkaBrokers, clientId: 'it-eo-dead', logLevel: logLevel.NOTHING });
    const dead = kafka.producer({ transactionalId: next.transactionalId(input, 0), idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60_000 });
    try {
      await dead.connect();
      const tx = await dead.transaction();
      await tx.send({ topic: out, messages: [{ key: 'k', value: 'from-the-dead' }] });
      await tx.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition: 0, offset: '9' }] }] });
      expect(await next.claim(input, 0)).toBe(-1n);
      await next.commit(input, 0, [{ topic: out, messages: [{ key: 'k', value: 'alive' }] }], '5');
      expect(await readCommitted(adapter, out, (v) => v.includes('alive'))).toEqual(['alive']);
      expect((await admin.groupOffsets(groupId, input))[0]?.offset).toBe('6');
      await expect(tx.commit()).rejects.toThrow();
    } finally {
      await dead.disconnect().catch(() => undefined);
      await next.disconnect();
      await admin.deleteTopics([input, out]).catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    }
  }, 60_000);

  // At-least-once, the same kill redelivers every verdict of the scorer's current batch (kafkajs commits at the end
  // of a batch, and the interval is set to never), and the final count check fails: exactly_once: [] in the
  // scorer's options shows it; so does scorerDedupTtlSeconds: 0 (100 verdicts more).
  it('a scorer killed mid-stream, fed duplicate scoring records, leaves exactly one verdict per trace for a read_committed reader', async () => {
    await withPipelineEnv('pl-eo', async ({ prefix, topics, adapter, cfg }) => {
      const base = { prefix, redisPrefix: uniqueName('eo'), delayMs: 10, partitions: cfg.topics.partitions, commitIntervalMs: 600_000 };
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
        const traces = Array.from({ length: N }, (_, i) => trace(i, `eo${i % 6}`));
        const tw = start(['tripwire']);
        await tw.ready;
        // The first 100 traces twice, byte for byte, as the tripwire stage reads its uncommitted tail again after a
        // crash: it decides them again and writes a second scoring record for each.
        const records = [...traces, ...traces.slice(0, 100)].map((t) => ({ key: t.agent_id, value: JSON.stringify(t) }));
        await producer.send([{ topic: topics.traces, messages: records }]);
        // Every scoring message is written before the scorer starts: its batches are whole partitions, several
        // chunks long, so the kill lands inside one.
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
    }, { topics: { partitions: 3 } });
  }, 120_000);
});

describe('exactly-once tripwire stage (opt-in)', () => {
  it('answers decide() and writes decisions and scoring records, offsets committed by its transactions', async () => {
    await withPipelineEnv(
      'pl-eo-tw',
      async ({ cfg, topics, adapter }) => {
        const pipe = await startPipeline(cfg, ['tripwire', 'scorer'], { engine: new TestEngine() }, { logger: quietLogger() });
        const out = await new Collector(adapter, [topics.decisions, topics.verdicts]).start();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const admin = await adapter.admin();
        try {
          // The reply is part of the chunk's transaction: the client reads it once the chunk committed.
          const d = await client.decide(trace(1, 'x1', { args: { amount: 5000 } }), { timeoutMs: 15_000 });
          expect(d.intervention).toBe('block');
          expect(d.fallback).toBeUndefined();
          await client.publish(trace(2, 'x1'));
          await waitFor(() => out.byId(topics.decisions).size === 2 && out.byId(topics.verdicts).size === 2, { timeoutMs: 20_000, message: 'decisions and verdicts' });
          expect(out.on(topics.decisions)).toHaveLength(2);
          // Written in transactions: each one's commit marker takes an offset after its records.
          const decisionOffsets = (await admin.topicOffsets(topics.decisions)).reduce((a, e) => a + Number(e.high), 0);
          expect(decisionOffsets).toBeGreaterThan(2);
          const ends = await admin.topicOffsets(topics.traces);
          const committed = await admin.groupOffsets(`${cfg.consumer.groupPrefix}-tripwire`, topics.traces);
          for (const e of ends) expect(committed.find((c) => c.partition === e.partition)?.offset ?? '-1', `partition ${e.partition}`).toBe(e.high === '0' ? '-1' : e.high);
        } finally {
          await client.close();
          await out.stop();
          await pipe.stop();
          await admin.disconnect();
        }
      },
      { consumer: { exactly_once: ['tripwire', 'scorer'] } },
    );
  }, 60_000);
});

describe('scored marks (real Redis)', () => {
  it('skips a later copy of a scored trace in the same partition, never the record itself', async () => {
    const redis = redisClient();
    const prefix = uniqueRedisPrefix('marks');
    const marks = new RedisScoredMarks(redis, { prefix, ttlSeconds: 60 });
    try {
      expect(await marks.firstScoring('ev1', 'acgp.scoring', 2, '40')).toBe(true);
      // Redelivered after an aborted transaction: the same record is scored again.
      expect(await marks.firstScoring('ev1', 'acgp.scoring', 2, '40')).toBe(true);
      // The tripwire stage's second scoring record for the trace, further down the partition.
      expect(await marks.firstScoring('ev1', 'acgp.scoring', 2, '95')).toBe(false);
      // A copy on another partition (re-partitioned topic) is scored, and the mark moves to it.
      expect(await marks.firstScoring('ev1', 'acgp.scoring', 5, '7')).toBe(true);
      expect(await marks.firstScoring('ev1', 'acgp.scoring', 5, '8')).toBe(false);
      expect(await marks.firstScoring('ev1', 'acgp.scoring', 2, '96')).toBe(true);
      expect(await redis.ttl(`${prefix}scored:ev1`)).toBeGreaterThan(50);
      expect(await marks.firstScoring('ev2', 'acgp.scoring', 2, '97')).toBe(true);
    } finally {
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
    }
  });
});
