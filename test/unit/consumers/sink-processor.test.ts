import { describe, expect, it } from 'vitest';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import type { ClickHouseSink } from '../../../src/adapters/clickhouse/sink.js';
import type { LedgerWriter } from '../../../src/adapters/clickhouse/ledger-store.js';
import type { LedgerDraftMessage } from '../../../src/adapters/clickhouse/decision-writer.js';
import { SinkProcessor } from '../../../src/consumers/sink-processor.js';
import { StewardError } from '../../../src/errors.js';
import { decisionMessage } from '../../../src/contracts/engine-records.js';
import { blockedRecord, shellTrace } from './fixtures.js';

const topics = topicNames('t');

/** One partition's batch of decisions, offsets from..to, each for trace `t-<offset>`. */
function decisions(partition: number, from: number, to: number): InMessage[] {
  const out: InMessage[] = [];
  for (let o = from; o <= to; o++) {
    const trace = { ...shellTrace, trace_id: `t-${o}` };
    const value = JSON.stringify(decisionMessage(blockedRecord({ traceId: trace.trace_id }), trace, 1767225600000, 1767225600000, '0.1.0'));
    out.push({ topic: topics.decisions, partition, offset: String(o), key: Buffer.from('a1'), value: Buffer.from(value), headers: {}, timestampMs: 0 });
  }
  return out;
}

/**
 * The processor's ordering logic alone: a sink that accepts every row (the ClickHouse side is covered by the
 * integration tests) and a ledger publisher the test answers batch by batch.
 */
function processor() {
  const sink = { encodesLines: false, withRetry: (_: string, fn: () => Promise<unknown>) => fn(), write: async () => {}, expedites: () => false } as unknown as ClickHouseSink;
  const published: string[] = [];
  const pending: { ids: string[]; ok: () => void; fail: (e: Error) => void }[] = [];
  const publish = (ms: LedgerDraftMessage[]) =>
    new Promise<void>((ok, fail) => {
      const ids = ms.map((m) => String((JSON.parse(m.value.toString()) as { payload: { trace_id: string } }).payload.trace_id));
      pending.push({ ids, ok: () => (published.push(...ids), ok()), fail });
    });
  const proc = new SinkProcessor(topics, sink, {} as LedgerWriter, async () => {}, publish, () => 0);
  return { proc, published, pending };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (e: Error) => e.message);

describe('SinkProcessor ledger drafts', () => {
  it("publish a partition's batches in batch order; after one fails for good, those queued behind it fail unpublished until the partition is read again from it", async () => {
    const { proc, published, pending } = processor();
    const b1 = outcome(proc.process(decisions(0, 0, 1)));
    const b2 = outcome(proc.process(decisions(0, 2, 3)));
    const other = outcome(proc.process(decisions(1, 0, 0))); // another partition: its own chain
    await tick();
    expect(pending).toHaveLength(2); // b1 and the other partition's; b2 waits for b1
    pending[0].fail(new StewardError('STEWARD_KAFKA', 'ledger topic refused the drafts', { retryable: false }));
    pending[1].ok();
    expect(await b1).toMatch(/refused/);
    expect(await b2).toMatch(/refused/); // not published ahead of b1's drafts
    expect(await other).toBe('ok');
    expect(pending).toHaveLength(2);
    // A batch fetched before the seek back (past the failed one) does not publish either.
    expect(await outcome(proc.process(decisions(0, 4, 4)))).toMatch(/refused/);
    // The partition is read again from the failed batch: its drafts go first, then the rest, in order.
    const again1 = outcome(proc.process(decisions(0, 0, 1)));
    const again2 = outcome(proc.process(decisions(0, 2, 4)));
    await tick();
    expect(pending).toHaveLength(3);
    pending[2].ok();
    await tick();
    pending[3].ok();
    expect([await again1, await again2]).toEqual(['ok', 'ok']);
    expect(pending.map((p) => p.ids)).toEqual([['t-0', 't-1'], ['t-0'], ['t-0', 't-1'], ['t-2', 't-3', 't-4']]);
    // Partition 1's t-0, then partition 0's drafts in offset order, none of t-2..t-4 ahead of t-0, t-1.
    expect(published).toEqual(['t-0', 't-0', 't-1', 't-2', 't-3', 't-4']);
  });

  it('a new generation (group join, consumer crash) starts new chains: a partition that comes back past the failed batch publishes again', async () => {
    const { proc, pending } = processor();
    const b1 = outcome(proc.process(decisions(0, 0, 1)));
    await tick();
    pending[0].fail(new StewardError('STEWARD_KAFKA', 'retries exhausted', { retryable: false }));
    expect(await b1).toMatch(/retries exhausted/);
    // Another instance committed past offset 1 meanwhile; the partition comes back here at offset 500.
    proc.forgetDraftChains();
    const later = outcome(proc.process(decisions(0, 500, 501)));
    await tick();
    expect(pending).toHaveLength(2);
    pending[1].ok();
    expect(await later).toBe('ok');
  });
});

