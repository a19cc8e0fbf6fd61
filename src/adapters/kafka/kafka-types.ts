/**
 * The small types the rest of Steward speaks instead of kafkajs' (records, batches, producer, consumer and admin
 * handles), implemented by KafkaAdapter in client.ts, the only module that imports kafkajs. Re-exported there.
 */
export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  ssl?: boolean | { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
}

/** A consumed record. Headers keep their raw bytes so the DLQ can forward them untouched. */
export interface InMessage {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  /** One value per key: the last, when a key repeats (the stages read routing and DLQ headers from here). */
  headers: Record<string, Buffer>;
  /** Every value of each key the record carries more than once (absent when none repeats), for the DLQ copy. */
  repeatedHeaders?: Record<string, Buffer[]>;
  timestampMs: number;
}

export interface OutMessage {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  /** An array value is one header per element, in order (a key the record carries more than once). */
  headers?: Record<string, string | Buffer | (string | Buffer)[]>;
  partition?: number;
  /** Epoch ms as a string (kafkajs convention); broker time when absent. */
  timestamp?: string;
}

export interface OutRecord {
  topic: string;
  messages: OutMessage[];
}

export interface StewardProducer {
  /** Resolves once every record was acknowledged (acks=all). One request per broker for the whole set. */
  send(records: OutRecord[]): Promise<void>;
  disconnect(): Promise<void>;
}

/**
 * A transactional producer (one transactional id). `commit` sends records and commits a consumer group's
 * offsets in one Kafka transaction: read_committed consumers (kafkajs' default) see the records only if the
 * offsets moved too. Creating one fences every earlier producer with the same id: their open transaction is
 * aborted and their next commit fails.
 */
export interface TransactionalProducer {
  commit(records: OutRecord[], offsets: { groupId: string; topic: string; partition: number; nextOffset: string }): Promise<void>;
  disconnect(): Promise<void>;
}

export interface BatchControl {
  /** Marks `offset` as processed; kafkajs commits resolved offsets on its interval, on rebalance and on stop. */
  resolveOffset(offset: string): void;
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
  commit(): Promise<void>;
  /** Commits `offset` (the last processed record) of this batch's partition now, resolved or not (runBatches sets it). */
  commitOffset?(offset: string): Promise<void>;
}

export interface InBatch {
  topic: string;
  partition: number;
  highWatermark: string;
  messages: InMessage[];
  /** The batch's last offset including control records (transaction markers), which never reach `messages`. */
  lastOffset?: string;
}

export interface RunOptions {
  /** Partitions processed concurrently; each partition's batches stay sequential (per-agent order). */
  partitionsConcurrently?: number;
  autoCommitIntervalMs?: number;
  /** Default true: kafkajs commits resolved offsets. False: only `commitOffset` commits (resolving just advances the fetch position). */
  autoCommit?: boolean;
}

export interface StewardConsumer {
  subscribe(topics: string[], fromBeginning?: boolean): Promise<void>;
  runBatches(handler: (batch: InBatch, ctl: BatchControl) => Promise<void>, opts?: RunOptions): Promise<void>;
  seek(topic: string, partition: number, offset: string): void;
  /** Stops fetching, waits for in-flight batches, commits resolved offsets. */
  stop(): Promise<void>;
  disconnect(): Promise<void>;
  onCrash(fn: (err: Error, willRestart: boolean) => void): void;
  onGroupJoin(fn: (assignment: Record<string, number[]>) => void): void;
}

export interface ConsumerOptions {
  groupId: string;
  /** Only these partitions of this topic (a one-member group then behaves like consumer.assign()). */
  assign?: { topic: string; partitions: number[] };
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  maxWaitTimeMs?: number;
  maxBytesPerPartition?: number;
}

export interface TopicSpec {
  topic: string;
  numPartitions: number;
  replicationFactor: number;
  configEntries?: { name: string; value: string }[];
}

export interface StewardAdmin {
  createTopics(topics: TopicSpec[]): Promise<string[]>;
  listTopics(): Promise<string[]>;
  deleteTopics(topics: string[]): Promise<void>;
  /** High watermark per partition. */
  topicOffsets(topic: string): Promise<{ partition: number; high: string; low: string }[]>;
  /** Committed offsets of a group on a topic (-1 when none). */
  groupOffsets(groupId: string, topic: string): Promise<{ partition: number; offset: string }[]>;
  partitionCount(topic: string): Promise<number>;
  /** One configuration value of a topic as the broker reports it (its default included), or undefined. */
  topicConfig(topic: string, name: string): Promise<string | undefined>;
  /** Per partition, the first offset whose record timestamp is >= `ms` (the high watermark when none is). */
  offsetsAtTime(topic: string, ms: number): Promise<{ partition: number; offset: string }[]>;
  /** Deletes consumer groups that have no members (a throwaway reader's). */
  deleteGroups(groupIds: string[]): Promise<void>;
  disconnect(): Promise<void>;
}

/** Records after `lastOffset` up to the partition's high watermark: 0 once caught up; undefined if unreadable. */
export function lagAfter(lastOffset: string, highWatermark: string): number | undefined {
  try {
    const lag = BigInt(highWatermark) - BigInt(lastOffset) - 1n;
    return lag > 0n ? Number(lag) : 0;
  } catch {
    return undefined;
  }
}
