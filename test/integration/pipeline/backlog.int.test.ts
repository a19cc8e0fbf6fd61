// backlogBefore on real Kafka: a group with unread records stamped before a cutoff is behind it; once it
// committed past them (or when only newer records are unread) it is not.
import { describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { backlogBefore, pipelineBacklogBefore } from '../../../src/adapters/kafka/backlog.js';
import { services, uniqueName } from '../setup/helpers.js';

describe('backlogBefore (real Kafka)', () => {
  it('reports the partitions whose group still has records older than the cutoff to read', async () => {
    const brokers = services().kafkaBrokers;
    const adapter = new KafkaAdapter({ brokers, clientId: 'it-backlog' });
    const admin = await adapter.admin();
    const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING });
    const kadmin = kafka.admin();
    await kadmin.connect();
    const topic = uniqueName('backlog');
    const group = uniqueName('backlog-group');
    await admin.createTopics([{ topic, numPartitions: 2, replicationFactor: 1 }]);
    const producer = kafka.producer();
    await producer.connect();
    const now = Date.now();
    try {
      // Partition 0: three records from 2 h ago, then two from now. Partition 1: only records from now.
      await producer.send({ topic, messages: [0, 1, 2].map((i) => ({ partition: 0, value: `old-${i}`, timestamp: String(now - 2 * 3_600_000 + i) })) });
      await producer.send({ topic, messages: [0, 1].map((i) => ({ partition: 0, value: `new-${i}`, timestamp: String(now + i) })) });
      await producer.send({ topic, messages: [0, 1].map((i) => ({ partition: 1, value: `new-${i}`, timestamp: String(now + i) })) });
      const cutoff = now - 3_600_000;
      // Never committed: read from the start, so partition 0's old records are still ahead; unless asked only
      // about a group that has started (a stage the deployment may not run).
      expect(await backlogBefore(admin, group, [topic], cutoff)).toEqual([`${topic}/0`]);
      expect(await backlogBefore(admin, group, [topic], cutoff, { ifStarted: true })).toEqual([]);
      expect(await pipelineBacklogBefore(admin, [{ groupId: group, topics: [topic], ifStarted: true }, { groupId: group, topics: [topic] }], cutoff)).toEqual([`${topic}/0`]);
      // Committed up to offset 2 (records 0, 1 read): old-2 is still unread.
      await kadmin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '2' }, { partition: 1, offset: '0' }] });
      expect(await backlogBefore(admin, group, [topic], cutoff)).toEqual([`${topic}/0`]);
      expect(await backlogBefore(admin, group, [topic], cutoff, { ifStarted: true })).toEqual([`${topic}/0`]);
      // Past the old records: only newer ones are unread, nothing holds the sweep back.
      await kadmin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '3' }, { partition: 1, offset: '0' }] });
      expect(await backlogBefore(admin, group, [topic], cutoff)).toEqual([]);
    } finally {
      await producer.disconnect();
      await admin.deleteTopics([topic]).catch(() => undefined);
      await kadmin.deleteGroups([group]).catch(() => undefined);
      await kadmin.disconnect();
      await admin.disconnect();
    }
  }, 60_000);
});
