// The adapter's idempotent producer after a request that failed on one partition but was written on another
// (real Kafka). kafkajs winds back the sequence numbers of every partition of a failed request, including
// those the broker wrote; the next send to such a partition would reuse written sequence numbers and be
// acknowledged as a duplicate without being written, or be refused as out of order forever.
import { describe, expect, it } from 'vitest';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { services, uniqueName, waitFor } from '../setup/helpers.js';

describe('idempotent producer after a partly written request (real Kafka)', () => {
  it('a send after the failure is written, whatever its size', async () => {
    const adapter = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: 'it-rollback' });
    const admin = await adapter.admin();
    const ok = uniqueName('rb-ok');
    const small = uniqueName('rb-small');
    await admin.createTopics([
      { topic: ok, numPartitions: 1, replicationFactor: 1 },
      { topic: small, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'max.message.bytes', value: '2000' }] },
    ]);
    const producer = await adapter.producer();
    try {
      const msg = (v: string) => ({ key: Buffer.from('k'), value: Buffer.from(v) });
      await producer.send([{ topic: ok, messages: [msg('first')] }]);
      // One request: two records the broker writes on `ok`, one it refuses on `small`.
      await expect(producer.send([{ topic: ok, messages: [msg('a0'), msg('a1')] }, { topic: small, messages: [msg('x'.repeat(5000))] }])).rejects.toBeTruthy();
      // Same record count as the written part (a duplicate if sequences were reused), then a different count.
      await producer.send([{ topic: ok, messages: [msg('c0'), msg('c1')] }]);
      await producer.send([{ topic: ok, messages: [msg('d0'), msg('d1'), msg('d2')] }]);
      await waitFor(async () => Number((await admin.topicOffsets(ok))[0].high) >= 8, { timeoutMs: 10_000, message: `all records on ${ok}` });
      const values: string[] = [];
      const consumer = adapter.consumer({ groupId: uniqueName('rb-read'), maxWaitTimeMs: 100 });
      await consumer.subscribe([ok], true);
      await consumer.runBatches(async (b, ctl) => {
        for (const m of b.messages) {
          values.push(m.value!.toString());
          ctl.resolveOffset(m.offset);
        }
      });
      await waitFor(() => values.length >= 8, { timeoutMs: 15_000, message: 'read back' });
      await consumer.disconnect();
      expect(values).toEqual(['first', 'a0', 'a1', 'c0', 'c1', 'd0', 'd1', 'd2']);
    } finally {
      await producer.disconnect();
      await admin.deleteTopics([ok, small]).catch(() => undefined);
      await admin.disconnect();
    }
  }, 60_000);
});
