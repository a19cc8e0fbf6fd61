// Helpers for integration tests. Every resource a test makes has a unique name and is removed afterwards,
// so test files can run in parallel against the same services.
//
//   import { services, uniqueName, withTopics, withRedis, withClickHouseDatabase } from './setup/helpers.js';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Redis } from 'ioredis';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { ServiceUrls } from './services.js';

export type { ServiceUrls } from './services.js';

/** The service URLs the global setup found (same as `inject('services')`). */
export function services(): ServiceUrls {
  return inject('services');
}

/** A name unique across processes and runs: `${prefix}-<time>-<random>`, safe for Kafka topics, groups, subjects. */
export function uniqueName(prefix = 'it'): string {
  const safe = prefix.replace(/[^A-Za-z0-9._-]/g, '-');
  return `${safe}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** Like uniqueName but an identifier ([a-z0-9_]), e.g. for ClickHouse databases and tables. */
export function uniqueIdent(prefix = 'steward_test'): string {
  const safe = prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return `${safe}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** Polls `fn` until it returns something other than undefined/false/null, or throws after `timeoutMs`. */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 30_000, intervalMs = 100, message = 'condition' }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${message}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

// ------------------------------------------------------------------ Kafka

/** A kafkajs client on the test brokers (errors-only logging). */
export function kafkaClient(clientId = uniqueName('it-client'), brokers: string[] = services().kafkaBrokers): Kafka {
  return new Kafka({ clientId, brokers, logLevel: logLevel.ERROR, retry: { retries: 8, initialRetryTime: 100 } });
}

export async function createTopics(brokers: string[], names: string[], partitions = 1): Promise<void> {
  const admin = kafkaClient(uniqueName('it-admin'), brokers).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: names.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })),
      // kafkajs' own waitForLeaders gives up on a transient UNKNOWN_TOPIC_OR_PARTITION right after creation
      // (seen as a CI flake); the poll below retries until every partition is served.
      waitForLeaders: false,
      timeout: 30_000,
    });
    // Ready when every partition has a leader in the metadata AND the leader serves it: right after
    // creation a broker can list the leader in its metadata cache a moment before its replica manager
    // has the partition (ListOffsets then fails with NOT_LEADER_OR_FOLLOWER).
    await waitFor(
      async () => {
        const { topics } = await admin.fetchTopicMetadata({ topics: names });
        if (!topics.every((t) => t.partitions.length === partitions && t.partitions.every((p) => p.leader >= 0))) return false;
        for (const name of names) await admin.fetchTopicOffsets(name);
        return true;
      },
      { timeoutMs: 30_000, message: `topics ${names.join(', ')}` },
    );
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopics(brokers: string[], names: string[]): Promise<void> {
  if (names.length === 0) return;
  const admin = kafkaClient(uniqueName('it-admin'), brokers).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const topics = names.filter((n) => existing.has(n));
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 30_000 });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Creates the topics, runs `fn`, and deletes them again (also when `fn` throws).
 * Pass names from uniqueName(), e.g. `withTopics([uniqueName('traces')], async ([traces]) => ...)`.
 */
export async function withTopics<T>(
  names: string[],
  fn: (names: string[]) => Promise<T>,
  { partitions = 1, brokers = services().kafkaBrokers }: { partitions?: number; brokers?: string[] } = {},
): Promise<T> {
  await createTopics(brokers, names, partitions);
  try {
    return await fn(names);
  } finally {
    await deleteTopics(brokers, names).catch((err: unknown) => {
      process.stderr.write(`[integration] could not delete topics ${names.join(', ')}: ${String(err)}\n`);
    });
  }
}

/**
 * Reads `count` messages from the beginning of `topic` with a fresh consumer group, then disconnects.
 * Rejects after `timeoutMs` with the messages seen so far in the error message.
 */
export async function consumeMessages(
  topic: string,
  count: number,
  { timeoutMs = 30_000, brokers = services().kafkaBrokers }: { timeoutMs?: number; brokers?: string[] } = {},
): Promise<KafkaMessage[]> {
  const consumer = kafkaClient(uniqueName('it-consumer'), brokers).consumer({
    groupId: uniqueName('it-group'),
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
  });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`consumed ${seen.length}/${count} messages from ${topic} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push(message);
            if (seen.length >= count) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch((err: unknown) => {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        });
    });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

// ------------------------------------------------------------------ Schema registry (Confluent API)

export function schemaRegistry(url: string = services().schemaRegistryUrl): SchemaRegistry {
  return new SchemaRegistry({ host: url });
}

/** Deletes subjects (soft, then permanent) through the Confluent API; missing subjects are ignored. */
export async function deleteSubjects(subjects: string[], url: string = services().schemaRegistryUrl): Promise<void> {
  for (const subject of subjects) {
    const base = `${url}/subjects/${encodeURIComponent(subject)}`;
    await fetch(base, { method: 'DELETE' }).catch(() => undefined);
    await fetch(`${base}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
  }
}

// ------------------------------------------------------------------ Redis

/** A unique key prefix (ending in ':') so parallel tests never see each other's keys. */
export function uniqueRedisPrefix(prefix = 'steward-test'): string {
  return `${uniqueName(prefix)}:`;
}

export function redisClient(url: string = services().redisUrl): Redis {
  return new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: false });
}

/** Deletes every key starting with `prefix`; returns how many were deleted. */
export async function deleteRedisPrefix(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  const pattern = `${prefix.replace(/([*?[\]\\])/g, '\\$1')}*`;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** Runs `fn` with a connected client and a unique key prefix; deletes the prefix's keys and quits after. */
export async function withRedis<T>(fn: (redis: Redis, prefix: string) => Promise<T>, url?: string): Promise<T> {
  const redis = redisClient(url);
  const prefix = uniqueRedisPrefix();
  try {
    return await fn(redis, prefix);
  } finally {
    await deleteRedisPrefix(redis, prefix).catch(() => 0);
    await redis.quit().catch(() => redis.disconnect());
  }
}

// ------------------------------------------------------------------ ClickHouse

export function clickhouseClient(database?: string, url: string = services().clickhouseUrl): ClickHouseClient {
  return createClient({ url, ...(database ? { database } : {}), request_timeout: 60_000 });
}

export interface TestDatabase {
  /** e.g. steward_test_m3x9k2_1a2b3c4d */
  name: string;
  /** A client whose default database is `name`. */
  client: ClickHouseClient;
  /** Drops the database and closes the client. */
  drop: () => Promise<void>;
}

/** Creates a fresh database `${prefix}_<unique>`; call `drop()` when done (or use withClickHouseDatabase). */
export async function createTestDatabase(prefix = 'steward_test', url: string = services().clickhouseUrl): Promise<TestDatabase> {
  const name = uniqueIdent(prefix);
  const admin = clickhouseClient(undefined, url);
  try {
    await admin.command({ query: `CREATE DATABASE ${name}` });
  } finally {
    await admin.close();
  }
  const client = clickhouseClient(name, url);
  return {
    name,
    client,
    drop: async () => {
      await client.close();
      const a = clickhouseClient(undefined, url);
      try {
        await a.command({ query: `DROP DATABASE IF EXISTS ${name}` });
      } finally {
        await a.close();
      }
    },
  };
}

/** Runs `fn` with a fresh database and drops it afterwards (also when `fn` throws). */
export async function withClickHouseDatabase<T>(fn: (db: TestDatabase) => Promise<T>, url?: string): Promise<T> {
  const db = await createTestDatabase('steward_test', url);
  try {
    return await fn(db);
  } finally {
    await db.drop().catch((err: unknown) => {
      process.stderr.write(`[integration] could not drop database ${db.name}: ${String(err)}\n`);
    });
  }
}
