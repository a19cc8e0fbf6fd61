// Raw consume → produce loops for the pipeline benches, one per Kafka client (kafkajs, @platformatic/kafka):
// the baseline the tripwire stage is divided by, and the same loop producing the stage's output volume.
import { Kafka } from 'kafkajs';
import { Consumer, Producer, ProduceAcks, compatibilityPartitioner, type Message } from '@platformatic/kafka';

/** Each input answered with these outputs (topic, value) instead of a copy of itself, sent per 500 inputs. */
export type OutShape = { topic: string; value: string }[];

/**
 * Raw kafkajs consume → produce. With `shape`, each input is answered with the given outputs instead of a
 * copy (the volume the tripwire stage produces), sent per 500 inputs like the stage's chunks.
 */
export async function kafkajsPassthrough(kafka: Kafka, inTopic: string, outTopic: string, n: number, partitions: number, shape?: OutShape, group = `${inTopic}-pass`): Promise<number> {
  const producer = kafka.producer();
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 100 });
  await Promise.all([producer.connect(), consumer.connect()]);
  await consumer.subscribe({ topic: inTopic, fromBeginning: true });
  let seen = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const t0 = performance.now();
  await consumer.run({
    partitionsConsumedConcurrently: partitions,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (!shape) await producer.send({ topic: outTopic, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) });
      else {
        for (let i = 0; i < batch.messages.length; i += 500) {
          const ms = batch.messages.slice(i, i + 500);
          await producer.sendBatch({ topicMessages: shape.map((o) => ({ topic: o.topic, messages: ms.map((m) => ({ key: m.key, value: o.value })) })) });
        }
      }
      resolveOffset(batch.lastOffset());
      await heartbeat();
      seen += batch.messages.length;
      if (seen >= n) resolveDone();
    },
  });
  await done;
  const secs = (performance.now() - t0) / 1000;
  await Promise.all([producer.disconnect(), consumer.disconnect()]);
  return n / secs;
}

/**
 * The same loop on @platformatic/kafka: a consumer stream (it fetches ahead while records are handled), the
 * records a fetch pushed collected in one turn and sent in one request (acks=all, kafkajs' murmur2
 * partitioner, so keys land where kafkajs puts them), then each partition's last offset committed — one send
 * in flight, as the kafkajs loop's eachBatch awaits its send before committing.
 */
export async function platformaticPassthrough(brokers: string[], inTopic: string, outTopic: string, n: number, shape?: OutShape, group = `${inTopic}-ppass`): Promise<number> {
  const producer = new Producer({ clientId: 'bench-pf', bootstrapBrokers: brokers, acks: ProduceAcks.ALL, partitioner: compatibilityPartitioner });
  const consumer = new Consumer({ clientId: 'bench-pf', groupId: group, bootstrapBrokers: brokers, maxWaitTime: 100 });
  let seen = 0;
  let resolveDone!: () => void;
  let failed!: (e: unknown) => void;
  const done = new Promise<void>((r, f) => ((resolveDone = r), (failed = f)));
  const t0 = performance.now();
  const stream = await consumer.consume({ topics: [inTopic], mode: 'committed', fallbackMode: 'earliest', autocommit: false, maxWaitTime: 100 });
  const values = (shape ?? []).map((o) => ({ topic: o.topic, value: Buffer.from(o.value) }));
  let buf: Message[] = [];
  let busy = false;
  const flush = async () => {
    busy = true;
    try {
      while (buf.length) {
        const ms = buf;
        buf = [];
        // per 1 000 inputs, concurrently: a whole fetch in one request exceeds the broker's max.message.bytes
        if (!shape) {
          const sends: Promise<unknown>[] = [];
          for (let i = 0; i < ms.length; i += 1000) sends.push(producer.send({ messages: ms.slice(i, i + 1000).map((m) => ({ topic: outTopic, key: m.key, value: m.value })) }));
          await Promise.all(sends);
        } else {
          for (let i = 0; i < ms.length; i += 500) {
            const part = ms.slice(i, i + 500);
            await producer.send({ messages: values.flatMap((o) => part.map((m) => ({ topic: o.topic, key: m.key, value: o.value }))) });
          }
        }
        const last = new Map<number, Message>();
        for (const m of ms) last.set(m.partition, m);
        await Promise.all([...last.values()].map((m) => m.commit()));
        seen += ms.length;
        if (stream.isPaused()) stream.resume();
      }
      if (seen >= n) resolveDone();
    } catch (e) {
      failed(e);
    } finally {
      busy = false;
    }
  };
  let scheduled = false;
  stream.on('data', (m: Message) => {
    buf.push(m);
    if (buf.length > 10_000) stream.pause();
    if (!busy && !scheduled) {
      scheduled = true;
      // one turn later: the rest of this fetch's records are pushed synchronously after this one
      setImmediate(() => {
        scheduled = false;
        if (!busy) void flush();
      });
    }
  });
  stream.on('error', failed);
  void done.catch((e: { errors?: { response?: unknown }[] }) => console.error(JSON.stringify(e.errors?.map((x) => x.response), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).slice(0, 2000)));
  await done;
  const secs = (performance.now() - t0) / 1000;
  await stream.close();
  await Promise.all([producer.close(), consumer.close(true)]);
  return n / secs;
}
