// Acceptance: ClickHouse stopped mid-stream and restarted — no row lost, no duplicate counted. Runs its own
// clickhouse-server (stopping the shared one would break every other test). While the server is down the
// sink instance is also stopped (offsets of un-inserted rows must stay uncommitted) and a fresh instance of
// the same consumer group takes over after the restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLedger } from '../../../src/adapters/clickhouse/ledger-store.js';
import { verifyLedger } from '../../../src/engine/ledger/index.js';
import { caughtUp, decisionMsg, publicPem, setupEnv, signer, verdictMsg, type Env } from './fixtures.js';
import { waitFor } from '../setup/helpers.js';
import { PrivateClickHouse } from './private-clickhouse.js';

describe('sink survives ClickHouse outages (private clickhouse-server)', () => {
  let ch: PrivateClickHouse;
  let env: Env;
  beforeAll(async () => {
    ch = await PrivateClickHouse.create();
    await ch.start();
    env = await setupEnv('outage', { clickhouseUrl: ch.url });
  }, 120_000);
  afterAll(async () => {
    await env?.close();
    await ch?.destroy();
  }, 120_000);

  it('no row lost, none counted twice, ledger intact', async () => {
    const group = `${env.prefix}-sink`;
    const dec = (from: number, n: number) => Array.from({ length: n }, (_, i) => decisionMsg(from + i));
    const ver = (from: number, n: number) => Array.from({ length: n }, (_, i) => verdictMsg(from + i));

    const sink1 = await env.startSink({ shutdownTimeoutMs: 1000 });
    await env.produce(env.topics.decisions, dec(0, 100));
    await env.produce(env.topics.verdicts, ver(0, 100));
    await waitFor(async () => (await env.count('v_decisions')).n === 100 && (await env.count('v_verdicts')).n === 100, { timeoutMs: 30_000, message: 'wave 1' });

    await ch.stop();
    await env.produce(env.topics.decisions, dec(100, 100));
    await env.produce(env.topics.verdicts, ver(100, 100));
    // The sink keeps retrying the insert while the server is gone...
    await waitFor(() => sink1.sink.stats.retries >= 3, { timeoutMs: 30_000, message: 'sink retrying' });
    expect(sink1.sink.stats.poison).toBe(0);
    // ...and an instance stopped in that state leaves those offsets uncommitted.
    await sink1.stop();
    expect(await caughtUp(group, [env.topics.decisions])).toBe(false);

    await ch.start();
    const sink2 = await env.startSink({ shutdownTimeoutMs: 5000 });
    await env.produce(env.topics.decisions, [...dec(200, 100), ...dec(150, 30)]); // wave 3 + upstream redelivery
    await env.produce(env.topics.verdicts, [...ver(200, 100), ...ver(0, 30)]);

    await waitFor(async () => (await env.count('v_decisions')).n >= 300 && (await env.count('v_verdicts')).n >= 300, { timeoutMs: 60_000, message: 'all waves' });
    await waitFor(() => caughtUp(group, [env.topics.decisions, env.topics.verdicts, env.topics.ledger]), { timeoutMs: 30_000, message: 'offsets committed' });
    expect(await env.count('v_decisions')).toEqual({ n: 300, u: 300 });
    expect(await env.count('v_verdicts')).toEqual({ n: 300, u: 300 });
    const ids = await env.store.query<{ trace_id: string }>(`SELECT trace_id FROM ${env.store.table('v_decisions')}`);
    expect(new Set(ids.map((r) => r.trace_id))).toEqual(new Set(dec(0, 300).map((d) => d.trace_id)));

    // Second outage, same instance this time: it retries until the server is back, then inserts.
    await ch.stop();
    const retriesBefore = sink2.sink.stats.retries;
    await env.produce(env.topics.decisions, dec(300, 25));
    await waitFor(() => sink2.sink.stats.retries >= retriesBefore + 3, { timeoutMs: 30_000, message: 'sink retrying again' });
    // A later batch of the same partitions is fetched and mapped while the first one waits (pipelining);
    // neither may be committed while their rows are not in ClickHouse.
    await env.produce(env.topics.decisions, dec(325, 25));
    await waitFor(() => sink2.sink.pending > 0 || sink2.sink.stats.retries >= retriesBefore + 6, { timeoutMs: 30_000, message: 'second batch taken' });
    await new Promise((r) => setTimeout(r, 500)); // more than the test's commit interval (200 ms)
    expect(await caughtUp(group, [env.topics.decisions])).toBe(false);
    await ch.start();
    await waitFor(async () => (await env.count('v_decisions')).n >= 350, { timeoutMs: 60_000, message: 'wave 4' });
    await waitFor(() => caughtUp(group, [env.topics.decisions, env.topics.ledger]), { timeoutMs: 30_000, message: 'offsets committed after outage 2' });
    expect(await env.count('v_decisions')).toEqual({ n: 350, u: 350 });

    const ledger = verifyLedger(await readLedger(env.store), { [signer.kid]: publicPem });
    expect(ledger.issues).toEqual([]);
    expect(ledger.entries).toBe(350);
    await sink2.stop();
  }, 180_000);
});
