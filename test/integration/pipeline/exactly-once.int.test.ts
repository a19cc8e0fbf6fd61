// Exactly-once output per input partition (consumer.exactly_once) on real Kafka: the outputs and the committed
// offset of a chunk land together or not at all, a partition's new owner fences the old one (its later
// commits fail, its open transaction is aborted), and records the old owner committed are not redone.
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter, type StewardAdmin } from '../../../src/adapters/kafka/client.js';
import { PartitionTransactions } from '../../../src/adapters/kafka/partition-transactions.js';
import { isFenced } from '../../../src/adapters/kafka/kafka-error.js';
import type { ChildProcess } from 'node:child_process';
import { Collector, TestEngine, quietLogger, withPipelineEnv, trace } from './harness.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { StageRunner, type StageProcessor } from '../../../src/consumers/stage-runner.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
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

interface TxTopics {
  adapter: KafkaAdapter;
  admin: StewardAdmin;
  /** A one-partition input topic whose offsets the transactions commit, its output topic and a DLQ topic. */
  input: string;
  out: string;
  dlq: string;
  groupId: string;
}

/** Runs `fn` against fresh topics and a fresh group, deleted afterwards. */
async function withTxTopics(name: string, fn: (t: TxTopics) => Promise<void>): Promise<void> {
  const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: `it-${name}` });
  const admin = await adapter.admin();
  const t: TxTopics = { adapter, admin, input: uniqueName(`${name}-in`), out: uniqueName(`${name}-out`), dlq: uniqueName(`${name}-dlq`), groupId: uniqueName(`${name}-group`) };
  try {
    await admin.createTopics([t.input, t.out, t.dlq].map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })));
    await fn(t);
  } finally {
    await admin.deleteTopics([t.input, t.out, t.dlq]).catch(() => undefined);
    await admin.deleteGroups([t.groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}

describe('exactly-once stage output (real Kafka transactions)', () => {
  it('a new owner fences the old one and starts after what the old one committed', () =>
    withTxTopics('eo', async ({ adapter, admin, input, out, groupId }) => {
      const a = new PartitionTransactions({ adapter, groupId });
      const b = new PartitionTransactions({ adapter, groupId });
      const rec = (v: string) => [{ topic: out, messages: [{ key: 'k', value: v }] }];
      try {
        expect(await a.claim(input, 0)).toBe(-1n);
        await a.commit(input, 0, rec('a1'), '4', '0');
        // b takes the partition over: it fences a, and learns that offsets up to 4 are done.
        expect(await b.claim(input, 0)).toBe(5n);
        const fenced = await a.commit(input, 0, rec('a2'), '9', '5').then(() => undefined, (e: unknown) => e);
        expect(isFenced(fenced)).toBe(true);
        // Fenced: a does not claim the partition back (and fence b in turn) before the group's next generation.
        await expect(a.claim(input, 0)).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS', message: expect.stringMatching(/fenced/) });
        await b.commit(input, 0, rec('b1'), '9', '5');
        expect(await readCommitted(adapter, out, (v) => v.includes('b1'))).toEqual(['a1', 'b1']);
        expect((await admin.groupOffsets(groupId, input)).find((p) => p.partition === 0)?.offset).toBe('10');
        // The fenced member claims again (a new generation): it fences b in turn and starts at 10.
        a.reassigned();
        expect(await a.claim(input, 0)).toBe(10n);
        await expect(b.commit(input, 0, rec('b2'), '12', '10')).rejects.toThrow();
        // b's next attempt claims again (as after any failed commit), finds 10 committed and refuses to redo 10..12.
        b.reassigned();
        await expect(b.commit(input, 0, rec('b3'), '12', '8')).rejects.toThrow(/committed up to 10, past input 8/);
      } finally {
        await Promise.allSettled([a.disconnect(), b.disconnect()]);
      }
    }), 60_000);

  // The race the floor exists for: kafkajs fetched the committed offset at the join, then the previous owner (evicted
  // but still running) committed more, then this member fenced it. The stage must skip what was committed since.
  it('a stage skips what the previous owner committed between its offset fetch and its fencing', () =>
    withTxTopics('eo-race', async ({ adapter, admin, input, out, dlq, groupId }) => {
      const previous = new PartitionTransactions({ adapter, groupId });
      let raced = false;
      class RacingTransactions extends PartitionTransactions {
        override async claim(topic: string, partition: number): Promise<bigint> {
          if (!raced) {
            raced = true;
            await previous.claim(topic, partition);
            await previous.commit(topic, partition, [{ topic: out, messages: [{ key: 'k', value: 'previous:0-4' }] }], '4', '0');
          }
          return super.claim(topic, partition);
        }
      }
      const processed: string[] = [];
      const echo: StageProcessor = {
        stage: 'echo',
        inputTopics: [input],
        process: async (m) => {
          processed.push(m.value!.toString());
          return [{ topic: out, message: { key: 'k', value: `stage:${m.value!.toString()}` } }];
        },
      };
      const producer = await adapter.producer();
      const runner = new StageRunner(echo, {
        adapter,
        producer,
        groupId,
        dlqTopic: dlq,
        metrics: new StewardMetrics(),
        logger: quietLogger(),
        transactions: new RacingTransactions({ adapter, groupId }),
      });
      try {
        await producer.send([{ topic: input, messages: Array.from({ length: 10 }, (_, i) => ({ key: 'k', value: `r${i}` })) }]);
        await runner.start();
        const values = await readCommitted(adapter, out, (v) => v.includes('stage:r9'));
        expect(raced).toBe(true);
        expect(values).toEqual(['previous:0-4', 'stage:r5', 'stage:r6', 'stage:r7', 'stage:r8', 'stage:r9']);
        expect((await admin.groupOffsets(groupId, input))[0]?.offset).toBe('10');
        // Skipped before processing, not refused at commit (that safety net redoes the whole batch).
        expect(processed).toEqual(['r5', 'r6', 'r7', 'r8', 'r9']);
      } finally {
        await runner.stop();
        await producer.disconnect();
        await previous.disconnect();
      }
    }), 60_000);

  it("a chunk over the broker's max.message.bytes for one partition commits in several requests", () =>
    withTxTopics('eo-big', async ({ adapter, input, out, groupId }) => {
      const tx = new PartitionTransactions({ adapter, groupId });
      try {
        await tx.claim(input, 0);
        // 1.2 MB for one partition: one record batch would exceed the broker's default 1 048 588 bytes.
        const messages = ['a', 'b', 'c'].map((v) => ({ key: 'k', value: v.repeat(400_000) }));
        await tx.commit(input, 0, [{ topic: out, messages }], '0', '0');
        const values = await readCommitted(adapter, out, (v) => v.length === 3);
        expect(values.map((v) => v[0] + v.length)).toEqual(['a400000', 'b400000', 'c400000']);
      } finally {
        await tx.disconnect();
      }
    }), 60_000);

  it('the open transaction of an owner that died mid-commit is aborted when the partition is claimed', () =>
    withTxTopics('eo-kill', async ({ adapter, admin, input, out, groupId }) => {
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
        await next.commit(input, 0, [{ topic: out, messages: [{ key: 'k', value: 'alive' }] }], '5', '0');
        expect(await readCommitted(adapter, out, (v) => v.includes('alive'))).toEqual(['alive']);
        expect((await admin.groupOffsets(groupId, input))[0]?.offset).toBe('6');
        await expect(tx.commit()).rejects.toThrow();
      } finally {
        await dead.disconnect().catch(() => undefined);
        await next.disconnect();
      }
    }), 60_000);

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
          // Replies are not: as many offsets on the replies topic as reply records (a decision and a verdict).
          const replies = await new Collector(adapter, [topics.replies]).start();
          try {
            await waitFor(() => replies.on(topics.replies).length >= 2, { timeoutMs: 10_000, message: 'replies' });
            expect((await admin.topicOffsets(topics.replies)).reduce((a, e) => a + Number(e.high), 0)).toBe(replies.on(topics.replies).length);
          } finally {
            await replies.stop();
          }
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
    const at = (partition: number, offset: string) => ({ topic: 'acgp.scoring', partition, offset });
    try {
      expect(await marks.turn('ev1', at(2, '40'), 'req-1')).toBe('first');
      // Redelivered after an aborted transaction: the same record is scored again.
      expect(await marks.turn('ev1', at(2, '40'), 'req-1')).toBe('first');
      // The tripwire stage's second scoring record for the trace, further down the partition (same request).
      expect(await marks.turn('ev1', at(2, '95'), 'req-1')).toBe('duplicate');
      // Another request for the same trace bytes (a client published it again): its client is answered.
      expect(await marks.turn('ev1', at(2, '96'), 'req-2')).toBe('reply-only');
      expect(await marks.turn('ev1', at(2, '97'))).toBe('duplicate');
      // A copy on another partition (re-partitioned topic) is scored, and the mark moves to it.
      expect(await marks.turn('ev1', at(5, '7'))).toBe('first');
      expect(await marks.turn('ev1', at(5, '8'))).toBe('duplicate');
      expect(await marks.turn('ev1', at(5, '9'), 'req-3')).toBe('reply-only');
      expect(await marks.turn('ev1', at(2, '98'))).toBe('first');
      expect(await redis.ttl(`${prefix}scored:ev1`)).toBeGreaterThan(50);
      expect(await marks.turn('ev2', at(2, '99'))).toBe('first');
    } finally {
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
    }
  });
});
