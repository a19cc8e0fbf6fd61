// Operator tools on a Redis Cluster deployment (REDIS_CLUSTER_NODES set, REDIS_URL naming a master that does NOT
// serve the keys' slot, no --redis): `steward rollout set|status`, `steward review queue list|take` and the
// dashboard's re-tiering panel go through the Cluster client. Before, each made a single-server client of
// redis.url: rollout status died with a raw `ReplyError: MOVED …`, review queue list with STEWARD_STATE_UNAVAILABLE
// (MOVED), and the dashboard showed the re-tiering requests of that one master only (a third, silently).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { RedisReviewQueue } from '../../../src/adapters/redis/rollout-review-queue.js';
import { RedisRolloutStore } from '../../../src/adapters/redis/rollout-store.js';
import { keySlot } from '../../../src/adapters/redis/slots.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { run as review } from '../../../src/cli/commands/review.js';
import { run as rollout } from '../../../src/cli/commands/rollout.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import type { ReviewItem } from '../../../src/engine/rollout/review-queue.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { startDashboard } from '../../../src/process/dashboard.js';
import { services, uniqueIdent } from '../setup/helpers.js';
import { ROLL_V1, ROLL_V2 } from '../../unit/engine/rollout/fixtures.js';
import { clusterCliOutput, clusterNodes, masterNotServing, withCluster } from './cluster.js';

const cli = clusterCliOutput();
const json = cli.json;

describe('operator tools on Redis Cluster (redis.url names a master that does not serve the keys)', () => {
  it('steward rollout set and status', async () => {
    await withCluster(async (c, prefix) => {
      const store = new RedisRolloutStore(c, prefix);
      vi.stubEnv('REDIS_URL', await masterNotServing(c, `${prefix}{rollout}:names`));
      const bp = mkdtempSync(join(tmpdir(), 'steward-cl-rollout-'));
      try {
        writeFileSync(join(bp, 'v1.yaml'), ROLL_V1);
        writeFileSync(join(bp, 'v2.yaml'), ROLL_V2);
        const common = ['--prefix', prefix, '--blueprints', bp, '--no-publish'];
        expect(await rollout(['set', 't/roll', '--stable', '1.0.0', '--canary', '2.0.0', '--percent', '10', '--by', 'ana', ...common])).toBe(0);
        expect(json()[0]).toMatchObject({ kind: 'set', to_percent: 10 });
        expect((await store.get('t/roll'))?.percent).toBe(10);
        cli.clear();
        expect(await rollout(['status', '--json', ...common])).toBe(0);
        expect(json()).toEqual([expect.objectContaining({ name: 't/roll', percent: 10, stableVersion: '1.0.0', canaryVersion: '2.0.0', generation: 1 })]);
      } finally {
        rmSync(bp, { recursive: true, force: true });
      }
    });
  });

  it('steward review queue list and take', async () => {
    await withCluster(async (c, prefix) => {
      const queue = new RedisReviewQueue(c, prefix);
      vi.stubEnv('REDIS_URL', await masterNotServing(c, `${prefix}{rq}:open`));
      const now = Date.now();
      const item: ReviewItem = {
        review_id: 'rq:cl-t1', trace_id: 'cl-t1', agent_id: 'rq-bot', tenant: 'acme', blueprint: 't/roll', blueprint_version: '1.0.0', rollout_arm: 'stable', intervention: 'ok',
        confidence: 0.6, threshold: 0.9, ctq: null, risk: null, reasons: ['low_confidence'], status: 'queued', outcome: '', reviewer: '', note: '',
        event_time_ms: now, enqueued_at_ms: now, sla_due_ms: now + 3_600_000, taken_at_ms: 0, resolved_at_ms: 0, updated_at_ms: now,
      };
      expect(await queue.enqueue(item)).toBe(true);
      const common = ['--prefix', prefix, '--no-publish'];
      expect(await review(['queue', 'list', '--json', ...common])).toBe(0);
      expect(json()).toEqual([expect.objectContaining({ review_id: 'rq:cl-t1', status: 'queued' })]);
      cli.clear();
      expect(await review(['queue', 'take', 'cl-t1', '--reviewer', 'ana', ...common])).toBe(0);
      expect((await queue.get('rq:cl-t1'))?.status).toBe('taken');
    });
  });

  it("the dashboard's re-tiering panel lists the requests of every master", async () => {
    const database = uniqueIdent('steward_cl_dash');
    const admin = new ClickHouseStore({ url: services().clickhouseUrl, database });
    await migrate(admin);
    try {
      await withCluster(async (c, prefix) => {
        const debt = new RedisTrustDebtStore(c, { prefix });
        const agents = ['rogue', 'other', 'third'];
        expect(new Set(agents.map((a) => keySlot(debt.agentKey('acme', a)))).size).toBe(3);
        for (const [i, a] of agents.entries()) await debt.apply({ eventId: `t${i}`, tenant: 'acme', agentId: a, atMs: Date.parse('2026-05-01T00:00:00Z') + i, kind: 'intervention', intervention: 'block', severity: 'severe' }, DEFAULT_TRUST_DEBT_CONFIG);
        const cfg = buildConfig(
          {
            redis: { url: await masterNotServing(c, debt.agentKey('acme', 'rogue')), key_prefix: prefix, cluster_nodes: clusterNodes() },
            clickhouse: { url: services().clickhouseUrl, database },
            dashboard: { enabled: true, port: 0 },
          },
          {},
        );
        const dash = await startDashboard(cfg);
        try {
          const panels = (await (await fetch(`http://127.0.0.1:${dash.port}/api/panels`)).json()) as { panels: { id: string; rows: { agent_id: string }[]; note?: string }[] };
          const retier = panels.panels.find((p) => p.id === 'retier-queue')!;
          expect(retier.note).toBeUndefined();
          expect(retier.rows.map((r) => r.agent_id).sort()).toEqual([...agents].sort());
        } finally {
          await dash.close();
        }
      });
    } finally {
      await admin.command(`DROP DATABASE IF EXISTS ${database}`);
      await admin.close();
    }
  }, 60_000);
});
