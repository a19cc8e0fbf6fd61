import { describe, expect, it } from 'vitest';
import type { DecisionMessage } from '../../../../src/contracts/messages.js';
import { DecisionTsvWriter } from '../../../../src/adapters/clickhouse/decision-writer.js';
import { DECISION_COLUMNS, decisionRow } from '../../../../src/adapters/clickhouse/rows.js';
import { tsvEncoder } from '../../../../src/adapters/clickhouse/tsv.js';
import { policyDecisionDraft, type PolicyDecisionInput } from '../../../../src/contracts/policy-decision.js';
import { decisionMessage } from '../../../../src/contracts/engine-records.js';
import { blockedRecord, shellTrace } from '../../consumers/fixtures.js';
import { rng } from '../../../../src/demo/agents.js';

const NOW = 1_700_000_999_999;
const tsv = tsvEncoder(DECISION_COLUMNS);

/** The reference path of the sink: JSON.parse → decisionRow → TSV, and the draft with the row's event time. */
function reference(text: string): { line: string; draft: string } | Error {
  try {
    const v: unknown = JSON.parse(text);
    const row = decisionRow(v, NOW);
    const draft = policyDecisionDraft(v as PolicyDecisionInput);
    draft.ts_ms = Number.isSafeInteger(row.event_time_ms) ? row.event_time_ms : 0;
    return { line: tsv.encode([row]), draft: JSON.stringify(draft) };
  } catch (e) {
    return e as Error;
  }
}

/** The scanner on one record: the line it appended and the draft, or undefined when it declined (then nothing was appended). */
function scanned(bytes: Buffer): { line: string; draft: string } | undefined {
  const w = new DecisionTsvWriter(NOW, 16);
  w.add(Buffer.from('{"trace_id":"warm-up","agent_id":"a","intervention":"ok","event_time_ms":1}'));
  const before = w.bytes().length;
  const draft = w.add(bytes);
  if (!draft) {
    expect(w.bytes().length).toBe(before);
    return undefined;
  }
  expect(draft.key).toBe((JSON.parse(bytes.toString('utf8')) as { agent_id: string }).agent_id);
  return { line: w.bytes().subarray(before).toString('utf8'), draft: draft.value.toString('utf8') };
}

/** Asserts the scanner either declines or agrees with the reference exactly; returns whether it took the record. */
function agrees(text: string | Buffer): boolean {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const got = scanned(bytes);
  if (!got) return false;
  // The sink's reference path reads the UTF-8 text of the bytes.
  const ref = reference(bytes.toString('utf8'));
  if (ref instanceof Error) throw new Error(`scanner took a record the reference rejects (${ref.message}): ${bytes.toString()}`);
  expect(got.line, bytes.toString()).toBe(ref.line);
  expect(got.draft, bytes.toString()).toBe(ref.draft);
  return true;
}

const plain: DecisionMessage = {
  trace_id: 'tr-1', agent_id: 'trader-7', tenant: 'acme', blueprint: 'finance/trading_bot@1.0', intervention: 'block',
  approved: false, stage: 'rule', halted: false, reasons: ["single trade over the cap: it's 120000"], severity: 'high',
  tripwires: [{ id: 'trade_size_limit', fired: false }, { id: 'pii', fired: true, decision: 'flag', reason: 'email seen' }],
  rules: [{ id: 'single_trade_volume_cap', passed: false, decision: 'block', reason: 'über the cap 🚫' }, { id: 'hours', passed: true }],
  latency_ms: 1.25, event_time_ms: 1_700_000_000_001, decided_at_ms: 1_700_000_000_004, hook: 'tool_call', tool: 'execute_trade',
  session_id: 's-1', engine_version: '0.1.0', event_id: 'tr-1#x',
};

describe('scanDecision: agrees with JSON.parse → decisionRow → TSV, or declines', () => {
  it('takes the plain records the tripwire stage writes, field for field', () => {
    expect(agrees(JSON.stringify(plain))).toBe(true);
    const minimal = { trace_id: 't', agent_id: 'a', intervention: 'ok', event_time_ms: 5 };
    expect(agrees(JSON.stringify(minimal))).toBe(true);
    expect(agrees(JSON.stringify({ ...minimal, approved: true, halted: true, fallback: true, latency_ms: -0, tripwires: [], rules: [] }))).toBe(true);
    // Spaces between top-level tokens are fine; unknown fields of any shape are validated and skipped.
    expect(agrees('{ "trace_id" : "t" , "agent_id":"a","x":{"y":[1,2.5e3,{"z":null}],"w":true} , "intervention":"nudge","event_time_ms":7.9 }')).toBe(true);
    // 64 keys in one outcome object are still taken (the limit is on more).
    expect(agrees(JSON.stringify({ ...minimal, rules: [{ id: 'r', passed: false, ...Object.fromEntries(Array.from({ length: 62 }, (_, k) => [`k${k}`, k])) }] }))).toBe(true);
    // The same key in sibling or nested objects of an outcome is no duplicate.
    expect(agrees(JSON.stringify({ ...minimal, rules: [{ id: 'r', passed: false, d: { a: { a: 1, b: [{ a: 2 }] }, b: { a: 3 } } }, { id: 'q', passed: true, a: 1 }] }))).toBe(true);
    expect(scanned(Buffer.from(JSON.stringify(plain)))?.line.split('\t')).toHaveLength(Object.keys(DECISION_COLUMNS).length);
    // docs/rollout.md: the selected version and the rollout arm land in their columns on the fast path too.
    const rolled = { ...plain, blueprint_version: '2.0.0', rollout_arm: 'canary' };
    expect(agrees(JSON.stringify(rolled))).toBe(true);
    expect(scanned(Buffer.from(JSON.stringify(rolled)))?.line.split('\t').slice(-3, -1)).toEqual(['2.0.0', 'canary']);
  });

  it('keys the POLICY_DECISION draft by the event id (a reused trace id with other bytes is its own entry), else by the trace id', () => {
    const id = (rec: Record<string, unknown>) => (JSON.parse(scanned(Buffer.from(JSON.stringify(rec)))!.draft) as { entry_id: string }).entry_id;
    expect(id({ ...plain })).toBe('pd:tr-1#x');
    expect(id({ ...plain, event_id: 'tr-1#y' })).toBe('pd:tr-1#y');
    expect(id({ ...plain, event_id: undefined })).toBe('pd:tr-1');
    expect(id({ ...plain, event_id: '' })).toBe('pd:tr-1');
    for (const e of ['tr-1#y', '', undefined]) expect(agrees(JSON.stringify({ ...plain, event_id: e }))).toBe(true);
    expect(scanned(Buffer.from(JSON.stringify({ ...plain, event_id: 7 })))).toBeUndefined();
  });

  it('takes what the tripwire stage builds (decisionMessage), blocked or ok, with or without an engine version', () => {
    const blocked = decisionMessage(blockedRecord({}), shellTrace, 1_767_225_600_000, 1_767_225_600_003, '0.1.0');
    const ok = decisionMessage(blockedRecord({ intervention: 'ok', stage: 'none', rules: [{ id: 'r1', passed: true }], reasons: [] }), shellTrace, 5, 6);
    expect(agrees(JSON.stringify(blocked))).toBe(true);
    expect(agrees(JSON.stringify(ok))).toBe(true);
  });

  it.each([
    ['a backslash anywhere (escapes)', JSON.stringify({ ...plain, reasons: ['say "no"'] })],
    ['a control character', JSON.stringify(plain).replace('"tr-1"', '"tr-1\t"')],
    ['newlines between tokens', JSON.stringify(plain, null, 2)],
    ['whitespace inside the outcome lists', JSON.stringify(plain).replace('[{"id":"trade_size_limit"', '[ {"id":"trade_size_limit"')],
    ['a non-canonical number in an outcome', JSON.stringify(plain).replace('"reason":"email seen"', '"score":1.50')],
    ['a duplicate key in an outcome', JSON.stringify(plain).replace('"id":"hours"', '"id":"hours","id":"other"')],
    ['a duplicate key nested in an outcome', JSON.stringify(plain).replace('"id":"hours"', '"id":"hours","d":{"a":{"x":1},"a":2}')],
    ['an outcome object with more keys than the exact-form limit (64)', JSON.stringify({ ...plain, rules: [{ id: 'r', passed: false, ...Object.fromEntries(Array.from({ length: 64 }, (_, k) => [`k${k}`, k])) }] })],
    ['an integer-like key in an outcome', JSON.stringify(plain).replace('"id":"hours"', '"id":"hours","7":1')],
    ['a duplicated known field', JSON.stringify(plain).replace('"tenant":"acme"', '"tenant":"acme","tenant":"other"')],
    ['null for a known field', JSON.stringify({ ...plain, tenant: null })],
    ['a number where a string is expected', JSON.stringify({ ...plain, tool: 5 })],
    ['a rule without passed', JSON.stringify({ ...plain, rules: [{ id: 'r' }] })],
    ['a numeric outcome id', JSON.stringify({ ...plain, tripwires: [{ id: 3, fired: true }] })],
    ['no event_time_ms', JSON.stringify({ ...plain, event_time_ms: undefined, timestamp: '2024-01-01T00:00:00Z' })],
    ['no decided_at_ms but an ISO timestamp', JSON.stringify({ ...plain, decided_at_ms: undefined, timestamp: '2024-01-01T00:00:00Z' })],
    ['a negative time', JSON.stringify({ ...plain, decided_at_ms: -1 })],
    ['an infinite number', JSON.stringify(plain).replace('1.25', '1e999')],
    ['an empty required string', JSON.stringify({ ...plain, trace_id: '' })],
    ['trailing text', `${JSON.stringify(plain)} x`],
    ['invalid JSON', JSON.stringify(plain).slice(0, -1)],
    ['a leading zero', JSON.stringify(plain).replace('1.25', '01.25')],
    ['invalid UTF-8 (an encoded lone surrogate)', Buffer.concat([Buffer.from(JSON.stringify(plain).slice(0, -1) + ',"x":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')])],
  ])('declines %s', (_what, text) => {
    expect(scanned(Buffer.from(text))).toBeUndefined();
  });

  it('random records: every one taken agrees exactly, none the reference rejects is taken', () => {
    const r = rng(20261125);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    const strs = ['', 'a', "it's", 'über', '🚫 no', 'x y', 'q"uote', 'tab\there', '[1]', '{}', 'null', '9'];
    const scalar = (): unknown => pick<unknown>([pick(strs), Math.round(r() * 1e6) / 100, -3, 0, true, false, null, 1e21, 2 ** 60]);
    const any = (depth: number): unknown =>
      depth > 2 || r() < 0.5 ? scalar() : r() < 0.5 ? [any(depth + 1), any(depth + 1)] : { k: any(depth + 1), [pick(['id', 'n', 'fired'])]: any(depth + 1) };
    // Half the records are nearly plain (odd values rare), half odd: both outcomes are well represented.
    let odd = 0;
    const ok = () => r() >= odd;
    const outcome = (flag: string): unknown => {
      const o: Record<string, unknown> = {};
      if (ok()) o.id = ok() ? pick(strs) : any(2);
      if (ok()) o[flag] = ok() ? r() < 0.5 : any(2);
      if (r() < 0.4) o.reason = pick(strs);
      if (r() < 0.2) o.detail = any(1);
      return o;
    };
    const keys: [string, () => unknown][] = [
      ['trace_id', () => (ok() ? `t-${Math.floor(r() * 1e6)}` : scalar())],
      ['agent_id', () => (ok() ? pick(['a', 'bot-1', 'über']) : scalar())],
      ['tenant', () => (ok() ? pick(strs) : scalar())],
      ['blueprint', () => (ok() ? 'b@1' : scalar())],
      ['intervention', () => (ok() ? pick(['ok', 'nudge', 'flag', 'escalate', 'block', 'halt']) : scalar())],
      ['approved', () => (ok() ? r() < 0.5 : scalar())],
      ['stage', () => (ok() ? pick(['none', 'rule', 'tripwire']) : scalar())],
      ['halted', () => (ok() ? r() < 0.5 : scalar())],
      ['severity', () => (ok() ? pick(strs) : scalar())],
      ['reasons', () => (ok() ? [pick(strs), pick(strs)].slice(0, Math.floor(r() * 3)) : any(1))],
      ['tripwires', () => (ok() ? Array.from({ length: Math.floor(r() * 4) }, () => outcome('fired')) : any(1))],
      ['rules', () => (ok() ? Array.from({ length: Math.floor(r() * 4) }, () => outcome('passed')) : any(1))],
      ['latency_ms', () => (ok() ? Math.round(r() * 1e4) / 1e3 : scalar())],
      ['event_time_ms', () => (ok() ? 1_700_000_000_000 + Math.floor(r() * 1e6) + (r() < 0.2 ? 0.5 : 0) : scalar())],
      ['decided_at_ms', () => (ok() ? 1_700_000_000_000 + Math.floor(r() * 1e6) : scalar())],
      ['hook', () => pick(['tool_call', 'output', 5])],
      ['tool', () => (ok() ? pick(strs) : scalar())],
      ['session_id', () => pick(strs)],
      ['engine_version', () => (ok() ? '0.1.0' : scalar())],
      ['fallback', () => (ok() ? r() < 0.5 : scalar())],
      ['timestamp', () => pick(['2024-01-01T00:00:00Z', 'nope', 5])],
      ['extra', () => any(0)],
    ];
    let taken = 0;
    let rejectedByReference = 0;
    const N = 4000;
    for (let n = 0; n < N; n++) {
      odd = r() < 0.5 ? 0.01 : 0.2;
      const o: Record<string, unknown> = {};
      for (const [k, gen] of keys) {
        const p = k === 'timestamp' || k === 'extra' ? 0.15 : k === 'trace_id' || k === 'agent_id' || k === 'intervention' || k === 'event_time_ms' ? 0.97 : 0.75;
        if (r() < p) o[k] = gen();
      }
      let text = JSON.stringify(o);
      if (r() < 0.1) text = text.replace(/,"/g, ' , "'); // spaces between top-level tokens (and inside lists: declined)
      if (r() < 0.05) text = text.replace(/(\d)([,\]}])/, '$1.0$2'); // a non-canonical number somewhere
      if (agrees(text)) taken++;
      if (reference(text) instanceof Error) rejectedByReference++;
    }
    // Both outcomes are well represented, so the agreement above is not vacuous.
    expect(taken).toBeGreaterThan(N * 0.05);
    expect(rejectedByReference).toBeGreaterThan(N * 0.05);
  });
});
