// Finds the real services the integration tests run against, in this order:
//   1. URLs in the environment: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL, CLICKHOUSE_URL (all four);
//   2. a Docker engine that answers: containers started with testcontainers;
//   3. scripts/services.sh (native servers on loopback, no Docker).
// STEWARD_TEST_SERVICES=env|docker|native forces one source.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export interface ServiceUrls {
  /** Kafka bootstrap servers, e.g. ['127.0.0.1:19092'] (KAFKA_BROKERS is comma separated). */
  kafkaBrokers: string[];
  /** Confluent-compatible schema registry base URL, e.g. http://127.0.0.1:18081/apis/ccompat/v7 */
  schemaRegistryUrl: string;
  /** e.g. redis://127.0.0.1:16379 */
  redisUrl: string;
  /** ClickHouse HTTP interface, e.g. http://127.0.0.1:18123 (user default, no password) */
  clickhouseUrl: string;
  /** Where they came from. */
  source: 'env' | 'docker' | 'native';
}

// What the global setup provides: `inject('services')` in any integration test.
declare module 'vitest' {
  export interface ProvidedContext {
    services: ServiceUrls;
  }
}

export interface StartedServices {
  urls: ServiceUrls;
  stop: () => Promise<void>;
}

export const ENV_NAMES = {
  kafkaBrokers: 'KAFKA_BROKERS',
  schemaRegistryUrl: 'SCHEMA_REGISTRY_URL',
  redisUrl: 'REDIS_URL',
  clickhouseUrl: 'CLICKHOUSE_URL',
} as const;

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SERVICES_SCRIPT = path.join(REPO_ROOT, 'scripts', 'services.sh');

const log = (msg: string): void => {
  process.stderr.write(`[integration] ${msg}\n`);
};

export function parseBrokers(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The URLs as environment variables (the names Steward itself and the tests read). */
export function toEnv(urls: ServiceUrls): Record<string, string> {
  return {
    KAFKA_BROKERS: urls.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: urls.schemaRegistryUrl,
    REDIS_URL: urls.redisUrl,
    CLICKHOUSE_URL: urls.clickhouseUrl,
  };
}

export function fromEnv(env: NodeJS.ProcessEnv = process.env): ServiceUrls | undefined {
  const values = Object.values(ENV_NAMES).map((n) => env[n]);
  if (values.every((v) => v !== undefined && v !== '')) {
    return {
      kafkaBrokers: parseBrokers(env.KAFKA_BROKERS!),
      schemaRegistryUrl: env.SCHEMA_REGISTRY_URL!.replace(/\/+$/, ''),
      redisUrl: env.REDIS_URL!,
      clickhouseUrl: env.CLICKHOUSE_URL!.replace(/\/+$/, ''),
      source: 'env',
    };
  }
  const set = Object.values(ENV_NAMES).filter((n) => env[n]);
  if (set.length > 0) {
    log(`only ${set.join(', ')} set; environment URLs are used only when all four are set`);
  }
  return undefined;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The runtime host when a Docker (or compatible) engine answers within a few seconds, else undefined. */
export async function dockerHost(timeoutMs = 5_000): Promise<string | undefined> {
  let tc: typeof import('testcontainers');
  try {
    tc = await import('testcontainers');
  } catch (err) {
    log(`testcontainers could not be loaded (${(err as Error).message.split('\n')[0]}); not looking for Docker`);
    return undefined;
  }
  try {
    const client = await withTimeout(tc.getContainerRuntimeClient(), timeoutMs, 'container runtime');
    return client.info.containerRuntime.host;
  } catch (err) {
    log(`no container runtime (${(err as Error).message.split('\n')[0]})`);
    return undefined;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const IMAGES = {
  kafka: 'apache/kafka:3.9.1',
  registry: 'apicurio/apicurio-registry:3.1.7',
  redis: 'redis:7',
  clickhouse: 'clickhouse/clickhouse-server:25.8',
} as const;

export async function startDocker(host: string): Promise<StartedServices> {
  const { GenericContainer, Wait } = await import('testcontainers');
  // Kafka advertises the address clients must use, so its host port is chosen before start.
  const kafkaPort = await freePort();
  const kafka = new GenericContainer(IMAGES.kafka)
    .withExposedPorts({ container: 9092, host: kafkaPort })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${kafkaPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_NUM_PARTITIONS: '1',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'true',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '4',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(180_000);
  const registry = new GenericContainer(IMAGES.registry)
    .withExposedPorts(8080)
    .withEnvironment({
      APICURIO_REST_DELETION_GROUP_ENABLED: 'true',
      APICURIO_REST_DELETION_ARTIFACT_ENABLED: 'true',
      APICURIO_REST_DELETION_ARTIFACT_VERSION_ENABLED: 'true',
    })
    .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080).forStatusCode(200))
    .withStartupTimeout(180_000);
  const redis = new GenericContainer(IMAGES.redis)
    .withExposedPorts(6379)
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/));
  const clickhouse = new GenericContainer(IMAGES.clickhouse)
    .withExposedPorts(8123)
    .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1' })
    .withUlimits({ nofile: { soft: 262144, hard: 262144 } })
    .withWaitStrategy(Wait.forHttp('/ping', 8123).forStatusCode(200))
    .withStartupTimeout(180_000);

  log(`starting containers on ${host}`);
  const settled = await Promise.allSettled([kafka.start(), registry.start(), redis.start(), clickhouse.start()]);
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async (): Promise<void> => {
    await Promise.allSettled(started.map((c) => c.stop()));
  };
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const [k, r, rd, ch] = started as [(typeof started)[0], (typeof started)[0], (typeof started)[0], (typeof started)[0]];
  return {
    urls: {
      kafkaBrokers: [`${k.getHost()}:${k.getMappedPort(9092)}`],
      schemaRegistryUrl: `http://${r.getHost()}:${r.getMappedPort(8080)}/apis/ccompat/v7`,
      redisUrl: `redis://${rd.getHost()}:${rd.getMappedPort(6379)}`,
      clickhouseUrl: `http://${ch.getHost()}:${ch.getMappedPort(8123)}`,
      source: 'docker',
    },
    stop,
  };
}

function run(args: string[], capture: boolean, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SERVICES_SCRIPT, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'],
    });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`scripts/services.sh ${args.join(' ')} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/** Starts (or reuses) the native servers with scripts/services.sh and reads their URLs. They stay up. */
export async function startNative(): Promise<StartedServices> {
  log('using scripts/services.sh (native servers)');
  // A cold start fetches Kafka and Apicurio from Maven Central: allow for it.
  await run(['up'], false, 15 * 60_000);
  const out = await run(['env'], true, 30_000);
  const env: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^export ([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!.replace(/^['"]|['"]$/g, '');
  }
  const urls = fromEnv(env);
  if (!urls) throw new Error(`scripts/services.sh env printed no complete set of URLs:\n${out}`);
  return { urls: { ...urls, source: 'native' }, stop: async () => {} };
}

/**
 * A fresh broker creates __consumer_offsets and __transaction_state on first use, and clients get
 * "coordinator is loading" until they exist. Trigger both once here so that tests don't pay for it.
 * Failures are only logged: the tests themselves will report a broker that does not work.
 */
export async function warmUpKafka(brokers: string[], timeoutMs = 60_000): Promise<void> {
  const { Kafka, logLevel } = await import('kafkajs');
  const kafka = new Kafka({ clientId: 'steward-it-warmup', brokers, logLevel: logLevel.NOTHING, retry: { retries: 20 } });
  const admin = kafka.admin();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const t0 = Date.now();
  try {
    await withTimeout(
      (async () => {
        await admin.connect();
        await admin.fetchOffsets({ groupId: 'steward-it-warmup', topics: [] }).catch(() => undefined);
        await producer.connect();
      })(),
      timeoutMs,
      'kafka warm-up',
    );
    log(`kafka warm-up ${Date.now() - t0} ms`);
  } catch (err) {
    log(`kafka warm-up failed: ${(err as Error).message}`);
  } finally {
    await Promise.allSettled([admin.disconnect(), producer.disconnect()]);
  }
}

export async function findServices(): Promise<StartedServices> {
  const forced = process.env.STEWARD_TEST_SERVICES;
  if (forced && !['env', 'docker', 'native'].includes(forced)) {
    throw new Error(`STEWARD_TEST_SERVICES must be env, docker or native (got ${forced})`);
  }
  if (!forced || forced === 'env') {
    const urls = fromEnv();
    if (urls) return { urls, stop: async () => {} };
    if (forced) throw new Error(`STEWARD_TEST_SERVICES=env but not all of ${Object.values(ENV_NAMES).join(', ')} are set`);
  }
  if (!forced || forced === 'docker') {
    const host = await dockerHost();
    if (host) return startDocker(host);
    if (forced) throw new Error('STEWARD_TEST_SERVICES=docker but no container runtime answered');
  }
  return startNative();
}
