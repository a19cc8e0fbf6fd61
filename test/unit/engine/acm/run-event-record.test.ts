// The run-state part of a stream event's replay records (governRunEvent's `record`, docs/acm.md "Export from the
// stream"): its place in the run, the policy response's ACM part and the context versions it recorded or bound
// must be what `steward eval --bundles` writes for the same events, so records the stream stores export as the
// bundle eval writes. Counted in the run's stored state, events before the plan and an approver's included.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval } from '../../../../src/cli/commands/eval.js';
import { readBundleDir } from '../../../../src/cli/commands/replay.js';
import { compileVerificationSheets, governRunEvent, MemoryAcmRunStateStore, runIdOf, type AcmEnv, type BlueprintAnswer, type RunEventOutcome } from '../../../../src/engine/acm/index.js';
import { traceEventId } from '../../../../src/engine/event-id.js';
import type { Trace } from '../../../../src/engine/types.js';
import { parse as parseYaml } from 'yaml';
import { DSL } from './helpers.js';

const DIR = 'examples/refund-run/blueprints';
const tmp = mkdtempSync(join(tmpdir(), 'acm-run-record-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const lines = readFileSync('examples/refund-run/trace.jsonl', 'utf8').split('\n').filter(Boolean);
const jsonl = (t: string | undefined) => (t ?? '').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

describe('governRunEvent record: numbered and summarised as eval --bundles records the run', () => {
  it('seq, ACM part and context versions of every event of the refund runs equal the eval bundles', async () => {
    await runEval({ blueprints: DIR, input: '-', bundles: tmp }, { input: Readable.from([lines.join('\n') + '\n']), out: () => undefined, err: () => undefined, stderrIsTty: false, llm: null });
    const sheets = compileVerificationSheets([{ file: 'refund.verify.yaml', text: readFileSync(join(DIR, 'refund.verify.yaml'), 'utf8') }], DSL).sheets;
    const env: AcmEnv = { dsl: DSL, sheets, options: parseYaml(readFileSync(join(DIR, 'acm.yaml'), 'utf8')), planCache: new Map() };
    const store = new MemoryAcmRunStateStore();
    const got = new Map<string, { seq: number; trace_id: string; acm: unknown; contexts: string[] }[]>();
    for (const line of lines) {
      const trace = JSON.parse(line) as Trace;
      const eventId = traceEventId(trace.trace_id, Buffer.from(line));
      // The blueprint's answer does not change the run's numbering or its checks: allow everything.
      const answer = (): Promise<BlueprintAnswer> => Promise.resolve({ blueprint: 'b', intervention: 'ok' });
      const out: RunEventOutcome = await governRunEvent(store, trace, { env, tenant: 'acme', nowMs: Date.parse(String(trace.timestamp)), eventId }, answer);
      if (out.kind !== 'decided' || !out.record) continue;
      const runId = runIdOf(trace)!;
      got.set(runId, [...(got.get(runId) ?? []), { seq: out.record.seq, trace_id: trace.trace_id, acm: out.record.acm ?? null, contexts: out.record.contexts.map((c) => `${c.id}@${c.version}:${c.digest}`) }]);
      // A redelivery answers with the first record.
      const again = await governRunEvent(store, trace, { env, tenant: 'acme', nowMs: Date.parse(String(trace.timestamp)), eventId }, answer);
      expect(again.kind === 'decided' && again.record).toEqual(out.record);
    }
    expect(got.size).toBe(3);
    for (const [runId, events] of got) {
      const files = await readBundleDir(join(tmp, runId));
      const requests = jsonl(files.get('policy/requests/requests.jsonl'));
      const responses = jsonl(files.get('policy/responses/responses.jsonl'));
      expect(events.map((e) => [e.seq, e.trace_id]), runId).toEqual(requests.map((r) => [r.seq, r.trace_id]));
      expect(events.map((e) => e.acm), runId).toEqual(responses.map((r) => r.acm ?? null));
      const contexts = [...files].filter(([p]) => p.startsWith('context/')).map(([, t]) => JSON.parse(t) as { id: string; version: number; digest: string });
      expect(new Set(events.flatMap((e) => e.contexts)), runId).toEqual(new Set(contexts.map((c) => `${c.id}@${c.version}:${c.digest}`)));
    }
  });
});
