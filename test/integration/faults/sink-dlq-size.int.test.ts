// Issue #22 item 10: the sink's DLQ records are cut to limits.max_message_bytes like the stages' (stage-io.ts
// fittedDlqMessage). A poison record near the limit plus the DLQ headers was refused by the broker, the batch
// failed, and the partition stalled on it for ever (the valid decisions behind it were never stored). Real
// Kafka (the DLQ topic's max.message.bytes set just above the default limit) and real ClickHouse.
import { ConfigResourceTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/config/steward-config.js';
import { caughtUp, decisionMsg, setupEnv, type Env } from '../clickhouse/fixtures.js';
import { consumeMessages, kafkaClient, waitFor } from '../setup/helpers.js';

describe('sink DLQ records cut to size (real Kafka + ClickHouse)', () => {
  let env: Env;
  beforeAll(async () => {
    env = await setupEnv('dlqsize', { partitions: 1 });
    const admin = kafkaClient().admin();
    await admin.connect();
    try {
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: env.topics.dlq, configEntries: [{ name: 'max.message.bytes', value: String(DEFAULT_MAX_MESSAGE_BYTES + 100) }] }],
      });
    } finally {
      await admin.disconnect();
    }
  }, 120_000);
  afterAll(async () => env?.close(), 120_000);

  it('a not-JSON decision of 999 900 bytes is dead-lettered without its value, and the decisions behind it are stored', async () => {
    const sink = await env.startSink();
    const valueBytes = DEFAULT_MAX_MESSAGE_BYTES - 100;
    await env.produce(env.topics.decisions, [{ key: 'agent-0', value: `{${'x'.repeat(valueBytes - 1)}` }]);
    await env.produce(env.topics.decisions, [decisionMsg(0), decisionMsg(8), decisionMsg(16)]);

    const [dlq] = await consumeMessages(env.topics.dlq, 1, { timeoutMs: 30_000 });
    const header = (k: string) => dlq.headers?.[k]?.toString();
    expect(header('x-steward-error-code')).toBe('STEWARD_SINK_RECORD');
    expect(header('x-steward-stage')).toBe('sink');
    expect(header('x-steward-dropped')).toBe(`value (${valueBytes} bytes)`);
    expect(dlq.value).toBeNull();
    expect(dlq.key?.toString()).toBe('agent-0');

    await waitFor(async () => (await env.count('v_decisions')).n === 3, { timeoutMs: 30_000, message: 'the decisions behind the poison record' });
    await waitFor(() => caughtUp(`${env.prefix}-sink`, [env.topics.decisions]), { timeoutMs: 30_000, message: 'offsets committed past the poison record' });
    // The DLQ record's metadata reaches dlq_events too (its value is not needed there).
    await waitFor(async () => (await env.store.query<{ n: string }>(`SELECT count() AS n FROM ${env.store.table('v_dlq_events')}`))[0].n === '1', { timeoutMs: 30_000, message: 'dlq_events row' });
    expect(sink.isReady()).toBe(true);
  }, 120_000);
});
