// The sink's join of an ACM run event's replay-record halves (run-record-join.ts, contracts C12): the joined records
// are what `steward eval --bundles` records for the same event (RunCollector); halves join in a batch, across
// batches (memory) and across a restart (staged rows); events join in the order their second halves arrived, so a
// batch that starts between a pending record and its answer keeps the run chain in event order; the messages match
// their JSON schemas.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { RunRecordJoin, runEventRows, runRecordPart, type RunRecordPart } from '../../../src/consumers/run-record-join.js';
import { completeRunEvent, pendingRequest, recordDigest, responseChecks, RunCollector, runEventAnswer, type PendingRunEvent, type RunEventAnswer } from '../../../src/engine/acm/index.js';
import { ed25519Signer } from '../../../src/engine/ledger/index.js';
import type { EvalRecord } from '../../../src/engine/steward-engine.js';
import type { Trace } from '../../../src/engine/types.js';
import { generateKeyPairSync } from 'node:crypto';

const RUN = 'run-1';
const trace = (n: number): Trace => ({ trace_id: `t${n}`, agent_id: 'a1', timestamp: `2025-10-03T10:00:0${n}Z`, hook: 'task.pre', task: { id: `k${n}`, capability: 'c', input: { n } }, run: { runId: RUN } }) as Trace;
const lineOf = (t: Trace) => JSON.stringify(t);

/** An evaluation as the engine gives it (decide + score), enough for both record builders. */
function evalRecord(t: Trace, halted = false): EvalRecord {
  const tripwires = [{ id: 'tw', fired: halted, decision: halted ? 'block' : undefined, latencyMs: 0.1 }];
  const rules = [{ id: 'r', passed: true, latencyMs: 0.1 }];
  const verdict = { trace_id: t.trace_id, intervention: halted ? 'block' : 'ok', signature: { kid: 'k', sig: 'x' } };
  return {
    decision: { traceId: t.trace_id, agentId: t.agent_id, blueprint: 'bp', blueprintVersion: '1.0.0', intervention: halted ? 'block' : 'ok', stage: halted ? 'tripwire' : 'none', halted, tripwires, rules, reasons: halted ? ['tw fired'] : [], latencyMs: 1, tenant: 'acme', tier: 'standard', trustDebt: { debt: 0.1, level: 'normal' }, restricted: false, nowMs: 1, fullScoring: false },
    score: { traceId: t.trace_id, agentId: t.agent_id, tenant: 'acme', blueprint: 'bp', intervention: halted ? 'block' : 'flag', approved: !halted, stage: halted ? 'tripwire' : 'ctq', ctq: halted ? null : 0.4, risk: halted ? null : 0.6, confidence: 1, metrics: halted ? [] : [{ name: 'm', weight: 1, scorer: 's', score: 0.4, confidence: 0.9, status: 'ok', explanation: 'e' }], verdict, latencyMs: 1, trustDebt: { debt: 0.1, level: 'normal' }, fullScoring: false },
    trustDebt: { before: 0.1, after: 0.1, level: 'normal' },
  } as unknown as EvalRecord;
}

function halves(n: number, halted = false): { p: PendingRunEvent; a: RunEventAnswer } {
  const t = trace(n);
  const rec = evalRecord(t, halted);
  const ids = { tenant: 'acme', run_id: RUN, agent_id: 'a1', trace_id: t.trace_id, event_id: `${t.trace_id}#e` };
  const p: PendingRunEvent = {
    run_record: 'pending', ...ids, seq: n, now_ms: 1000 + n, line: lineOf(t),
    request: pendingRequest({ seq: n, trace: t, traceLine: n, line: lineOf(t), nowMs: 1000 + n, eventId: ids.event_id, decision: rec.decision, reads: [{ op: 'get', ns: 'acme:a1', key: 'k', value: 1 }] }),
    checks: responseChecks(rec.decision), contexts: [], drafts: [], engine_version: '9.9.9', task_id: `k${n}`,
  };
  // Through the wire and back, as the sink reads them.
  return { p: JSON.parse(JSON.stringify(p)) as PendingRunEvent, a: JSON.parse(JSON.stringify(runEventAnswer(ids, rec.score))) as RunEventAnswer };
}

let offset = 0;
const msg = (part: RunRecordPart): { part: RunRecordPart; source: InMessage } => ({ part, source: { topic: 'acgp.ledger', partition: 0, offset: String(offset++), key: null, value: Buffer.from(JSON.stringify(part)), headers: {}, timestampMs: 0 } as unknown as InMessage });
const noStaged = () => Promise.resolve([]);

describe('run record halves: joined as eval --bundles records the event', () => {
  it('the joined request, response and POLICY_DECISION equal RunCollector’s for the same evaluation', () => {
    for (const halted of [false, true]) {
      const t = trace(1);
      const rec = evalRecord(t, halted);
      const { privateKey } = generateKeyPairSync('ed25519');
      const collector = new RunCollector({ signer: ed25519Signer(privateKey), policyDigest: 'pol', engineVersion: '9.9.9' });
      collector.add({ runId: RUN, line: lineOf(t), trace: t, nowMs: 1001, eventId: 't1#e', tenant: 'acme', rec, reads: [{ op: 'get', ns: 'acme:a1', key: 'k', value: 1 }] });
      const want = collector.records()[0]!;
      const { p, a } = halves(1, halted);
      const got = completeRunEvent(p, a, 'pol');
      expect(JSON.stringify(got.request)).toBe(JSON.stringify(want.requests[0]));
      expect(JSON.stringify(got.response)).toBe(JSON.stringify(want.responses[0]));
      const { seq: _s, prev_hash: _p, hash: _h, signature: _g, kid: _k, ...entry } = want.ledger[0]!;
      expect(got.drafts[0]).toEqual(entry);
      expect(got.drafts[0]!.payload.request_digest).toBe(recordDigest(want.requests[0]!));
    }
  });

  it('halves match schemas/run-record-pending and run-record-answer; other ledger records are not halves; a malformed half is refused', () => {
    const ajv = new Ajv2020({ strict: false });
    const { p, a } = halves(2);
    expect(ajv.validate(JSON.parse(readFileSync('schemas/run-record-pending.schema.json', 'utf8')), p), JSON.stringify(ajv.errors)).toBe(true);
    expect(ajv.validate(JSON.parse(readFileSync('schemas/run-record-answer.schema.json', 'utf8')), a), JSON.stringify(ajv.errors)).toBe(true);
    expect(runRecordPart(p)).toBe(p);
    expect(runRecordPart({ entry_id: 'pd:x', agent_id: 'a', type: 'POLICY_DECISION', ts_ms: 1, payload: {} })).toBeUndefined();
    expect(() => runRecordPart({ ...p, seq: 0 })).toThrow(/seq/);
    expect(() => runRecordPart({ ...a, verdict: undefined })).toThrow(/verdict/);
    expect(() => runRecordPart({ ...a, run_record: 'other' })).toThrow(/unknown run_record/);
  });
});

describe('RunRecordJoin', () => {
  it('joins in the batch; a half alone waits (row staged) and joins with its other half in a later batch', async () => {
    const join = new RunRecordJoin(noStaged, { nowMs: () => 5 });
    const e1 = halves(1);
    const e2 = halves(2);
    const first = await join.join([msg(e1.p), msg(e1.a), msg(e2.p)]);
    expect(first.joined.map((j) => j.pending.trace_id)).toEqual(['t1']);
    expect(first.staged.map((s) => [s.row.kind, s.row.seq, s.row.trace_id])).toEqual([['pending', 2, 't2']]);
    const second = await join.join([msg(e2.a)]);
    expect(second.joined.map((j) => j.pending.trace_id)).toEqual(['t2']);
    expect(second.staged).toEqual([]);
    const rows = runEventRows(second.joined[0]!, 7);
    expect(rows.map((r) => [r.kind, r.seq])).toEqual([['trace', 2], ['request', 2], ['response', 2]]);
    expect(rows[0]!.line).toBe(e2.p.line);
    expect(JSON.parse(rows[1]!.line).scorer_answers).toEqual(e2.a.metrics);
  });

  it('events join in the order their second halves arrived (a batch starting between a pending record and its answer)', async () => {
    const join = new RunRecordJoin(noStaged, { nowMs: () => 5 });
    const [e1, e2, e3] = [halves(1), halves(2), halves(3, true)];
    await join.join([msg(e1.p)]);
    const out = await join.join([msg(e2.p), msg(e3.p), msg(e1.a), msg(e2.a), msg(e3.a)]);
    expect(out.joined.map((j) => j.pending.seq)).toEqual([1, 2, 3]);
  });

  it('an answer ahead of its pending record waits for it; after a restart the staged half is read back', async () => {
    const staged: RunRecordPart[] = [];
    const lookups: unknown[] = [];
    const lookup = (keys: unknown[]) => {
      lookups.push(keys);
      return Promise.resolve(staged.slice());
    };
    const e1 = halves(1);
    const before = new RunRecordJoin(lookup, { nowMs: () => 5 });
    const out = await before.join([msg(e1.a)]);
    expect(out.joined).toEqual([]);
    expect(out.staged.map((s) => s.row.kind)).toEqual(['answer']);
    staged.push(JSON.parse(out.staged[0]!.row.line) as RunRecordPart);
    // A new sink (restart, rebalance): nothing in memory, the staged answer is in ClickHouse.
    const after = new RunRecordJoin(lookup, { nowMs: () => 5 });
    const joined = await after.join([msg(e1.p)]);
    expect(joined.joined.map((j) => j.pending.trace_id)).toEqual(['t1']);
    expect(joined.joined[0]!.completed.response.verdict).toEqual(e1.a.verdict);
    expect(lookups).toHaveLength(2);
  });
});
