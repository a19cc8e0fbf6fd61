// A sink consumer that kafkajs gives up on (a crash without restart, e.g. retries exhausted while the broker
// was away) is replaced: records produced afterwards land exactly once and the ledger stays one valid chain
// per agent. Real Kafka and ClickHouse; the test plays kafkajs' part by stopping the real consumer and
// reporting the crash the way kafkajs does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaAdapter, type StewardConsumer } from '../../../src/adapters/kafka/client.js';
import { readLedger } from '../../../src/adapters/clickhouse/ledger-store.js';
import { verifyLedger } from '../../../src/engine/ledger/index.js';
import { caughtUp, decisionMsg, publicPem, setupEnv, signer, type Env } from './fixtures.js';
import { services, uniqueName, waitFor } from '../setup/helpers.js';

describe('sink stage: a consumer kafkajs gave up on is replaced (real Kafka + ClickHouse)', () => {
  let env: Env;
  beforeAll(async () => {
    env = await setupEnv('sink-restart');
  });
  afterAll(async () => {
    await env?.close();
  });

  it('keeps consuming after the crash, exactly once, with an intact ledger', async () => {
    const real = new KafkaAdapter({ brokers: services().kafkaBrokers, clientId: uniqueName('sink-restart') });
    const made: { consumer: StewardConsumer; crash?: (err: Error, willRestart: boolean) => void }[] = [];
    const adapter = {
      producer: () => real.producer(),
      consumer: (o: Parameters<KafkaAdapter['consumer']>[0]): StewardConsumer => {
        const c = real.consumer(o);
        const rec: (typeof made)[number] = { consumer: c };
        made.push(rec);
        return {
          ...c,
          onCrash(fn) {
            rec.crash = fn;
            c.onCrash(fn);
          },
        };
      },
    };
    const all = Array.from({ length: 120 }, (_, i) => decisionMsg(i));
    await env.produce(env.topics.decisions, all.slice(0, 60));
    const sink = await env.startSink({ adapter, restartDelayMs: 200 });
    await waitFor(async () => (await env.count('v_decisions')).u === 60, { timeoutMs: 30_000, message: 'first rows' });
    expect(sink.isReady()).toBe(true);

    // kafkajs gives up: its runner stops and it reports a crash it will not restart from.
    await made[0].consumer.stop();
    made[0].crash?.(new Error('KafkaJSNumberOfRetriesExceeded'), false);
    expect(sink.isReady()).toBe(false);
    await env.produce(env.topics.decisions, all.slice(60));

    await waitFor(async () => (await env.count('v_decisions')).u === 120, { timeoutMs: 45_000, message: 'rows after the restart' });
    await waitFor(() => caughtUp(`${env.prefix}-sink`, [env.topics.decisions, env.topics.ledger]), { timeoutMs: 30_000, message: 'offsets committed' });
    expect(made).toHaveLength(2);
    expect(sink.isReady()).toBe(true);
    expect(await env.count('v_decisions')).toEqual({ n: 120, u: 120 });
    const r = verifyLedger(await readLedger(env.store), { [signer.kid]: publicPem });
    expect(r.issues).toEqual([]);
    expect(r.entries).toBe(120);

    // Crash again and stop during the restart delay: no consumer comes back after stop().
    await made[1].consumer.stop();
    made[1].crash?.(new Error('KafkaJSNumberOfRetriesExceeded'), false);
    await sink.stop();
    await new Promise((r) => setTimeout(r, 500));
    expect(made).toHaveLength(2);
  });
});
