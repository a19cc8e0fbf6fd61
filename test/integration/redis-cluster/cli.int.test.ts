// `steward review retier list` and `steward debt show` on a Redis Cluster deployment (REDIS_CLUSTER_NODES, no
// --redis): the commands read the per-slot re-tiering queues and the agent's hash through the Cluster client.
import { describe, expect, it } from 'vitest';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { keySlot } from '../../../src/adapters/redis/slots.js';
import { run as debt } from '../../../src/cli/commands/debt.js';
import { run as review } from '../../../src/cli/commands/review.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { clusterCliOutput, withCluster } from './cluster.js';

const cli = clusterCliOutput();
const json = cli.json;
const T0 = Date.parse('2026-05-01T00:00:00Z');

describe('trust-debt CLI on Redis Cluster', () => {
  it('lists the re-tiering queue of every slot and shows an agent\'s debt', async () => {
    await withCluster(async (c, prefix) => {
      const store = new RedisTrustDebtStore(c, { prefix });
      const agents = ['rogue', 'other', 'third'];
      expect(new Set(agents.map((a) => keySlot(store.agentKey('acme', a)))).size).toBe(3);
      for (const [i, a] of agents.entries()) await store.apply({ eventId: `t${i}`, tenant: 'acme', agentId: a, atMs: T0 + i, kind: 'intervention', intervention: 'block', severity: 'severe' }, DEFAULT_TRUST_DEBT_CONFIG);
      expect(await review(['retier', 'list', '--json', '--prefix', prefix])).toBe(0);
      expect(json().map((r) => r.agent_id)).toEqual(agents);
      cli.clear();
      expect(await debt(['show', 'other', '--tenant', 'acme', '--at', '2026-05-01T00:00:00Z', '--json', '--prefix', prefix])).toBe(0);
      expect(json()[0]).toEqual(expect.objectContaining({ agent_id: 'other', tenant: 'acme', debt: 0.75 }));
    });
  });
});
