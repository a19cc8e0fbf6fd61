// Issue #26 on real Kafka + Redis through the real pipeline (bootstrapEngine + startPipeline):
//  1. a rollback trigger fires on live traffic: the canary (2.0.0 halts where 1.0.0 allows) goes to 0 %, a
//     rollback event and its ledger entry are published, the alert metric counts it, and the canary agents
//     are decided by the stable version from then on;
//  2. shadow evaluation of a candidate set never changes the answers, its diffs equal the offline
//     `steward diff --traces` diffs of the same traces (the same diff function), and the sink lands them in
//     ClickHouse (real ClickHouse too).
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { StewardClient } from '../../../src/client/steward-client.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { armOf } from '../../../src/engine/rollout/arm.js';
import { comparableDiff, type ShadowDiff } from '../../../src/engine/rollout/diff.js';
import { offlineDiffs } from '../../../src/cli/diff-traces.js';
import { Collector, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';
import { generateKeyPairSync } from 'node:crypto';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { ledgerSignerFrom } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ROLL_V1, ROLL_V2, toolCall } from '../../unit/engine/rollout/fixtures.js';

function dirWith(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'steward-rollout-'));
  for (const [f, text] of Object.entries(files)) writeFileSync(join(d, f), text);
  return d;
}

const agents = Array.from({ length: 12 }, (_, i) => `roll-agent-${i}`);

describe('rollout on the live pipeline (real Kafka + Redis)', () => {
  it('a rollback trigger fires on canary traffic: canary to 0 %, event + ledger entry + alert metric, canary agents back on stable', async () => {
    const redisPrefix = uniqueRedisPrefix('rollout');
    const dir = dirWith({ 'v1.yaml': ROLL_V1, 'v2.yaml': ROLL_V2 });
    const redis = new Redis(services().redisUrl);
    try {
      await withPipelineEnv(
        'rollout-trig',
        async ({ cfg, topics, adapter }) => {
          const store = new RedisRolloutStore(redis, redisPrefix);
          const state = await store.set('t/roll', { stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 50 }, Date.now(), 'test');
          const canary = agents.filter((a) => armOf(state, a) === 'canary');
          const stable = agents.filter((a) => armOf(state, a) === 'stable');
          expect(canary.length).toBeGreaterThan(0);
          expect(stable.length).toBeGreaterThan(0);
          const logger = quietLogger();
          const metrics = new StewardMetrics();
          const rt = await bootstrapEngine(cfg, ['tripwire'], logger, metrics);
          const pipe = await startPipeline(cfg, ['tripwire'], rt.deps, { logger, metrics });
          const out = await new Collector(adapter, [topics.decisions, topics.rollouts, topics.ledger, topics.dlq]).start();
          const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
          try {
            // n = 50: 1.0.0 answers ok, 2.0.0 halts (its tripwire allows n <= 10). Round-robin over all agents.
            let i = 0;
            const send = async () => {
              const a = agents[i % agents.length];
              const d = await client.decide({ ...toolCall(a, `${cfg.topics.prefix}-t${i}`, 50), timestamp: new Date().toISOString() }, { timeoutMs: 15_000 });
              i++;
              return d;
            };
            for (let k = 0; k < 24; k++) await send();
            // Rolled back in Redis (the monitor judged the shared counters); the winner publishes the event on its own producer.
            await waitFor(async () => ((await store.get('t/roll'))?.percent === 0 ? true : (await send(), false)), { timeoutMs: 60_000, message: 'rollback in Redis' });
            await waitFor(() => out.on(topics.rollouts).length > 0, { timeoutMs: 60_000, message: 'rollback event' });
            const ev = JSON.parse(out.on(topics.rollouts)[0].value!.toString());
            expect(ev).toMatchObject({ blueprint: 't/roll', kind: 'rollback', from_percent: 50, to_percent: 0, trigger_id: 'halt_rate_delta > 20%', metric: 'halt_rate_delta', canary_value: 1, stable_value: 0, actor: 'steward' });
            const ledger = out.on(topics.ledger).map((m) => JSON.parse(m.value!.toString()));
            expect(ledger).toContainEqual(expect.objectContaining({ entry_id: ev.event_id, agent_id: 'steward:rollout', type: 'POLICY_DECISION', payload: expect.objectContaining({ rollout: 'rollback', blueprint: 't/roll' }) }));
            expect(await metrics.registry.getSingleMetricAsString('steward_rollout_rollbacks_total')).toMatch(/steward_rollout_rollbacks_total\{blueprint="t\/roll",trigger="halt_rate_delta > 20%"\} 1/);
            // Every decision names its version and arm; after the refresh, canary agents are on 1.0.0 (stable).
            const decisions = out.on(topics.decisions).map((m) => JSON.parse(m.value!.toString()));
            expect(decisions.filter((d) => d.rollout_arm === 'canary').every((d) => d.blueprint_version === '2.0.0' && d.intervention === 'halt')).toBe(true);
            expect(decisions.filter((d) => d.rollout_arm === 'stable').every((d) => d.blueprint_version === '1.0.0' && d.intervention === 'ok')).toBe(true);
            const late = await client.decide({ ...toolCall(canary[0], `${cfg.topics.prefix}-late`, 50), timestamp: new Date().toISOString() }, { timeoutMs: 15_000 });
            expect(late.intervention).toBe('ok');
            expect(out.on(topics.dlq)).toHaveLength(0);
          } finally {
            await client.close();
            await out.stop();
            await pipe.stop();
            await rt.close();
          }
        },
        { blueprints: { dir, watch: false }, redis: { key_prefix: redisPrefix }, rollout: { min_samples: 5, refresh_ms: 200, window_ms: 300_000 } },
      );
    } finally {
      await deleteRedisPrefix(redis, redisPrefix);
      redis.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shadow evaluation never changes answers, and its diffs equal the offline diff of the same traces', async () => {
    const redisPrefix = uniqueRedisPrefix('shadow');
    const active = dirWith({ 'v1.yaml': ROLL_V1 });
    const candidate = dirWith({ 'v2.yaml': ROLL_V2 });
    const work = mkdtempSync(join(tmpdir(), 'steward-shadow-'));
    mkdirSync(work, { recursive: true });
    const redis = new Redis(services().redisUrl);
    try {
      await withClickHouseDatabase((db) => withPipelineEnv(
        'rollout-shadow',
        async ({ cfg, topics, adapter }) => {
          const logger = quietLogger();
          const signer = ledgerSignerFrom(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
          const rt = await bootstrapEngine(cfg, ['tripwire'], logger);
          const pipe = await startPipeline(cfg, ['tripwire', 'sink'], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, signer) }, { logger });
          const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
          const out = await new Collector(adapter, [topics.decisions, topics.shadowDiffs, topics.dlq]).start();
          const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
          const t0 = Date.now();
          const traces = [3, 7, 20, 60, 150, 4, 11, 51, 99, 101].map((n, i) => ({ ...toolCall(agents[i % 4], `${cfg.topics.prefix}-s${i}`, n), timestamp: new Date(t0 + i * 1000).toISOString() }));
          try {
            for (const t of traces) {
              const d = await client.decide(t, { timeoutMs: 15_000 });
              // The active set (1.0.0) answers: halt only above 100, block above 50.
              const n = (t.args as { n: number }).n;
              expect(d.intervention, t.trace_id).toBe(n > 100 ? 'halt' : n > 50 ? 'block' : 'ok');
            }
            await waitFor(() => out.on(topics.shadowDiffs).length >= traces.length, { timeoutMs: 30_000, message: 'shadow diffs' });
            const live = new Map(out.on(topics.shadowDiffs).map((m) => { const d = JSON.parse(m.value!.toString()) as ShadowDiff; return [d.trace_id, d]; }));
            const file = join(work, 'traces.jsonl');
            writeFileSync(file, traces.map((t) => JSON.stringify(t)).join('\n') + '\n');
            const offline = await offlineDiffs({ traces: file, active, candidate });
            expect(offline).toHaveLength(traces.length);
            for (const o of offline) expect(comparableDiff(live.get(o.trace_id)!), o.trace_id).toEqual(comparableDiff(o));
            expect(offline.filter((d) => d.changed).length).toBeGreaterThanOrEqual(6);
            expect(live.get(`${cfg.topics.prefix}-s2`)).toMatchObject({ shadow_id: 'candidate', active_intervention: 'ok', shadow_intervention: 'halt', change_kinds: ['intervention', 'stage', 'tripwires'] });
            // The sink lands them in shadow_diffs: what `steward shadow report` reads.
            const stored = await waitFor(async () => {
              const r = await store.query<{ trace_id: string; changed: number; change_kinds: string[] }>(`SELECT trace_id, changed, change_kinds FROM ${store.table('v_shadow_diffs')} WHERE shadow_id = 'candidate' ORDER BY trace_id`);
              return r.length === traces.length ? r : undefined;
            }, { timeoutMs: 30_000, message: 'shadow_diffs rows' });
            for (const r of stored) expect([Number(r.changed) === 1, r.change_kinds], r.trace_id).toEqual([live.get(r.trace_id)!.changed, live.get(r.trace_id)!.change_kinds]);
            expect(out.on(topics.dlq)).toHaveLength(0);
          } finally {
            await store.close();
            await client.close();
            await out.stop();
            await pipe.stop();
            await rt.close();
          }
        },
        { blueprints: { dir: active, watch: false }, redis: { key_prefix: redisPrefix }, clickhouse: { database: db.name }, rollout: { shadow_blueprints: candidate, shadow_id: 'candidate' } },
      ));
    } finally {
      await deleteRedisPrefix(redis, redisPrefix);
      redis.disconnect();
      for (const d of [active, candidate, work]) rmSync(d, { recursive: true, force: true });
    }
  });
});
