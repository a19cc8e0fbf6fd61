// Two sink instances in one consumer group share the partitions (and hand them over when one stops):
// rows land once and every agent's ledger chain stays a single, valid chain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLedger } from '../../../src/adapters/clickhouse/ledger-store.js';
import { verifyLedger } from '../../../src/engine/ledger/index.js';
import { caughtUp, decisionMsg, publicPem, setupEnv, signer, type Env } from './fixtures.js';
import { waitFor } from '../setup/helpers.js';

describe('sink stage with two instances (real Kafka + ClickHouse)', () => {
  let env: Env;
  beforeAll(async () => {
    env = await setupEnv('multi', { partitions: 6 });
  });
  afterAll(async () => {
    await env?.close();
  });

  it('exactly once and one chain per agent across instances and a handover', async () => {
    const group = `${env.prefix}-sink`;
    const dec = (from: number, n: number) => Array.from({ length: n }, (_, i) => decisionMsg(from + i, 12));
    const a = await env.startSink();
    const b = await env.startSink();
    await waitFor(() => a.isReady() && b.isReady(), { timeoutMs: 30_000, message: 'both joined' });
    await env.produce(env.topics.decisions, dec(0, 300));
    await waitFor(async () => (await env.count('v_decisions')).n >= 300, { timeoutMs: 45_000, message: 'first 300' });
    await a.stop(); // its partitions move to b, which must continue a's chains from ClickHouse
    await env.produce(env.topics.decisions, [...dec(300, 300), ...dec(250, 50)]);
    await waitFor(async () => (await env.count('v_decisions')).n >= 600, { timeoutMs: 45_000, message: 'all 600' });
    await waitFor(() => caughtUp(group, [env.topics.decisions, env.topics.ledger]), { timeoutMs: 45_000, message: 'caught up' });
    expect(await env.count('v_decisions')).toEqual({ n: 600, u: 600 });
    const r = verifyLedger(await readLedger(env.store), { [signer.kid]: publicPem });
    expect(r.issues).toEqual([]);
    expect(r).toMatchObject({ entries: 600, agents: 12 });
    await b.stop();
  });
});
