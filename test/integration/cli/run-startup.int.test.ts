// `steward run` startup failures, spawned as a user runs it; the Kafka case needs the real Redis (services).
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import { createTopics, topicNames, topicSpecs } from '../../../src/adapters/kafka/topics.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const SECRET = 'SuperSecretPw';
const KEY = 'MC4CAQAwBQYDK2VwBCIEIBs2QmZoSupErSeCrEtKeYmAtErIaLnotReallyPemXyZ';

/** `node bin/steward.js run …` with a clean service environment; resolves with its exit code, output and run time. */
function stewardRun(args: string[], env: Record<string, string>, killAfterMs: number): Promise<{ code: number | null; stderr: string; ms: number }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(KAFKA_BROKERS|REDIS_URL|CLICKHOUSE_URL|SCHEMA_REGISTRY_URL|STEWARD_.*)$/.test(k)));
  const t0 = Date.now();
  const child = spawn(process.execPath, [join(root, 'bin/steward.js'), 'run', '--config', 'steward.example.yaml', ...args], { cwd: root, env: { ...base, ...env } as NodeJS.ProcessEnv });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  child.stdout.resume();
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, stderr, ms: Date.now() - t0 });
    });
  });
}

const reachable = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect({ host, port, timeout: 1000 }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });

let redisUp = false;
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:16379';
beforeAll(async () => {
  const u = new URL(REDIS);
  redisUp = await reachable(u.hostname, Number(u.port || 6379));
});

describe.concurrent('steward run: a failed startup exits non-zero', () => {
  it('unreachable Redis: exits 1 naming Redis without the password (the metrics server does not outlive it)', { timeout: 60_000 }, async () => {
    const r = await stewardRun(['--stages', 'trust-debt', '--metrics-port', '0'], { REDIS_URL: `redis://:${SECRET}@127.0.0.1:1`, KAFKA_BROKERS: '127.0.0.1:1' }, 45_000);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(30_000);
    expect(r.stderr).toContain('STEWARD_STATE_UNAVAILABLE: redis not reachable at redis://:***@127.0.0.1:1');
    expect(r.stderr).not.toContain(SECRET);
  });

  it('unreachable Kafka: exits 1 naming the brokers', { timeout: 90_000 }, async (ctx) => {
    if (!redisUp) ctx.skip();
    const r = await stewardRun(['--stages', 'trust-debt', '--metrics-port', '0'], { REDIS_URL: REDIS, KAFKA_BROKERS: '127.0.0.1:1' }, 75_000);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(60_000);
    expect(r.stderr).toMatch(/STEWARD_KAFKA: kafka failed at startup \(brokers 127\.0\.0\.1:1\): .*ECONNREFUSED/);
  });

  it('topics that do not exist: exits 1 naming them and the command that creates them', { timeout: 90_000 }, async (ctx) => {
    if (!redisUp) ctx.skip();
    const prefix = `missing-${Date.now().toString(36)}`;
    const r = await stewardRun(['--stages', 'trust-debt', '--metrics-port', '0'], { REDIS_URL: REDIS, KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:19092', STEWARD_TOPIC_PREFIX: prefix }, 75_000);
    expect(r.code).toBe(1);
    // only the topics the trust-debt stage reads and writes
    expect(r.stderr).toContain(`topics missing: ${prefix}.decisions, ${prefix}.verdicts, ${prefix}.reviews, ${prefix}.trust-debt, ${prefix}.gate, ${prefix}.dlq (run`);
    expect(r.stderr).toContain('run `steward topics create`');
  });

  // Before, the consumers crashed, were replaced every 2 s and failed again, for ever, in a process that looked up.
  it('a consumer group the broker refuses (session timeout above its maximum): exits 1 naming the stage and the reason', { timeout: 90_000 }, async (ctx) => {
    if (!redisUp) ctx.skip();
    const prefix = `refused-${Date.now().toString(36)}`;
    const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:19092';
    const admin = await new KafkaAdapter({ brokers: brokers.split(','), clientId: 'it-refused' }).admin();
    const dir = mkdtempSync(join(tmpdir(), 'steward-refused-'));
    try {
      await createTopics(admin, topicNames(prefix), { partitions: 1, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 });
      writeFileSync(join(dir, 'steward.yaml'), `consumer:\n  session_timeout_ms: 3600000\nblueprints:\n  dir: ${join(root, 'blueprints')}\n  agents: ${join(root, 'blueprints/agents.yaml')}\n`);
      const r = await stewardRun(['--stages', 'tripwire', '--metrics-port', '0', '--config', join(dir, 'steward.yaml')], { REDIS_URL: REDIS, KAFKA_BROKERS: brokers, STEWARD_TOPIC_PREFIX: prefix }, 75_000);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/stage tripwire: the broker refused its consumer group \(The session timeout is not within the range allowed by the broker/);
    } finally {
      await admin.deleteTopics(Object.values(topicNames(prefix))).catch(() => undefined);
      await admin.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // The co-partitioning check itself is tested in scorer-join.int.test.ts; this is its wiring into start-up
  // (pipeline-preflight): without it a join scorer would start and read traces across every partition.
  it('scorer_input: join with traces at 3 partitions and decisions at 2: exits 1 naming both topics', { timeout: 90_000 }, async (ctx) => {
    if (!redisUp) ctx.skip();
    const prefix = `copart-${Date.now().toString(36)}`;
    const names = topicNames(prefix);
    const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:19092';
    const admin = await new KafkaAdapter({ brokers: brokers.split(','), clientId: 'it-copart' }).admin();
    const dir = mkdtempSync(join(tmpdir(), 'steward-copart-'));
    try {
      const layout = { partitions: 2, replicationFactor: 1, replyPartitions: 1, replyRetentionMs: 600_000 };
      await admin.createTopics(topicSpecs(names, layout).map((t) => (t.topic === names.traces ? { ...t, numPartitions: 3 } : t)));
      writeFileSync(join(dir, 'steward.yaml'), `consumer:\n  scorer_input: join\nblueprints:\n  dir: ${join(root, 'blueprints')}\n  agents: ${join(root, 'blueprints/agents.yaml')}\n`);
      const r = await stewardRun(['--stages', 'scorer', '--metrics-port', '0', '--config', join(dir, 'steward.yaml')], { REDIS_URL: REDIS, KAFKA_BROKERS: brokers, STEWARD_TOPIC_PREFIX: prefix, STEWARD_ALLOW_EPHEMERAL_KEY: '1' }, 75_000);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`STEWARD_CONFIG: consumer.scorer_input: join needs ${names.traces} and ${names.decisions} with the same partition count (they have 3 and 2)`);
    } finally {
      await admin.deleteTopics(Object.values(names)).catch(() => undefined);
      await admin.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a signing key that is not PEM is never echoed', { timeout: 30_000 }, async () => {
    const r = await stewardRun(['--stages', 'scorer', '--metrics-port', '0'], { STEWARD_SIGNING_KEY: KEY, REDIS_URL: 'redis://127.0.0.1:1', KAFKA_BROKERS: '127.0.0.1:1' }, 25_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`is not PEM and not a readable file (value hidden, ${KEY.length} chars)`);
    expect(r.stderr).not.toContain(KEY.slice(0, 12));
  });

  it('--metrics-port abc is a usage error (exit 2), not a stack trace', { timeout: 30_000 }, async () => {
    const r = await stewardRun(['--metrics-port', 'abc'], {}, 25_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--metrics-port "abc": expected an integer port 0..65535');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('STEWARD_METRICS_PORT=abc names the variable', { timeout: 30_000 }, async () => {
    const r = await stewardRun([], { STEWARD_METRICS_PORT: 'abc' }, 25_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('STEWARD_METRICS_PORT=abc: $.observability.port must be integer');
    expect(r.stderr).not.toMatch(/\(\+env\):\d+:\d+/);
  });
});
