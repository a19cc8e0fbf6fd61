/**
 * Staged blueprint rollouts (ACGP-1004 §13.5; docs/rollout.md). The state is shared in Redis: every Steward
 * instance picks it up within rollout.refresh_ms, and an agent's arm is a stable hash of its id.
 *
 *   steward rollout set NAME --canary VERSION --stable VERSION (--percent P | --stage STAGE) [--by WHO] [--reason TEXT]
 *       start or raise a rollout; --stage takes the percentage of the canary blueprint's migration stage
 *       (read from --blueprints DIR / blueprints.dir). Both versions must load from that directory.
 *   steward rollout status [NAME] [--json]
 *   steward rollout rollback NAME --by WHO [--reason TEXT]      manual rollback (manual_trigger): canary to 0 %
 * Every change is published on acgp.rollouts with its ledger entry on acgp.ledger (--no-publish: Redis only).
 * Common: [--config FILE] [--redis URL] [--prefix P] [--topic-prefix P] [--blueprints DIR].
 */
import { parseArgs } from 'node:util';
import { createRedisClient } from '../../adapters/redis/client.js';
import { RedisRolloutStore } from '../../adapters/redis/rollout-store.js';
import { KafkaAdapter } from '../../adapters/kafka/client.js';
import { topicNames } from '../../adapters/kafka/topics.js';
import { watchBlueprints } from '../../adapters/fs/blueprint-watcher.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import type { RolloutState } from '../../engine/rollout/arm.js';
import { rollbackEvent, rolloutLedgerDraft, ROLLOUT_LEDGER_AGENT, setEvent, type RolloutEvent } from '../../engine/rollout/events.js';
import { StewardError } from '../../errors.js';

export const USAGE = [
  'usage: steward rollout set NAME --canary VERSION --stable VERSION (--percent P | --stage STAGE) [--by WHO] [--reason TEXT]',
  '       steward rollout status [NAME] [--json]',
  '       steward rollout rollback NAME --by WHO [--reason TEXT]',
  '       (all: [--config FILE] [--redis URL] [--prefix P] [--topic-prefix P] [--blueprints DIR] [--no-publish])',
].join('\n');

const OPTIONS = {
  canary: { type: 'string' },
  stable: { type: 'string' },
  percent: { type: 'string' },
  stage: { type: 'string' },
  by: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  redis: { type: 'string' },
  prefix: { type: 'string' },
  'topic-prefix': { type: 'string' },
  blueprints: { type: 'string' },
  'no-publish': { type: 'boolean' },
} as const;

const usage = (msg?: string) => new StewardError('STEWARD_USAGE', msg ? `${msg}\n${USAGE}` : USAGE);
const print = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');

async function publish(v: { config?: string; 'topic-prefix'?: string; 'no-publish'?: boolean }, ev: RolloutEvent): Promise<void> {
  if (v['no-publish']) return;
  const cfg = loadStewardConfig(v.config);
  const topics = topicNames(v['topic-prefix'] ?? cfg.topics.prefix);
  const producer = await new KafkaAdapter(cfg.kafka).producer();
  try {
    await producer.send([
      { topic: topics.rollouts, messages: [{ key: ev.blueprint, value: JSON.stringify(ev) }] },
      { topic: topics.ledger, messages: [{ key: ROLLOUT_LEDGER_AGENT, value: JSON.stringify(rolloutLedgerDraft(ev)) }] },
    ]);
  } catch (e) {
    throw new StewardError('STEWARD_KAFKA', `rollout ${ev.event_id} is in effect (Redis) but was not published: ${(e as Error).message}`, { cause: e, retryable: true });
  } finally {
    await producer.disconnect();
  }
}

/** Checks both versions load from the blueprint directory; returns the percentage of `stage` when asked. */
async function checkVersions(name: string, stable: string, canary: string, stage: string | undefined, v: { config?: string; blueprints?: string }): Promise<number | undefined> {
  const cfg = loadStewardConfig(v.config);
  const holder = await watchBlueprints(v.blueprints ?? cfg.blueprints.dir, { config: cfg.engine, watch: false });
  try {
    const set = holder.current();
    for (const ver of [stable, canary]) if (!set.get(`${name}@${ver}`) || set.get(`${name}@${ver}`)!.version !== ver) throw new StewardError('STEWARD_ROLLOUT_VERSION', `${name}@${ver} is not in the blueprint set (${v.blueprints ?? cfg.blueprints.dir})`);
    if (stage === undefined) return undefined;
    const mig = set.get(`${name}@${canary}`)!.resolved.migration as { stages?: { name?: string; percentage?: number }[] } | undefined;
    const st = mig?.stages?.find((s) => s.name === stage);
    if (!st || typeof st.percentage !== 'number') throw new StewardError('STEWARD_ROLLOUT_STAGE', `${name}@${canary} declares no migration stage '${stage}' (stages: ${(mig?.stages ?? []).map((s) => s.name).join(', ') || 'none'})`);
    return st.percentage;
  } finally {
    holder.close();
  }
}

const line = (s: RolloutState) => `${s.name}  stable ${s.stableVersion}  canary ${s.canaryVersion}  ${s.percent}%  gen ${s.generation}  ${new Date(s.updatedAtMs).toISOString()}${s.reason ? `  ${s.reason}` : ''}`;

export async function run(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const [sub, name, ...extra] = positionals;
  if (extra.length > 0 || !['set', 'status', 'rollback'].includes(sub ?? '')) throw usage();
  const cfg = loadStewardConfig(v.config);
  // The deployment's Redis: a Cluster client when redis.cluster_nodes is set (a single-server client there was told
  // MOVED for the {rollout} slot whenever redis.url named another master); --redis names one server.
  const redis = createRedisClient(v.redis ?? cfg.redis.url, v.redis ? [] : cfg.redis.clusterNodes, { maxRetriesPerRequest: 1 });
  const store = new RedisRolloutStore(redis, v.prefix ?? cfg.redis.keyPrefix);
  try {
    if (sub === 'status') {
      const list = (await store.list()).filter((s) => name === undefined || s.name === name);
      if (v.json) for (const s of list) print(s);
      else if (list.length === 0) process.stdout.write('no rollouts\n');
      else for (const s of list) process.stdout.write(line(s) + '\n');
      return 0;
    }
    if (!name) throw usage(`${sub} needs a blueprint NAME`);
    const now = Date.now();
    if (sub === 'rollback') {
      if (!v.by) throw usage('rollback needs --by WHO');
      const before = await store.get(name);
      if (!before) throw new StewardError('STEWARD_ROLLOUT_UNKNOWN', `no rollout of ${name}`);
      const res = await store.rollback(name, before.generation, now, v.reason ?? `manual rollback by ${v.by}`);
      if (!res.won) throw new StewardError('STEWARD_ROLLOUT_STATE', `rollout of ${name} is already at 0 % or changed meanwhile (generation ${res.generation}); see steward rollout status`);
      const ev = { ...rollbackEvent(before, 'manual', res.generation, now, v.by), reason: v.reason ?? 'manual rollback' };
      print(ev);
      await publish(v, ev);
      return 0;
    }
    if (!v.canary || !v.stable) throw usage('set needs --canary and --stable');
    if ((v.percent === undefined) === (v.stage === undefined)) throw usage('set needs exactly one of --percent and --stage');
    const stagePct = await checkVersions(name, v.stable, v.canary, v.stage, v);
    const percent = stagePct ?? Number(v.percent);
    if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw usage(`--percent must be 0..100: ${v.percent}`);
    const before = await store.get(name);
    const by = v.by ?? process.env.USER ?? 'operator';
    const reason = v.reason ?? `set by ${by}${v.stage ? ` (stage ${v.stage})` : ''}`;
    const after = await store.set(name, { stableVersion: v.stable, canaryVersion: v.canary, percent }, now, reason);
    const ev = setEvent(before, after, by, reason);
    print(ev);
    await publish(v, ev);
    return 0;
  } finally {
    redis.disconnect();
  }
}
