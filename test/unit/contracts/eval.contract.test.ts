/**
 * Black-box contract of `steward eval` (contracts C1–C3; spec-decisions D1, D2, D3, D6, D7, D13–D15;
 * ACGP-1004 §9.2, §10, §11; PVS-1 §2). Few spawns: every trace of a run is batched into one call.
 *
 *  run A: the shipped blueprints/ + blueprints/agents.yaml, traces from a file
 *         (test/golden/contracts/repo-traces.jsonl) → exit 0.
 *  run B: test/golden/contracts/probe-blueprints on stdin, with malformed, blank and CRLF lines → exit 1.
 *  run C: exit 2 cases (bad arguments, invalid blueprints, invalid agent registry).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACTS, lines, steward, type Run } from './cli.js';

const INTERVENTIONS = ['ok', 'nudge', 'flag', 'escalate', 'block', 'halt'] as const;
const SEVERITY = Object.fromEntries(INTERVENTIONS.map((x, i) => [x, i])) as Record<string, number>;
const APPROVED = new Set(['ok', 'nudge', 'flag']);
const LEVELS = ['normal', 'elevated_monitoring', 'restricted_mode', 're_tiering_review'];
const TOP_KEYS = ['agent_id', 'approved', 'blueprint', 'ctq', 'intervention', 'metrics', 'risk', 'rules', 'stage', 'trace_id', 'tripwires', 'trust_debt', 'verdict'];
const VERDICT_REQUIRED = ['approved', 'confidence_score', 'metadata', 'policy_set', 'policy_violations', 'reasoning', 'version'];

type Obj = Record<string, unknown>;
interface Result {
  trace_id: string;
  agent_id: string;
  blueprint: string;
  intervention: string;
  approved: boolean;
  stage: string;
  tripwires: { id: string; fired: boolean; decision?: string; reason?: string; error?: string }[];
  rules: { id: string; passed: boolean; decision?: string; reason?: string; error?: string }[];
  ctq: number | null;
  risk: number | null;
  metrics: { name: string; score: number | null; weight: number; confidence: number; scorer: string; status: string }[];
  verdict: Obj & { approved: boolean; policy_violations: string[]; confidence_score: number; metadata: Obj };
  trust_debt: { before: number; after: number; level: string };
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const in01 = (x: unknown) => isNum(x) && x >= 0 && x <= 1;

/** Every §4.3 shape rule for one evaluated line; returns a list of problems (empty = conforms). */
function shapeProblems(o: Obj): string[] {
  const p: string[] = [];
  const keys = Object.keys(o).sort();
  if (JSON.stringify(keys) !== JSON.stringify(TOP_KEYS)) p.push(`keys ${keys.join(',')}`);
  const r = o as unknown as Result;
  for (const k of ['trace_id', 'agent_id', 'blueprint'] as const) if (typeof r[k] !== 'string') p.push(`${k} not a string`);
  if (!INTERVENTIONS.includes(r.intervention as never)) p.push(`intervention ${String(r.intervention)}`);
  if (typeof r.approved !== 'boolean') p.push('approved not boolean');
  if (r.approved !== APPROVED.has(r.intervention)) p.push(`approved ${r.approved} for ${r.intervention} (spec-decisions D1)`);
  if (!['tripwire', 'rule', 'ctq'].includes(r.stage)) p.push(`stage ${r.stage}`);
  if (r.intervention === 'halt' && r.stage !== 'tripwire') p.push('halt not from a tripwire (spec-decisions D1)');
  if (!Array.isArray(r.tripwires)) p.push('tripwires not an array');
  else
    for (const t of r.tripwires) {
      if (typeof t.id !== 'string' || typeof t.fired !== 'boolean') p.push(`tripwire entry ${JSON.stringify(t)}`);
      if (Object.keys(t).some((k) => !['id', 'fired', 'decision', 'reason', 'error'].includes(k))) p.push(`tripwire keys ${Object.keys(t)}`);
      if (t.fired && (!INTERVENTIONS.includes(t.decision as never) || typeof t.reason !== 'string')) p.push(`fired tripwire without decision/reason ${t.id}`);
    }
  if (!Array.isArray(r.rules)) p.push('rules not an array');
  else
    for (const x of r.rules) {
      if (typeof x.id !== 'string' || typeof x.passed !== 'boolean') p.push(`rule entry ${JSON.stringify(x)}`);
      if (Object.keys(x).some((k) => !['id', 'passed', 'decision', 'reason', 'error'].includes(k))) p.push(`rule keys ${Object.keys(x)}`);
      if (!x.passed && (!INTERVENTIONS.includes(x.decision as never) || typeof x.reason !== 'string')) p.push(`failed rule without decision/reason ${x.id}`);
      if (!x.passed && x.decision === 'halt') p.push(`rule ${x.id} halts (spec-decisions D1)`);
    }
  if (!(r.ctq === null || in01(r.ctq))) p.push(`ctq ${r.ctq}`);
  if (!(r.risk === null || in01(r.risk))) p.push(`risk ${r.risk}`);
  if ((r.ctq === null) !== (r.risk === null)) p.push('ctq/risk: one null, the other not');
  if (isNum(r.ctq) && isNum(r.risk) && Math.abs(r.risk - (1 - r.ctq)) > 1e-6) p.push(`risk ${r.risk} != 1 - ctq ${r.ctq} (spec-decisions D2)`);
  if (!Array.isArray(r.metrics)) p.push('metrics not an array');
  else
    for (const m of r.metrics) {
      const mk = Object.keys(m).sort().join(',');
      if (mk !== 'confidence,name,score,scorer,status,weight') p.push(`metric keys ${mk}`);
      if (typeof m.name !== 'string' || typeof m.scorer !== 'string' || !isNum(m.weight) || !in01(m.confidence)) p.push(`metric ${JSON.stringify(m)}`);
      if (!['ok', 'skipped', 'unavailable'].includes(m.status)) p.push(`metric status ${m.status}`);
      if (m.status === 'ok' && !in01(m.score)) p.push(`ok metric without a score ${m.name}`);
      if (m.status !== 'ok' && m.score !== null) p.push(`${m.status} metric ${m.name} carries a made-up score ${m.score} (spec-decisions D5)`);
    }
  const v = r.verdict;
  if (!v || typeof v !== 'object') p.push('verdict missing');
  else {
    for (const k of VERDICT_REQUIRED) if (!(k in v)) p.push(`verdict.${k} missing`);
    for (const k of Object.keys(v)) if (![...VERDICT_REQUIRED, 'signature'].includes(k)) p.push(`verdict has unexpected key ${k}`);
    if (v.version !== 'pvs-1') p.push(`verdict.version ${String(v.version)}`);
    if (v.approved !== r.approved) p.push('verdict.approved differs from approved');
    if (typeof v.reasoning !== 'string' || v.reasoning === '') p.push('verdict.reasoning');
    if (!Array.isArray(v.policy_violations) || v.policy_violations.some((x) => typeof x !== 'string')) p.push('verdict.policy_violations');
    else if (v.approved && v.policy_violations.length) p.push('approved verdict with policy_violations (PVS-1 §2.3)');
    else if (!v.approved && v.policy_violations.length === 0) p.push('rejected verdict names no violation');
    if (!in01(v.confidence_score)) p.push(`confidence_score ${String(v.confidence_score)} (PVS-1 §2.3)`);
    if (!Array.isArray(v.policy_set) || (v.policy_set as unknown[]).some((x) => typeof x !== 'string')) p.push('verdict.policy_set');
    const md = v.metadata ?? {};
    if (md.engine !== 'steward') p.push(`metadata.engine ${String(md.engine)}`);
    if (typeof md.engine_version !== 'string' || !/^\d+\.\d+\.\d+/.test(md.engine_version)) p.push('metadata.engine_version');
    if (!isNum(md.latency_ms) || md.latency_ms < 0) p.push('metadata.latency_ms');
  }
  const td = r.trust_debt;
  if (!td || Object.keys(td).sort().join(',') !== 'after,before,level') p.push(`trust_debt keys ${td && Object.keys(td)}`);
  else {
    if (!in01(td.before) || !in01(td.after)) p.push(`trust_debt values ${td.before} ${td.after}`);
    if (!LEVELS.includes(td.level)) p.push(`trust_debt.level ${td.level}`);
    // §10.6 default thresholds .30/.50/.75; away from the exact boundaries the level follows `after`.
    const bounds = [0.3, 0.5, 0.75];
    if (bounds.every((b) => Math.abs(td.after - b) > 1e-9)) {
      const want = LEVELS[bounds.filter((b) => td.after > b).length];
      if (td.level !== want) p.push(`trust_debt.level ${td.level} for ${td.after}, want ${want}`);
    }
  }
  return p;
}

const tmp = mkdtempSync(join(tmpdir(), 'steward-contract-eval-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// ---------------------------------------------------------------- run A: shipped blueprints

describe('steward eval on the shipped blueprints/ (run A, traces from a file)', () => {
  const file = join(CONTRACTS, 'repo-traces.jsonl');
  const input = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  let run: Run;
  let out: Result[];
  const byId = (id: string): Result => {
    const r = out.find((x) => x.trace_id === id);
    if (!r) throw new Error(`no output line for ${id}`);
    return r;
  };

  beforeAll(() => {
    run = steward(['eval', '--blueprints', 'blueprints', '--agents', 'blueprints/agents.yaml', 'test/golden/contracts/repo-traces.jsonl']);
    out = lines(run.stdout).map((l) => JSON.parse(l) as Result);
  }, 180_000);

  it('exit 0; stdout is one JSON object per input line, in input order, and nothing else', () => {
    expect(run.status, run.stderr).toBe(0);
    const raw = lines(run.stdout);
    expect(raw).toHaveLength(input.length);
    for (const l of raw) expect(l.trim().startsWith('{') && typeof JSON.parse(l) === 'object').toBe(true);
    expect(out.map((o) => o.trace_id)).toEqual(input.map((l) => (JSON.parse(l) as { trace_id: string }).trace_id));
    expect(out.map((o) => o.agent_id)).toEqual(input.map((l) => (JSON.parse(l) as { agent_id: string }).agent_id));
  });

  it('summary goes to stderr; exactly one warning for the missing LLM (spec-decisions D13)', () => {
    expect(run.stderr).toMatch(/\b13 trace\(s\) evaluated\b/);
    expect(run.stderr.match(/no LLM configured/g) ?? []).toHaveLength(1);
  });

  it('every line has the exact §4.3 key set and types; PVS-1 constraints hold', () => {
    for (const o of out) expect(shapeProblems(o as unknown as Obj), o.trace_id).toEqual([]);
  });

  it('trader-1 (ACL-3, registered tools) selects finance/trading_bot@2.0: same scope and chain as 1.0, higher version', () => {
    for (const id of ['tr-halt', 'tr-60k', 'tr-benign', 'tr-claims']) expect(byId(id).blueprint).toBe('finance/trading_bot@2.0');
  });

  it('a 200,000 trade halts from the critical tripwire; halt short-circuits rules and CTQ (ACGP-1004 §9.2)', () => {
    const r = byId('tr-halt');
    expect(r).toMatchObject({ intervention: 'halt', approved: false, stage: 'tripwire', ctq: null, risk: null, rules: [] });
    expect(r.tripwires.find((t) => t.id === 'trade_size_limit')).toMatchObject({ fired: true, decision: 'halt' });
    expect(r.metrics.filter((m) => m.status === 'ok')).toEqual([]);
    expect(r.verdict.policy_violations.length).toBeGreaterThan(0);
    // halt .50 × critical 2.0 (spec-decisions D7, D15; ACGP-1004 §10.5)
    expect(r.trust_debt).toEqual({ before: 0, after: 1, level: 're_tiering_review' });
  });

  it('a 60,000 trade passes the $100k tripwire and 2.0 has no 50k rule (that cap is 1.0\'s): ok, not halt', () => {
    const r = byId('tr-60k');
    expect(r.tripwires.find((t) => t.id === 'trade_size_limit')?.fired).toBe(false);
    expect(r.rules.map((x) => x.id)).not.toContain('single_trade_volume_cap');
    // the only other signal is the llm risk metric, skipped without an LLM → ctq null, intervention from rules
    expect(r).toMatchObject({ intervention: 'ok', approved: true, ctq: null, risk: null });
  });

  it('trust debt decays by trace timestamp (1 minute after a debt of 1.0); ok adds nothing', () => {
    const r = byId('tr-60k');
    expect(r.trust_debt.before).toBeCloseTo(Math.pow(0.95, 1 / 1440), 5);
    expect(r.trust_debt.after).toBeCloseTo(r.trust_debt.before, 9);
    expect(byId('tr-benign').trust_debt.before).toBeCloseTo(Math.pow(0.95, 2 / 1440), 5);
  });

  it('a benign lookup is ok; nothing matched so ctq and risk are null (spec-decisions D14)', () => {
    const r = byId('tr-benign');
    expect(r).toMatchObject({ intervention: 'ok', approved: true, ctq: null, risk: null });
    expect(r.verdict.policy_violations).toEqual([]);
    expect(r.trust_debt.after).toBeCloseTo(r.trust_debt.before, 9); // ok adds nothing
  });

  it('a trace claiming tier, tenant, scope or blueprint changes nothing (contracts C1)', () => {
    const a = byId('tr-benign');
    const b = byId('tr-claims');
    expect(b.blueprint).toBe(a.blueprint);
    expect(b.intervention).toBe(a.intervention);
    expect(b.verdict.metadata.tenant_id ?? 'acme').toBe('acme');
  });

  it('support-1 (GT-2 alias) gets support/refund_agent@1.0; a failed rule blocks with stage "rule"', () => {
    const r = byId('su-1');
    expect(r.blueprint).toBe('support/refund_agent@1.0');
    expect(r).toMatchObject({ intervention: 'block', approved: false, stage: 'rule', ctq: null, risk: null });
    expect(r.rules).toContainEqual({ id: 'refund_needs_order', passed: false, decision: 'block', reason: 'Refund without an order reference' });
    expect(r.rules.find((x) => x.id === 'refund_self_service_limit')?.passed).toBe(true);
    expect(r.tripwires.every((t) => !t.fired)).toBe(true);
  });

  it('escalate from a rule is not approved and adds no debt by default (ACGP-1004 §10.2, spec-decisions D7)', () => {
    const r = byId('su-2');
    expect(r).toMatchObject({ intervention: 'escalate', approved: false, stage: 'rule' });
    expect(r.trust_debt.before).toBeCloseTo(0.15, 6);
    expect(r.trust_debt.after).toBeCloseTo(0.15, 6);
  });

  it('trust debt accumulates per agent across lines: block .15 each, decay .95/24 h first (spec-decisions D15)', () => {
    expect(byId('su-1').trust_debt).toEqual({ before: 0, after: 0.15, level: 'normal' });
    const s3 = byId('su-3').trust_debt;
    expect(s3.before).toBeCloseTo(0.15, 6);
    expect(s3.after).toBeCloseTo(0.3, 6);
    const s4 = byId('su-4').trust_debt; // 24 h later
    expect(s4.before).toBeCloseTo(0.3 * 0.95, 5);
    expect(s4.after).toBeCloseTo(0.3 * 0.95 + 0.15, 5);
    expect(s4.level).toBe('elevated_monitoring');
    const s5 = byId('su-5'); // 6 days later, ok: decays only
    expect(s5.intervention).toBe('ok');
    expect(s5.trust_debt.before).toBeCloseTo(0.435 * Math.pow(0.95, 6), 5);
    expect(s5.trust_debt.after).toBeCloseTo(s5.trust_debt.before, 9);
    // other agents' debt is their own
    expect(byId('st-out').trust_debt).toEqual({ before: 0, after: 0, level: 'normal' });
  });

  it('an unregistered agent gets only global blueprints, whatever tier/tools/blueprint the trace claims', () => {
    const r = byId('st-claims');
    expect(r.blueprint).toBe('security/data_guard@1.0');
    expect(r.tripwires.map((t) => t.id)).not.toContain('trade_size_limit');
    expect(r.intervention).not.toBe('halt');
    expect(byId('st-out').blueprint).toBe('security/data_guard@1.0');
  });

  it('tripwire severity weights the debt: critical block .15×2, severe halt .50×5 capped at 1', () => {
    const pii = byId('st-pii');
    expect(pii).toMatchObject({ intervention: 'block', stage: 'tripwire' });
    expect(pii.tripwires.find((t) => t.id === 'pii_exposure')?.fired).toBe(true);
    expect(pii.trust_debt.before).toBe(0);
    expect(pii.trust_debt.after).toBeCloseTo(0.3, 6);
    const ex = byId('st-exfil');
    expect(ex).toMatchObject({ intervention: 'halt', stage: 'tripwire', approved: false });
    expect(ex.trust_debt).toEqual({ before: 0, after: 1, level: 're_tiering_review' });
  });

  it('no LLM configured: llm-judge metrics are "skipped" with no score; nothing else matched → ctq/risk null, ok', () => {
    const r = byId('st-out');
    const llm = r.metrics.filter((m) => m.scorer === 'llm-judge');
    expect(llm.length).toBeGreaterThan(0);
    for (const m of llm) expect(m).toMatchObject({ status: 'skipped', score: null });
    expect(r).toMatchObject({ intervention: 'ok', approved: true, ctq: null, risk: null });
    for (const o of out) for (const m of o.metrics.filter((x) => x.scorer === 'llm-judge')) expect(m.status).toBe('skipped');
  });
});

// ---------------------------------------------------------------- run B: probe blueprints on stdin

const D = '2025-01-01T00:00:00Z';
const tr = (o: Obj): string => JSON.stringify({ timestamp: D, ...o });
/** The input of run B, line by line (1-based line numbers matter for the error lines). */
const PROBE_INPUT: string[] = [
  /* 1 */ tr({ trace_id: 'p-ghost-a', agent_id: 'ghost', hook: 'output', content: 'x BAD_A', tier: 'ACL-0' }),
  /* 2 */ tr({ trace_id: 'p-acl0-a', agent_id: 'acl0-agent', hook: 'output', content: 'x BAD_A' }),
  /* 3 */ 'not json',
  /* 4 */ tr({ trace_id: 'p-acl4-a', agent_id: 'acl4-agent', hook: 'output', content: 'x BAD_A', tier: 'ACL-0' }),
  /* 5 */ tr({ trace_id: 'p-ghost2-b', agent_id: 'ghost2', hook: 'output', content: 'x BAD_B', tier: 'ACL-4', agent_tier: 'ACL-4' }),
  /* 6 */ JSON.stringify({ trace_id: 'bad', agent_id: 'ghost' }),
  /* 7 */ tr({ trace_id: 'p-acl2', agent_id: 'acl2-agent', hook: 'output', content: 'fine' }),
  /* 8 */ '[]',
  /* 9 */ '',
  /* 10 */ tr({ trace_id: 'p-nudge', agent_id: 'ghost3', hook: 'tool_call', tool: 'nudge_probe', args: { ok: false } }),
  /* 11 */ tr({ trace_id: 'p-flag', agent_id: 'ghost3', hook: 'tool_call', tool: 'flag_probe', args: { ok: false } }) + '\r',
  /* 12 */ tr({ trace_id: 'p-halt', agent_id: 'ghost4', hook: 'tool_call', tool: 'halt_probe', args: { ok: false } }),
  /* 13 */ tr({ trace_id: 'p-debt-claim', agent_id: 'ghost4', hook: 'tool_call', tool: 'debt_probe', trust_debt: 0 }),
  /* 14 */ tr({ trace_id: 'p-restricted', agent_id: 'ghost4', hook: 'output', content: 'x BAD_A' }),
  /* 15 */ tr({ trace_id: 'p-back-in-time', agent_id: 'ghost4', timestamp: '2024-12-01T00:00:00Z', hook: 'tool_call', tool: 'nudge_probe', args: { ok: true } }),
  /* 16 */ JSON.stringify({ trace_id: 'p-bad-ts', agent_id: 'ghost', timestamp: 'not-a-date', hook: 'output' }),
  /* 17 */ tr({ trace_id: 'p-halt-rule', agent_id: 'ghost5', hook: 'tool_call', tool: 'halt_rule_probe', args: { ok: false } }),
  /* 18 */ tr({ trace_id: 'p-all-bad', agent_id: 'ghost6', hook: 'output', content: 'BAD_A BAD_B BAD_C' }),
  /* 19 */ tr({ trace_id: 'p-clean', agent_id: 'ghost7', hook: 'output', content: 'all good' }),
  /* 20 */ tr({ trace_id: 'p-proto', agent_id: '__proto__', hook: 'output', content: 'x BAD_A' }),
  /* 21 */ tr({ trace_id: 'p-ctor', agent_id: 'constructor', hook: 'output', content: 'x BAD_A' }),
  /* 22 */ tr({ trace_id: 'p-nudge', agent_id: 'ghost3', hook: 'tool_call', tool: 'nudge_probe', args: { ok: false } }), // redelivery of line 10
  /* 23 */ tr({ trace_id: 'p-after-dup', agent_id: 'ghost3', hook: 'tool_call', tool: 'nudge_probe', args: { ok: true } }),
];
const MALFORMED = new Map([
  [3, 'STEWARD_TRACE_JSON'],
  [6, 'STEWARD_TRACE_SCHEMA'],
  [8, 'STEWARD_TRACE_SCHEMA'],
  [16, 'STEWARD_TRACE_SCHEMA'],
]);

describe('steward eval on probe blueprints (run B, stdin, malformed lines)', () => {
  let run: Run;
  let raw: Obj[];
  let out: Result[];
  const byId = (id: string): Result => {
    const r = out.find((x) => x.trace_id === id);
    if (!r) throw new Error(`no output line for ${id}`);
    return r;
  };

  beforeAll(() => {
    run = steward(['eval', '--blueprints', 'test/golden/contracts/probe-blueprints', '-'], PROBE_INPUT.join('\n') + '\n');
    raw = lines(run.stdout).map((l) => JSON.parse(l) as Obj);
    out = raw.filter((o) => !('error' in o)) as unknown as Result[];
  }, 180_000);

  it('exit 1 when any line is malformed; evaluation continues after each one, in input order', () => {
    expect(run.status, run.stderr).toBe(1);
    const expected = PROBE_INPUT.map((l, i) => ({ l, n: i + 1 }))
      .filter(({ l }) => l.trim() !== '')
      .map(({ l, n }) => (MALFORMED.has(n) ? `line ${n}` : (JSON.parse(l) as { trace_id: string }).trace_id));
    expect(raw.map((o) => ('error' in o ? `line ${String(o.line)}` : String(o.trace_id)))).toEqual(expected);
  });

  it('a malformed line is exactly {"line":N,"error":{"code","message"}} with the 1-based input line number', () => {
    const errs = raw.filter((o) => 'error' in o);
    expect(errs.map((o) => o.line)).toEqual([...MALFORMED.keys()]);
    for (const e of errs) {
      expect(Object.keys(e).sort()).toEqual(['error', 'line']);
      const err = e.error as Obj;
      expect(Object.keys(err).sort()).toEqual(['code', 'message']);
      expect(err.code).toBe(MALFORMED.get(e.line as number));
      expect(typeof err.message === 'string' && err.message.length > 0).toBe(true);
    }
    expect(run.stderr).toMatch(/\b4 malformed line/);
  });

  it('every evaluated line conforms to §4.3 / PVS-1', () => {
    for (const o of out) expect(shapeProblems(o as unknown as Obj), o.trace_id).toEqual([]);
  });

  it('approved is true exactly for ok, nudge and flag; an approved verdict lists no violation', () => {
    expect(byId('p-nudge')).toMatchObject({ intervention: 'nudge', approved: true, stage: 'rule' });
    expect(byId('p-nudge').verdict.policy_violations).toEqual([]);
    expect(byId('p-flag')).toMatchObject({ intervention: 'flag', approved: true, stage: 'rule' }); // CRLF line
    expect(byId('p-flag').verdict.policy_violations).toEqual([]);
    const seen = new Set(out.map((o) => o.intervention));
    for (const x of INTERVENTIONS) expect(seen.has(x), x).toBe(true);
  });

  it('nudge .02 then flag .05 accumulate for the same agent (ACGP-1004 §10.2)', () => {
    expect(byId('p-nudge').trust_debt).toEqual({ before: 0, after: 0.02, level: 'normal' });
    expect(byId('p-flag').trust_debt.before).toBeCloseTo(0.02, 6);
    expect(byId('p-flag').trust_debt.after).toBeCloseTo(0.07, 6);
  });

  it('halt (standard severity) adds .50; rules after a halting tripwire are not run', () => {
    const r = byId('p-halt');
    expect(r).toMatchObject({ intervention: 'halt', stage: 'tripwire', approved: false, ctq: null, risk: null });
    expect(r.rules.map((x) => x.id)).not.toContain('after_halt_rule');
    expect(r.trust_debt.before).toBe(0);
    expect(r.trust_debt.after).toBeCloseTo(0.5, 6);
  });

  it('a rule with decision: halt is applied as block — halt comes only from tripwires (spec-decisions D1)', () => {
    expect(byId('p-halt-rule')).toMatchObject({ intervention: 'block', stage: 'rule' });
  });

  it('CTQ never halts: risk 1.0 is block (ACGP-1004 §11.2)', () => {
    const r = byId('p-all-bad');
    expect(r).toMatchObject({ intervention: 'block', stage: 'ctq', ctq: 0, risk: 1 });
  });

  it('CTQ = Σ w·s / Σ w over answered metrics; skipped llm metrics are left out (spec-decisions D4, D13)', () => {
    const a = byId('p-acl0-a');
    expect(a.ctq).toBeCloseTo(0.67, 6);
    expect(a.risk).toBeCloseTo(0.33, 6);
    expect(a.metrics.filter((m) => m.scorer === 'llm-judge').every((m) => m.status === 'skipped')).toBe(true);
    expect(byId('p-clean')).toMatchObject({ intervention: 'ok', stage: 'ctq', ctq: 1, risk: 0 });
  });

  it('the ACL tier comes from the registry: risk .33 is ok at ACL-0, nudge at ACL-2, escalate at ACL-4 (spec-decisions D3)', () => {
    expect(byId('p-acl0-a').intervention).toBe('ok');
    expect(byId('p-acl4-a').intervention).toBe('escalate'); // claims ACL-0 in the trace
  });

  it('an unregistered agent is ACL-2 whatever the trace claims (risk .33 / .38 → nudge, not ok / escalate)', () => {
    expect(byId('p-ghost-a')).toMatchObject({ blueprint: 'contract/probe@1.0', intervention: 'nudge', stage: 'ctq' }); // claims ACL-0
    expect(byId('p-ghost2-b')).toMatchObject({ blueprint: 'contract/probe@1.0', intervention: 'nudge', stage: 'ctq' }); // claims ACL-4
    expect(byId('p-ghost2-b').risk).toBeCloseTo(0.38, 6);
  });

  it('a blueprint scoped to ACL-2 goes to the registered ACL-2 agent, never to an unregistered one', () => {
    expect(byId('p-acl2').blueprint).toBe('contract/scoped@1.0');
    for (const o of out.filter((x) => !x.agent_id.startsWith('acl'))) expect(o.blueprint, o.trace_id).toBe('contract/probe@1.0');
  });

  it('agent ids that are Object.prototype names are plain unknown agents (ACL-2, global blueprint)', () => {
    for (const id of ['p-proto', 'p-ctor']) expect(byId(id)).toMatchObject({ blueprint: 'contract/probe@1.0', intervention: 'nudge' });
  });

  it('DSL trust_debt is the agent\'s debt, not a trust_debt field of the trace', () => {
    const r = byId('p-debt-claim'); // agent is at .50 after its halt; the trace says 0
    expect(r).toMatchObject({ intervention: 'flag', stage: 'rule' });
    expect(r.rules).toContainEqual(expect.objectContaining({ id: 'debt_rule', passed: false }));
  });

  it('restricted mode (debt ≥ .50) tightens the boundaries by .10: risk .33 at ACL-2 is worse than nudge (spec-decisions D6)', () => {
    const r = byId('p-restricted');
    expect(r.trust_debt.before).toBeGreaterThanOrEqual(0.5);
    expect(SEVERITY[r.intervention]).toBeGreaterThan(SEVERITY.nudge);
  });

  it('a redelivered trace id moves the debt once (docs/architecture.md stages: once per event id)', () => {
    const dups = out.filter((o) => o.trace_id === 'p-nudge');
    expect(dups).toHaveLength(2);
    expect(dups[1].intervention).toBe('nudge');
    expect(byId('p-after-dup').trust_debt.before).toBeCloseTo(byId('p-flag').trust_debt.after, 6);
  });

  it('a trace older than the agent\'s last one never increases its debt through decay', () => {
    const r = byId('p-back-in-time');
    const prev = byId('p-restricted').trust_debt.after;
    expect(r.trust_debt.before).toBeLessThanOrEqual(prev + 1e-9);
    expect(r.trust_debt.after).toBeLessThanOrEqual(prev + 1e-9);
  });
});

// ---------------------------------------------------------------- run D: an LLM configured but unreachable

describe('steward eval with an LLM configured but unreachable (run D, spec-decisions D5, D13)', () => {
  let run: Run;
  let out: Result[];
  beforeAll(() => {
    const input = [
      tr({ trace_id: 'l-ghost', agent_id: 'ghost', hook: 'output', content: 'fine' }),
      tr({ trace_id: 'l-acl4', agent_id: 'acl4-agent', hook: 'output', content: 'fine' }),
      tr({ trace_id: 'l-acl0', agent_id: 'acl0-agent', hook: 'output', content: 'x BAD_A' }),
    ];
    // port 9 (discard) on loopback: connection refused at once
    run = steward(['eval', '--blueprints', 'test/golden/contracts/probe-blueprints', '-'], input.join('\n') + '\n', {
      STEWARD_LLM_BASE_URL: 'http://127.0.0.1:9',
      STEWARD_LLM_MODEL: 'contract-test',
      STEWARD_LLM_API_KEY: 'x',
    });
    out = lines(run.stdout).map((l) => JSON.parse(l) as Result);
  }, 180_000);

  it('llm metrics are "unavailable" with no made-up score; the deterministic metrics still count', () => {
    expect(run.status, run.stderr).toBe(0);
    expect(out).toHaveLength(3);
    for (const o of out) {
      expect(shapeProblems(o as unknown as Obj), o.trace_id).toEqual([]);
      const llm = o.metrics.filter((m) => m.scorer === 'llm-judge');
      expect(llm.length).toBeGreaterThan(0);
      for (const m of llm) expect(m).toMatchObject({ status: 'unavailable', score: null });
      expect(o.metrics.filter((m) => /^m_[abc]$/.test(m.name)).every((m) => m.status === 'ok')).toBe(true);
    }
    expect(out[2].ctq).toBeCloseTo(0.67, 6);
  });

  it('default fallback: allow_and_log (flag) below ACL-4, escalate from ACL-4', () => {
    expect(out.map((o) => [o.trace_id, o.intervention])).toEqual([
      ['l-ghost', 'flag'],
      ['l-acl4', 'escalate'],
      ['l-acl0', 'flag'],
    ]);
    expect(out[0].approved).toBe(true);
    expect(out[1].approved).toBe(false);
  });

  it('verdict confidence reflects the missing coverage (spec-decisions D4)', () => {
    for (const o of out) {
      expect(o.verdict.confidence_score).toBeGreaterThanOrEqual(0);
      expect(o.verdict.confidence_score).toBeLessThan(1);
    }
  });
});

// ---------------------------------------------------------------- run C: exit 2

describe('steward eval exit 2 (bad arguments, invalid blueprints or registry)', () => {
  it('no --blueprints / unknown option / missing file / invalid blueprint dir / invalid agents file → 2, stdout empty', () => {
    const cases: [string, string[]][] = [];
    cases.push(['no --blueprints', ['eval', 'test/golden/contracts/repo-traces.jsonl']]);
    cases.push(['unknown option', ['eval', '--blueprints', 'blueprints', '--frobnicate', '-']]);
    cases.push(['missing traces file', ['eval', '--blueprints', 'blueprints', join(tmp, 'nope.jsonl')]]);
    const bad = join(tmp, 'bad-bp');
    rmSync(bad, { recursive: true, force: true });
    // invalid blueprint directory: unknown key and a bad semver
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, 'x.yaml'), 'id: c/x@1.0\nversion: "1.0"\ndescription: d\nbogus: 1\n');
    cases.push(['invalid blueprints', ['eval', '--blueprints', bad, 'test/golden/contracts/repo-traces.jsonl']]);
    writeFileSync(join(tmp, 'agents.yaml'), 'agents:\n  - id: a\n    tier: ACL-9\n');
    cases.push(['invalid agents', ['eval', '--blueprints', 'blueprints', '--agents', join(tmp, 'agents.yaml'), 'test/golden/contracts/repo-traces.jsonl']]);
    for (const [name, args] of cases) {
      const r = steward(args);
      expect(r.status, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stdout, name).toBe('');
      if (name === 'invalid blueprints') {
        expect(r.stderr).toMatch(/x\.yaml:2:10: STEWARD_BLUEPRINT_SEMVER: /);
        expect(r.stderr).toMatch(/x\.yaml:4:1: STEWARD_BLUEPRINT_UNKNOWN_KEY: /);
      }
    }
  }, 180_000);
});
