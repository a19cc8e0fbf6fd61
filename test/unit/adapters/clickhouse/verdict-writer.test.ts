import { describe, expect, it } from 'vitest';
import { VerdictTsvWriter } from '../../../../src/adapters/clickhouse/verdict-writer.js';
import { VERDICT_COLUMNS, verdictRow } from '../../../../src/adapters/clickhouse/rows.js';
import { tsvEncoder } from '../../../../src/adapters/clickhouse/tsv.js';
import { decisionMessage, verdictMessage } from '../../../../src/contracts/engine-records.js';
import { blockedRecord, scoreRecord, shellTrace } from '../../consumers/fixtures.js';
import { rng } from '../../../../src/demo/agents.js';

const NOW = 1_700_000_999_999;
const tsv = tsvEncoder(VERDICT_COLUMNS);

/** The sink's reference path: JSON.parse → verdictRow → TSV. */
function reference(text: string): string | Error {
  try {
    return tsv.encode([verdictRow(JSON.parse(text), NOW)]);
  } catch (e) {
    return e as Error;
  }
}

/** The writer's line for one record (after another one, so offsets are exercised), or undefined when declined. */
function written(bytes: Buffer): string | undefined {
  const w = new VerdictTsvWriter(NOW, 16);
  expect(w.add(Buffer.from('{"trace_id":"w","agent_id":"a","intervention":"ok","verdict":{},"event_time_ms":1}'))).toBe(true);
  const before = w.bytes().length;
  if (!w.add(bytes)) {
    expect(w.bytes().length).toBe(before);
    return undefined;
  }
  return w.bytes().subarray(before).toString('utf8');
}

function agrees(text: string | Buffer): boolean {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const got = written(bytes);
  if (got === undefined) return false;
  const ref = reference(bytes.toString('utf8'));
  if (ref instanceof Error) throw new Error(`writer took a record the reference rejects (${ref.message}): ${bytes.toString()}`);
  expect(got, bytes.toString()).toBe(ref);
  return true;
}

const plain = {
  trace_id: 'tr-1', agent_id: 'bot-1', tenant: 'acme', blueprint: 'finance/trading_bot@1.0', intervention: 'escalate', approved: false,
  stage: 'ctq', ctq: 0.42, risk: 0.58, severity: 'high',
  metrics: [
    { name: 'clarity', score: 0.42, weight: 1, confidence: 0.8, scorer: 'rule-based', status: 'ok' },
    { name: "it's", score: null, weight: 0.5, confidence: 0, scorer: 'llm-judge', status: 'unavailable' },
  ],
  verdict: {
    version: 'pvs-1', approved: false, reasoning: 'CTQ 0.42 below 0.6 — über', policy_violations: ['clarity', "don't"], confidence_score: 0.8,
    metadata: { engine: 'steward', engine_version: '0.1.0', latency_ms: 3.5, tenant_id: 'acme-meta' }, signature: { alg: 'Ed25519', kid: 'k1', sig: 'c2ln' },
  },
  event_time_ms: 1_700_000_000_001, scored_at_ms: 1_700_000_000_040, event_id: 'tr-1#d',
};

describe('VerdictTsvWriter: agrees with JSON.parse → verdictRow → TSV, or declines', () => {
  it('takes plain verdicts field for field, including what the scorer stage builds (verdictMessage)', () => {
    expect(agrees(JSON.stringify(plain))).toBe(true);
    const decision = decisionMessage(blockedRecord({}), shellTrace, 1_767_225_600_000, 1_767_225_600_003, '0.1.0');
    expect(agrees(JSON.stringify(verdictMessage(scoreRecord(), decision, 1_767_225_600_050)))).toBe(true);
    const minimal = { trace_id: 't', agent_id: 'a', intervention: 'flag', verdict: {}, event_time_ms: 5 };
    expect(agrees(JSON.stringify(minimal))).toBe(true);
    // The tenant and the signature fall back to the verdict's metadata; the approval to the verdict's.
    expect(agrees(JSON.stringify({ ...minimal, verdict: { approved: false, metadata: { tenant_id: 'm', signature: 'sig-text' } } }))).toBe(true);
    expect(agrees(JSON.stringify({ ...minimal, ctq: null, risk: 1e-7, verdict: { signature: [1, true], metadata: { tenant_id: 5 } } }))).toBe(true);
    expect(agrees('{ "trace_id" : "t", "agent_id":"a","intervention":"ok" , "verdict":{"x":[1,{"y":null}]},"event_time_ms":7.9,"other":{ "z" : 1 } }')).toBe(true);
    expect(written(Buffer.from(JSON.stringify(plain)))?.split('\t')).toHaveLength(Object.keys(VERDICT_COLUMNS).length);
  });

  it('a record whose line is several times its size (thousands of empty metrics) is written whole, with a small first buffer', () => {
    const many = JSON.stringify({ trace_id: 't', agent_id: 'a', intervention: 'ok', verdict: {}, event_time_ms: 1, metrics: Array.from({ length: 3300 }, () => ({})) });
    const w = new VerdictTsvWriter(NOW, 4096 + many.length);
    expect(w.add(Buffer.from(many))).toBe(true);
    expect(w.bytes().toString('utf8')).toBe(reference(many));
    expect(agrees(many)).toBe(true);
  });

  it.each([
    ['an escape in the reasoning', JSON.stringify({ ...plain, verdict: { ...plain.verdict, reasoning: 'say "no"' } })],
    ['no verdict', JSON.stringify({ ...plain, verdict: undefined })],
    ['a verdict that is not an object', JSON.stringify({ ...plain, verdict: 'ok' })],
    ['whitespace inside the verdict', JSON.stringify(plain).replace('"version":"pvs-1"', ' "version":"pvs-1"')],
    ['a non-canonical number in the metrics', JSON.stringify(plain).replace('"weight":1,', '"weight":1.0,')],
    ['a duplicate key in the verdict metadata', JSON.stringify(plain).replace('"engine":"steward"', '"engine":"steward","engine":"x"')],
    ['a string ctq', JSON.stringify({ ...plain, ctq: '0.5' })],
    ['a non-string metric name', JSON.stringify({ ...plain, metrics: [{ name: 5, score: 1 }] })],
    ['a string score', JSON.stringify({ ...plain, metrics: [{ name: 'x', score: '1' }] })],
    ['a null signature', JSON.stringify({ ...plain, verdict: { signature: null } })],
    ['a null tenant', JSON.stringify({ ...plain, tenant: null })],
    ['a duplicated known field', JSON.stringify(plain).replace('"stage":"ctq"', '"stage":"ctq","stage":"rule"')],
    ['no event_time_ms', JSON.stringify({ ...plain, event_time_ms: undefined })],
    ['no scored_at_ms but an ISO timestamp', JSON.stringify({ ...plain, scored_at_ms: undefined, timestamp: '2024-01-01T00:00:00Z' })],
    ['an empty intervention', JSON.stringify({ ...plain, intervention: '' })],
    ['invalid JSON', JSON.stringify(plain).slice(0, -1)],
  ])('declines %s', (_what, text) => {
    expect(written(Buffer.from(text))).toBeUndefined();
  });

  it('random records: every one taken agrees exactly, none the reference rejects is taken', () => {
    const r = rng(20261125);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    const strs = ['', 'a', "it's", 'über', '🚫 no', '[1]', 'null'];
    const scalar = (): unknown => pick<unknown>([pick(strs), 'q"uote', Math.round(r() * 1e4) / 100, -3, 0, true, false, null, 1e21]);
    const any = (depth: number): unknown =>
      depth > 2 || r() < 0.5 ? scalar() : r() < 0.5 ? [any(depth + 1)] : { k: any(depth + 1), [pick(['name', 'score', 'signature'])]: any(depth + 1) };
    let odd = 0;
    const ok = () => r() >= odd;
    const metric = (): unknown => {
      const m: Record<string, unknown> = {};
      if (ok()) m.name = ok() ? pick(strs) : scalar();
      if (ok()) m.score = ok() ? pick([0.5, null, 1, 0.125]) : scalar();
      if (r() < 0.7) m.status = ok() ? pick(['ok', 'skipped']) : scalar();
      if (r() < 0.3) m.extra = any(1);
      return m;
    };
    const verdict = (): unknown => {
      const v: Record<string, unknown> = {};
      if (r() < 0.7) v.approved = ok() ? r() < 0.5 : scalar();
      if (r() < 0.7) v.confidence_score = ok() ? pick([0.9, 1, 0]) : scalar();
      if (r() < 0.7) v.policy_violations = ok() ? [pick(strs)] : any(1);
      if (r() < 0.5) v.metadata = ok() ? { tenant_id: ok() ? pick(strs) : scalar(), signature: ok() ? pick(['s', { a: 1 }]) : scalar() } : scalar();
      if (r() < 0.5) v.signature = ok() ? pick(['sig', { alg: 'Ed25519' }, [1]]) : scalar();
      if (r() < 0.3) v.reasoning = pick(strs);
      return v;
    };
    const keys: [string, number, () => unknown][] = [
      ['trace_id', 0.97, () => (ok() ? `t-${Math.floor(r() * 1e6)}` : scalar())],
      ['agent_id', 0.97, () => (ok() ? pick(['a', 'bot']) : scalar())],
      ['tenant', 0.6, () => (ok() ? pick(strs) : scalar())],
      ['blueprint', 0.7, () => (ok() ? 'b@1' : scalar())],
      ['intervention', 0.97, () => (ok() ? pick(['ok', 'nudge', 'flag', 'escalate', 'block']) : scalar())],
      ['approved', 0.5, () => (ok() ? r() < 0.5 : scalar())],
      ['stage', 0.7, () => (ok() ? 'ctq' : scalar())],
      ['ctq', 0.7, () => (ok() ? pick([0.42, null, 1]) : scalar())],
      ['risk', 0.7, () => (ok() ? pick([0.58, null, 0]) : scalar())],
      ['metrics', 0.8, () => (ok() ? Array.from({ length: Math.floor(r() * 3) }, metric) : any(1))],
      ['verdict', 0.95, () => (ok() ? verdict() : scalar())],
      ['event_time_ms', 0.95, () => (ok() ? 1_700_000_000_000 + Math.floor(r() * 1e6) + (r() < 0.2 ? 0.5 : 0) : scalar())],
      ['scored_at_ms', 0.8, () => (ok() ? 1_700_000_000_000 + Math.floor(r() * 1e6) : scalar())],
      ['timestamp', 0.1, () => pick(['2024-01-01T00:00:00Z', 5])],
      ['extra', 0.15, () => any(0)],
    ];
    let taken = 0;
    let rejected = 0;
    const N = 4000;
    for (let n = 0; n < N; n++) {
      odd = r() < 0.5 ? 0.01 : 0.2;
      const o: Record<string, unknown> = {};
      for (const [k, p, gen] of keys) if (r() < p) o[k] = gen();
      let text = JSON.stringify(o);
      if (r() < 0.1) text = text.replace(/,"/g, ' , "');
      if (r() < 0.05) text = text.replace(/(\d)([,\]}])/, '$1.0$2');
      if (agrees(text)) taken++;
      if (reference(text) instanceof Error) rejected++;
    }
    expect(taken).toBeGreaterThan(N * 0.05);
    expect(rejected).toBeGreaterThan(N * 0.05);
  });
});
