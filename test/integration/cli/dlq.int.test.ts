// `steward dlq list|replay` on real Kafka: traces the tripwire stage dead-lettered for an engine failure are
// replayed to acgp.traces once the failure is fixed and then get their decisions; other codes stay; DLQ records
// naming another topic or another stage (forged, or the sink's) are skipped; --dry-run publishes nothing; a
// header named __proto__ survives the round trip.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../../src/cli/commands/dlq.js';
import { DLQ_HEADERS, REPLAYED_FROM_HEADER } from '../../../src/adapters/kafka/dlq.js';
import { putHeader } from '../../../src/adapters/kafka/client.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { Collector, TestEngine, quietLogger, trace, withPipelineEnv } from '../pipeline/harness.js';
import { waitFor } from '../setup/helpers.js';

let stdout: string[] = [];
beforeEach(() => {
  stdout = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (stdout.push(String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => vi.restoreAllMocks());

const jsonLines = () => stdout.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

describe('steward dlq (real Kafka)', () => {
  it('replays the records of one error code to their source topic once the cause is fixed', async () => {
    await withPipelineEnv('cli-dlq', async ({ cfg, topics, adapter, prefix }) => {
      const engine = new TestEngine();
      engine.failOn = (t) => t.tool === 'explode';
      const pipe = await startPipeline(cfg, ['tripwire'], { engine }, { logger: quietLogger() });
      const out = await new Collector(adapter, [topics.decisions, topics.dlq, topics.traces]).start();
      const producer = await adapter.producer();
      try {
        const failing = [1, 2, 3].map((i) => trace(i, 'ag1', { tool: 'explode' }));
        await producer.send([
          {
            topic: topics.traces,
            messages: [
              ...failing.map((t) => {
                const headers: Record<string, string | string[]> = { 'x-test-tag': ['a', `b-${t.trace_id}`] };
                putHeader(headers, '__proto__', `p-${t.trace_id}`);
                return { key: t.agent_id, value: JSON.stringify(t), headers };
              }),
              { key: 'ag1', value: '{"trace_id": "broken", oops' },
              { key: 'ag1', value: JSON.stringify(trace(4, 'ag1')) },
            ],
          },
          // written straight to the DLQ by someone: a topic that is not the deployment's traces, and a sink record
          // (its topic has other consumers: never replayed)
          {
            topic: topics.dlq,
            messages: [
              { key: 'x', value: '{}', headers: { [DLQ_HEADERS.code]: 'STEWARD_EVAL', [DLQ_HEADERS.topic]: 'other.topic', [DLQ_HEADERS.stage]: 'tripwire' } },
              { key: 'y', value: '{}', headers: { [DLQ_HEADERS.code]: 'STEWARD_EVAL', [DLQ_HEADERS.topic]: topics.decisions, [DLQ_HEADERS.stage]: 'sink' } },
            ],
          },
        ]);
        await waitFor(() => out.on(topics.dlq).length === 6 && out.byId(topics.decisions).size === 1 && out.on(topics.traces).length === 5, { timeoutMs: 30_000, message: 'dead-lettered and decided' });

        expect(await run(['list', '--prefix', prefix, '--code', 'STEWARD_EVAL', '--json'])).toBe(0);
        expect(jsonLines().map((l) => l.sourceTopic).sort()).toEqual(['other.topic', topics.decisions, topics.traces, topics.traces, topics.traces].sort());
        // --limit counts what is listed
        stdout = [];
        expect(await run(['list', '--prefix', prefix, '--code', 'STEWARD_EVAL', '--json', '--limit', '2'])).toBe(0);
        expect(jsonLines()).toHaveLength(2);

        stdout = [];
        const tracesBefore = out.on(topics.traces).length;
        expect(await run(['replay', '--prefix', prefix, '--code', 'STEWARD_EVAL', '--dry-run', '--json'])).toBe(1); // the forged ones are skipped
        expect(jsonLines().filter((l) => l.replay_to === topics.traces && l.dry_run === true)).toHaveLength(3);
        expect(jsonLines().filter((l) => l.skipped).map((l) => l.skipped).sort()).toEqual([
          `only traces the tripwire stage dead-lettered are replayed (this one: stage sink, source ${topics.decisions})`,
          'only traces the tripwire stage dead-lettered are replayed (this one: stage tripwire, source other.topic)',
        ]);

        engine.failOn = undefined; // the cause is fixed
        stdout = [];
        expect(await run(['replay', '--prefix', prefix, '--code', 'STEWARD_EVAL', '--json'])).toBe(1);
        await waitFor(() => out.byId(topics.decisions).size === 4, { timeoutMs: 30_000, message: 'decisions of the replayed traces' });
        expect([...out.byId(topics.decisions).keys()].sort()).toEqual(['t-ag1-1', 't-ag1-2', 't-ag1-3', 't-ag1-4']);
        // only the replay wrote to acgp.traces (not the dry run): the three traces, as they first arrived
        const replayed = out.on(topics.traces).slice(tracesBefore);
        expect(replayed).toHaveLength(3);
        for (const m of replayed) {
          const t = JSON.parse(m.value!.toString('utf8'));
          expect(failing.map((f) => JSON.stringify(f))).toContain(m.value!.toString('utf8'));
          expect(m.key!.toString()).toBe('ag1');
          expect(m.repeatedHeaders?.['x-test-tag']?.map(String)).toEqual(['a', `b-${t.trace_id}`]);
          expect(Object.getPrototypeOf(m.headers)).toBe(Object.prototype);
          expect(String(Object.getOwnPropertyDescriptor(m.headers, '__proto__')?.value)).toBe(`p-${t.trace_id}`);
          expect(m.headers[REPLAYED_FROM_HEADER]!.toString()).toMatch(new RegExp(`^${topics.dlq}/\\d+/\\d+$`));
          expect(m.headers[DLQ_HEADERS.code]).toBeUndefined();
          expect(m.headers[DLQ_HEADERS.topic]).toBeUndefined();
        }
        // nothing replayed was dead-lettered again, and the malformed JSON record was not replayed
        expect(out.on(topics.dlq).length).toBe(6);
      } finally {
        await producer.disconnect();
        await out.stop();
        await pipe.stop();
      }
    });
  }, 90_000);
});
