// The #26 commands on real services: `steward rollout set|status|rollback` (Redis state, events and ledger
// entries on Kafka), `steward shadow report` over shadow_diffs rows in ClickHouse, and `steward diff --traces`.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { shadowDiffRow } from '../../../src/adapters/clickhouse/rollout-rows.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { run as diff } from '../../../src/cli/commands/diff.js';
import { run as rollout } from '../../../src/cli/commands/rollout.js';
import { run as shadow } from '../../../src/cli/commands/shadow.js';
import { offlineDiffs } from '../../../src/cli/diff-traces.js';
import { consumeMessages, deleteRedisPrefix, services, uniqueName, uniqueRedisPrefix, withClickHouseDatabase, withTopics } from '../setup/helpers.js';
import { ROLL_V1, ROLL_V2, toolCall } from '../../unit/engine/rollout/fixtures.js';

let out: string[] = [];
beforeEach(() => {
  out = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => vi.restoreAllMocks());
const lines = () => out.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

const dirs: string[] = [];
function dirWith(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'steward-rollout-cli-'));
  for (const [f, t] of Object.entries(files)) writeFileSync(join(d, f), t);
  dirs.push(d);
  return d;
}
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const V2_STAGED = ROLL_V2.replace('rollback:', 'migration:\n  from_version: "1.0.0"\n  stages:\n    - { name: canary, percentage: 5 }\n    - { name: gradual, percentage: 25 }\nrollback:');

describe('steward rollout (real Redis + Kafka)', () => {
  it('set by percent and by stage, status, manual rollback; every change published with its ledger entry', async () => {
    const topicPrefix = uniqueName('ro');
    const prefix = uniqueRedisPrefix('ro-cli');
    const redis = new Redis(services().redisUrl);
    const bp = dirWith({ 'v1.yaml': ROLL_V1, 'v2.yaml': V2_STAGED });
    const common = ['--redis', services().redisUrl, '--prefix', prefix, '--topic-prefix', topicPrefix, '--blueprints', bp];
    try {
      await withTopics([`${topicPrefix}.rollouts`, `${topicPrefix}.ledger`], async () => {
        expect(await rollout(['set', 't/roll', '--stable', '1.0.0', '--canary', '2.0.0', '--stage', 'canary', '--by', 'ana', ...common])).toBe(0);
        expect(lines()[0]).toMatchObject({ kind: 'set', from_percent: 0, to_percent: 5, actor: 'ana' });
        out = [];
        expect(await rollout(['set', 't/roll', '--stable', '1.0.0', '--canary', '2.0.0', '--percent', '25', '--by', 'ana', ...common])).toBe(0);
        await expect(rollout(['set', 't/roll', '--stable', '1.0.0', '--canary', '9.0.0', '--percent', '25', ...common])).rejects.toMatchObject({ code: 'STEWARD_ROLLOUT_VERSION' });
        await expect(rollout(['set', 't/roll', '--stable', '1.0.0', '--canary', '2.0.0', '--stage', 'full', ...common])).rejects.toMatchObject({ code: 'STEWARD_ROLLOUT_STAGE' });
        out = [];
        expect(await rollout(['status', '--json', ...common])).toBe(0);
        expect(lines()).toEqual([expect.objectContaining({ name: 't/roll', percent: 25, stableVersion: '1.0.0', canaryVersion: '2.0.0', generation: 2 })]);
        out = [];
        expect(await rollout(['rollback', 't/roll', '--by', 'ops', ...common])).toBe(0);
        expect(lines()[0]).toMatchObject({ kind: 'rollback', from_percent: 25, to_percent: 0, trigger_id: 'manual_trigger', actor: 'ops' });
        await expect(rollout(['rollback', 't/roll', '--by', 'ops', ...common])).rejects.toMatchObject({ code: 'STEWARD_ROLLOUT_STATE' });
        expect((await new RedisRolloutStore(redis, prefix).get('t/roll'))?.percent).toBe(0);
        const events = (await consumeMessages(`${topicPrefix}.rollouts`, 3)).map((m) => JSON.parse(m.value!.toString()));
        expect(events.map((e) => [e.kind, e.to_percent])).toEqual([['set', 5], ['set', 25], ['rollback', 0]]);
        const ledger = (await consumeMessages(`${topicPrefix}.ledger`, 3)).map((m) => JSON.parse(m.value!.toString()));
        expect(ledger.map((e) => [e.agent_id, e.entry_id])).toEqual(events.map((e) => ['steward:rollout', e.event_id]));
      });
    } finally {
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
    }
  });
});

describe('steward diff --traces and steward shadow report (real ClickHouse)', () => {
  it('steward diff --traces prints each diff; steward shadow report summarises the same diffs stored in shadow_diffs', async () => {
    const v1 = dirWith({ 'v1.yaml': ROLL_V1 });
    const v2 = dirWith({ 'v2.yaml': ROLL_V2 });
    const work = dirWith({});
    const file = join(work, 'traces.jsonl');
    writeFileSync(file, [1, 7, 20, 60, 150].map((n, i) => JSON.stringify(toolCall('a', `t${i}`, n))).join('\n') + '\n');
    expect(await diff(['--traces', file, v1, v2, '--json'])).toBe(0);
    const diffs = lines();
    expect(diffs.map((d) => d.change_kinds.length > 0)).toEqual([false, true, true, true, false]);
    await withClickHouseDatabase(async (db) => {
      const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
      try {
        await migrate(store);
        const offline = await offlineDiffs({ traces: file, active: v1, candidate: v2, shadowId: 'next' });
        await store.insert('shadow_diffs', offline.map((d) => shadowDiffRow(d, 1)));
        out = [];
        expect(await shadow(['report', '--shadow-id', 'next', '--json', '--url', services().clickhouseUrl, '--database', db.name])).toBe(0);
        const [report] = lines();
        expect(report).toMatchObject({ shadow_id: 'next', traces: 5, changed: 3, byTransition: { 'ok → block': 1, 'ok → halt': 1, 'block → halt': 1 } });
        expect(report.examples.map((e: { trace_id: string }) => e.trace_id)).toEqual(['t1', 't2', 't3']);
      } finally {
        await store.close();
      }
    });
  });
});
