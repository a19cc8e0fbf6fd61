/**
 * The only module that imports kafkajs. Everything else (serde, DLQ, consumers, the client SDK) speaks the
 * small types of kafka-types.ts (re-exported here), so the Kafka client can be swapped (e.g. for
 * @confluentinc/kafka-javascript) here alone.
 */
import {
  Kafka,
  logLevel as KafkaLogLevel,
  AssignerProtocol,
  type ConfigResourceTypes,
  Partitioners,
  type ICustomPartitioner,
  type Consumer as KConsumer,
  type Admin as KAdmin,
  type KafkaConfig,
  type PartitionAssigner,
  type SASLOptions,
  type Message as KMessage,
} from 'kafkajs';
import { StewardError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { coalescingProducer, splitRecords, MAX_REQUEST_BYTES } from './coalescing-producer.js';
import { renewingSender } from './renewing-producer.js';
import { kafkaError } from './kafka-error.js';
import { setHeaders } from './headers.js';
import type { KafkaSettings, StewardProducer, TransactionalProducer, InBatch, StewardConsumer, ConsumerOptions, StewardAdmin } from './kafka-types.js';

export { headerText, putHeader } from './headers.js';
export { lagAfter } from './kafka-types.js';
export type {
  KafkaSettings,
  InMessage,
  OutMessage,
  OutRecord,
  StewardProducer,
  TransactionalProducer,
  BatchControl,
  InBatch,
  RunOptions,
  StewardConsumer,
  ConsumerOptions,
  TopicSpec,
  StewardAdmin,
} from './kafka-types.js';

function toSasl(s: NonNullable<KafkaSettings['sasl']>): SASLOptions {
  return { mechanism: s.mechanism, username: s.username, password: s.password } as SASLOptions;
}

/** Assigns exactly the given partitions to the (single) member: kafkajs has no consumer.assign(). */
function fixedAssigner(topic: string, partitions: number[]): PartitionAssigner {
  return () => ({
    name: 'StewardFixedAssigner',
    version: 0,
    async assign({ members }) {
      return members.map((m, i) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment: i === 0 ? { [topic]: partitions } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return { name: 'StewardFixedAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
    },
  });
}

/**
 * kafkajs' DefaultPartitioner (Java-compatible murmur2 of the key), memoised per (partition count, key):
 * the stage keys every output by agent_id, so the same few thousand keys are hashed over and over
 * (murmur2 in JS plus a metadata filter per record, ~4% of the tripwire stage's CPU in bench/pipeline).
 * Same partition as without the cache; messages with an explicit partition or no key go to the default.
 */
export function cachingKeyPartitioner(maxKeys = 100_000): ICustomPartitioner {
  return () => {
    const base = Partitioners.DefaultPartitioner();
    const byCount = new Map<number, Map<string, number>>();
    return (args) => {
      const { message, partitionMetadata } = args;
      const key = message.key;
      if ((message.partition !== null && message.partition !== undefined) || typeof key !== 'string') return base(args);
      const n = partitionMetadata.length;
      let cache = byCount.get(n);
      if (!cache) byCount.set(n, (cache = new Map()));
      let p = cache.get(key);
      if (p === undefined) {
        p = base(args);
        if (cache.size >= maxKeys) cache.clear();
        cache.set(key, p);
      }
      return p;
    };
  };
}

function kafkaLogCreator(logger?: Logger) {
  return () =>
    ({ level, log }: { level: number; log: { message: string; [k: string]: unknown } }) => {
      if (!logger) return;
      const { message, ...rest } = log;
      if (level <= KafkaLogLevel.ERROR) logger.error(rest, `kafka: ${message}`);
      else if (level <= KafkaLogLevel.WARN) logger.warn(rest, `kafka: ${message}`);
      else logger.debug(rest, `kafka: ${message}`);
    };
}

/**
 * Producers re-read topic metadata at least this often. kafkajs silently drops a record whose explicit
 * partition is missing from its metadata (no error, the send resolves): a partition added to a topic is only
 * safe to address once every producer had time to refresh (src/process/pipeline.ts, replies topic).
 */
/** kafkajs' ConfigResourceTypes.TOPIC: the enum is not a named export Node's ESM loader finds in kafkajs (CommonJS). */
const TOPIC_RESOURCE = 2 as ConfigResourceTypes;

export const METADATA_MAX_AGE_MS = 30_000;

export class KafkaAdapter {
  private readonly kafka: Kafka;

  constructor(
    readonly settings: KafkaSettings,
    private readonly logger?: Logger,
  ) {
    const cfg: KafkaConfig = {
      clientId: settings.clientId,
      brokers: settings.brokers,
      ssl: settings.ssl,
      sasl: settings.sasl ? toSasl(settings.sasl) : undefined,
      connectionTimeout: settings.connectionTimeoutMs ?? 3000,
      requestTimeout: settings.requestTimeoutMs ?? 30000,
      logLevel: KafkaLogLevel.WARN,
      logCreator: kafkaLogCreator(logger),
      retry: { initialRetryTime: 100, retries: 8, maxRetryTime: 5000 },
    };
    this.kafka = new Kafka(cfg);
  }

  /**
   * Idempotent producer, acks=all, one request in flight. Sends issued while a request is in flight are
   * merged into the next request (in call order), so concurrent callers (partitions of a stage, chunks
   * overlapping their acknowledgement) share round trips, and no later send can overtake an earlier one
   * that kafkajs is still retrying (per-partition order holds across callers). A failed request fails
   * every send merged into it; nothing after it was sent meanwhile. `o.turn`: an idle producer sends at the end of
   * the event-loop turn, so one turn's sends share a request (coalescing-producer.ts; the ingress's batches, D53).
   */
  async producer(o: { turn?: boolean } = {}): Promise<StewardProducer> {
    const sender = await renewingSender(() => {
      const p = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: cachingKeyPartitioner(), metadataMaxAge: METADATA_MAX_AGE_MS });
      return {
        connect: () => p.connect(),
        sendBatch: (topicMessages) => p.sendBatch({ topicMessages: topicMessages as { topic: string; messages: KMessage[] }[], acks: -1 }),
        disconnect: () => p.disconnect(),
      };
    });
    return coalescingProducer(sender.sendBatch, sender.disconnect, undefined, o);
  }

  /**
   * Connected and initialised (InitProducerId), so the fencing of older producers with this id has happened
   * when it resolves. After a failed commit the producer may be unusable: disconnect it and create another.
   */
  async transactionalProducer(transactionalId: string, transactionTimeoutMs = 15_000): Promise<TransactionalProducer> {
    const p = this.kafka.producer({
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: transactionTimeoutMs,
      allowAutoTopicCreation: false,
      createPartitioner: cachingKeyPartitioner(),
      metadataMaxAge: METADATA_MAX_AGE_MS,
    });
    try {
      await p.connect();
      // kafkajs initialises a transactional id lazily, at the first transaction; one that registers nothing
      // sends no EndTxn.
      await (await p.transaction()).abort();
    } catch (e) {
      await p.disconnect().catch(() => undefined);
      // Typically the broker's transaction state log cannot be created (its replication factor, 3 by default,
      // exceeds the brokers): kafkajs then gives up on COORDINATOR_NOT_AVAILABLE without saying why.
      throw kafkaError(
        e,
        `transactional producer ${transactionalId} (Kafka transactions need the broker's transaction state log: transaction.state.log.replication.factor and .min.isr at most the number of brokers; consumer.exactly_once: [] does without)`,
      );
    }
    return {
      async commit(records, o) {
        const tx = await p.transaction();
        try {
          // In requests of at most 512 KiB, as the idempotent path: a chunk's outputs share one partition (one
          // agent) and would otherwise exceed the broker's max.message.bytes together.
          for (const piece of splitRecords(records, MAX_REQUEST_BYTES)) {
            await tx.sendBatch({ topicMessages: piece.records as { topic: string; messages: KMessage[] }[], acks: -1 });
          }
          await tx.sendOffsets({ consumerGroupId: o.groupId, topics: [{ topic: o.topic, partitions: [{ partition: o.partition, offset: o.nextOffset }] }] });
          await tx.commit();
        } catch (e) {
          if (tx.isActive()) await tx.abort().catch(() => undefined);
          throw kafkaError(e, `transaction of ${transactionalId} failed`);
        }
      },
      disconnect: () => p.disconnect(),
    };
  }

  consumer(opts: ConsumerOptions): StewardConsumer {
    const c: KConsumer = this.kafka.consumer({
      groupId: opts.groupId,
      partitionAssigners: opts.assign ? [fixedAssigner(opts.assign.topic, opts.assign.partitions)] : undefined,
      sessionTimeout: opts.sessionTimeoutMs ?? 10000,
      heartbeatInterval: opts.heartbeatIntervalMs ?? 1000,
      maxWaitTimeInMs: opts.maxWaitTimeMs ?? 500,
      maxBytesPerPartition: opts.maxBytesPerPartition ?? 4 * 1024 * 1024,
      allowAutoTopicCreation: false,
      retry: { initialRetryTime: 100, retries: 10, maxRetryTime: 5000 },
    });
    let connected: Promise<void> | undefined;
    const connect = () => (connected ??= c.connect());
    return {
      async subscribe(topics, fromBeginning = true) {
        await connect();
        await c.subscribe({ topics, fromBeginning });
      },
      async runBatches(handler, ro = {}) {
        await connect();
        await c.run({
          autoCommit: ro.autoCommit ?? true,
          autoCommitInterval: ro.autoCommitIntervalMs ?? 1000,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: ro.partitionsConcurrently ?? 4,
          eachBatch: async (p) => {
            const b = p.batch;
            const batch: InBatch = {
              topic: b.topic,
              partition: b.partition,
              highWatermark: b.highWatermark,
              lastOffset: b.lastOffset(),
              messages: b.messages.map((m) =>
                setHeaders({ topic: b.topic, partition: b.partition, offset: m.offset, key: m.key ?? null, value: m.value ?? null, headers: {}, timestampMs: Number(m.timestamp) }, m.headers),
              ),
            };
            await handler(batch, {
              resolveOffset: p.resolveOffset,
              heartbeat: p.heartbeat,
              isRunning: p.isRunning,
              isStale: p.isStale,
              commit: () => p.commitOffsetsIfNecessary(p.uncommittedOffsets()),
              commitOffset: (offset) =>
                p.commitOffsetsIfNecessary({ topics: [{ topic: b.topic, partitions: [{ partition: b.partition, offset: (BigInt(offset) + 1n).toString() }] }] }),
            });
          },
        });
      },
      seek: (topic, partition, offset) => c.seek({ topic, partition, offset }),
      stop: () => c.stop(),
      disconnect: () => c.disconnect(),
      onCrash(fn) {
        c.on(c.events.CRASH, (e) => fn(e.payload.error, e.payload.restart));
      },
      onGroupJoin(fn) {
        c.on(c.events.GROUP_JOIN, (e) => fn(e.payload.memberAssignment));
      },
    };
  }

  async admin(): Promise<StewardAdmin> {
    const a: KAdmin = this.kafka.admin();
    try {
      await a.connect();
    } catch (e) {
      // A connect that failed half-way may hold sockets or retry timers: close it before reporting.
      await a.disconnect().catch(() => undefined);
      throw e;
    }
    return {
      async createTopics(topics) {
        const existing = new Set(await a.listTopics());
        const todo = topics.filter((t) => !existing.has(t.topic));
        if (todo.length === 0) return [];
        await a.createTopics({ topics: todo, waitForLeaders: false, timeout: 30000 });
        // kafkajs' own waitForLeaders gives up on transient UNKNOWN_TOPIC_OR_PARTITION; poll instead.
        const names = todo.map((t) => t.topic);
        const deadline = Date.now() + 30000;
        for (;;) {
          try {
            const md = await a.fetchTopicMetadata({ topics: names });
            if (md.topics.length === names.length && md.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) break;
          } catch (e) {
            if (Date.now() > deadline) throw kafkaError(e, 'topics did not get leaders');
          }
          if (Date.now() > deadline) throw new StewardError('STEWARD_KAFKA', `topics did not get leaders: ${names.join(', ')}`, { retryable: true });
          await new Promise((r) => setTimeout(r, 100));
        }
        return names;
      },
      listTopics: () => a.listTopics(),
      async deleteTopics(topics) {
        if (topics.length > 0) await a.deleteTopics({ topics, timeout: 10000 });
      },
      async topicOffsets(topic) {
        // Right after creation a partition's leadership may still be moving: retry retriable errors.
        const deadline = Date.now() + 15000;
        for (;;) {
          try {
            const r = await a.fetchTopicOffsets(topic);
            return r.map((o) => ({ partition: o.partition, high: o.high, low: o.low }));
          } catch (e) {
            if ((e as { retriable?: boolean }).retriable !== true || Date.now() > deadline) throw kafkaError(e, `offsets of ${topic}`);
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      },
      async groupOffsets(groupId, topic) {
        const r = await a.fetchOffsets({ groupId, topics: [topic] });
        return (r[0]?.partitions ?? []).map((p) => ({ partition: p.partition, offset: p.offset }));
      },
      async partitionCount(topic) {
        const md = await a.fetchTopicMetadata({ topics: [topic] });
        return md.topics[0]?.partitions.length ?? 0;
      },
      async topicConfig(topic, name) {
        const r = await a.describeConfigs({ resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: [name] }], includeSynonyms: false });
        return r.resources[0]?.configEntries.find((e) => e.configName === name)?.configValue ?? undefined;
      },
      offsetsAtTime: (topic, ms) => a.fetchTopicOffsetsByTimestamp(topic, ms),
      async deleteGroups(groupIds) {
        await a.deleteGroups(groupIds);
      },
      disconnect: () => a.disconnect(),
    };
  }
}
