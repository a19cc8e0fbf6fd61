/**
 * Blueprint unit tests (`steward test`, like `opa test`). A `*.test.yaml` file:
 *   llm_score: 0.9            # optional: an in-process judge answering this score (default: no LLM → skipped)
 *   tests:
 *     - name: large trade is blocked
 *       trace: {agent_id: trader-1, hook: tool_call, tool: execute_trade, args: {trade_value: 75000}}
 *       # or traces: [...] — a sequence on one fresh state; `expect` applies to the last trace
 *       llm_score: 0.4          # optional per test; `llm: fail` makes the judge time out (unavailable)
 *       use_blueprint: finance/trading_bot@1.0   # optional (also file-wide): pin the blueprint instead of selection
 *       expect: {intervention: block, stage: rule, approved: false, blueprint: ..., fired: [ids], not_fired: [ids],
 *                failed_rules: [ids], risk: [min, max], ctq: [min, max], trust_debt_level: normal, metrics: {name: status}}
 * trace_id and timestamp are filled in when missing (one minute apart). Each test gets a fresh engine.
 */
import { parse } from 'yaml';
import { StewardError } from '../errors.js';
import type { BlueprintSet } from '../engine/blueprint/index.js';
import type { EvalRecord, StewardEngine } from '../engine/steward-engine.js';
import { parseTimestamp } from '../engine/time.js';
import type { LlmClient, Trace } from '../engine/types.js';

export interface BlueprintTest {
  name: string;
  traces: Record<string, unknown>[];
  expect: Record<string, unknown>;
  llm?: { score?: number; fail?: boolean };
  /** Evaluate against this blueprint instead of the one selection would pick (e.g. an older version). */
  useBlueprint?: string;
}

export interface TestFile {
  tests: BlueprintTest[];
}

const EXPECT_KEYS = new Set(['intervention', 'stage', 'approved', 'blueprint', 'fired', 'not_fired', 'failed_rules', 'risk', 'ctq', 'trust_debt_level', 'metrics']);

export function parseTestFile(text: string, file: string): TestFile {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new StewardError('STEWARD_EVAL', `${file}: invalid YAML: ${(e as Error).message}`);
  }
  const d = (doc ?? {}) as Record<string, unknown>;
  if (!Array.isArray(d.tests)) throw new StewardError('STEWARD_EVAL', `${file}: expected a 'tests' list`);
  const fileLlm = llmOf(d);
  const tests = d.tests.map((raw, i): BlueprintTest => {
    const t = (raw ?? {}) as Record<string, unknown>;
    const where = `${file}: tests[${i}]${typeof t.name === 'string' ? ` (${t.name})` : ''}`;
    const traces = Array.isArray(t.traces) ? t.traces : t.trace ? [t.trace] : [];
    if (traces.length === 0) throw new StewardError('STEWARD_EVAL', `${where}: needs 'trace' or 'traces'`);
    if (!t.expect || typeof t.expect !== 'object') throw new StewardError('STEWARD_EVAL', `${where}: needs 'expect'`);
    const unknown = Object.keys(t.expect).filter((k) => !EXPECT_KEYS.has(k));
    if (unknown.length) throw new StewardError('STEWARD_EVAL', `${where}: unknown expect key(s) ${unknown.join(', ')} (known: ${[...EXPECT_KEYS].join(', ')})`);
    const use = t.use_blueprint ?? d.use_blueprint;
    if (use !== undefined && typeof use !== 'string') throw new StewardError('STEWARD_EVAL', `${where}: use_blueprint must be a blueprint id`);
    return {
      name: typeof t.name === 'string' ? t.name : `test ${i + 1}`,
      traces: traces as Record<string, unknown>[],
      expect: t.expect as Record<string, unknown>,
      llm: llmOf(t) ?? fileLlm,
      ...(use ? { useBlueprint: use } : {}),
    };
  });
  return { tests };
}

function llmOf(o: Record<string, unknown>): BlueprintTest['llm'] | undefined {
  if (o.llm === 'fail') return { fail: true };
  if (typeof o.llm_score === 'number') return { score: o.llm_score };
  return undefined;
}

export function fixedJudge(l: NonNullable<BlueprintTest['llm']>): LlmClient {
  return {
    async complete() {
      if (l.fail) throw new StewardError('STEWARD_LLM_TIMEOUT', 'scripted judge timeout (llm: fail)', { retryable: false });
      return { text: JSON.stringify({ score: l.score ?? 0.9, explanation: 'steward test fixed judge' }), latencyMs: 0 };
    },
  };
}

const BASE_MS = Date.parse('2025-01-01T09:00:00Z');

export function fillTrace(raw: Record<string, unknown>, testIndex: number, i: number): { trace: Trace; nowMs: number } {
  const timestamp = typeof raw.timestamp === 'string' ? raw.timestamp : new Date(BASE_MS + i * 60_000).toISOString();
  const trace = { trace_id: `test-${testIndex}-${i}`, hook: 'output', ...raw, timestamp } as Trace;
  return { trace, nowMs: parseTimestamp(timestamp) };
}

/** Differences between expectation and outcome, one readable line each; empty = pass. */
export function diffExpectation(exp: Record<string, unknown>, r: EvalRecord): string[] {
  const out: string[] = [];
  const s = r.score;
  const d = r.decision;
  const cmp = (key: string, got: unknown) => {
    if (exp[key] !== undefined && exp[key] !== got) out.push(`${key}: expected ${JSON.stringify(exp[key])}, got ${JSON.stringify(got)}`);
  };
  cmp('intervention', s.intervention);
  cmp('stage', s.stage);
  cmp('approved', s.approved);
  cmp('blueprint', s.blueprint);
  cmp('trust_debt_level', r.trustDebt.level);
  const fired = d.tripwires.filter((t) => t.fired).map((t) => t.id);
  const failed = d.rules.filter((x) => !x.passed).map((x) => x.id);
  const setEq = (key: string, got: string[]) => {
    const want = exp[key];
    if (!Array.isArray(want)) return;
    const w = [...want].map(String).sort();
    const g = [...got].sort();
    if (JSON.stringify(w) !== JSON.stringify(g)) out.push(`${key}: expected [${w.join(', ')}], got [${g.join(', ')}]`);
  };
  setEq('fired', fired);
  setEq('failed_rules', failed);
  if (Array.isArray(exp.not_fired)) {
    const bad = (exp.not_fired as string[]).filter((id) => fired.includes(id));
    if (bad.length) out.push(`not_fired: ${bad.join(', ')} fired`);
  }
  const range = (key: 'risk' | 'ctq', got: number | null) => {
    const want = exp[key];
    if (want === undefined) return;
    if (want === null) {
      if (got !== null) out.push(`${key}: expected null, got ${got}`);
      return;
    }
    const [lo, hi] = Array.isArray(want) ? (want as number[]) : [want as number, want as number];
    if (got === null || got < lo - 1e-9 || got > hi + 1e-9) out.push(`${key}: expected ${lo === hi ? lo : `[${lo}, ${hi}]`}, got ${got}`);
  };
  range('risk', s.risk);
  range('ctq', s.ctq);
  if (exp.metrics && typeof exp.metrics === 'object') {
    for (const [name, status] of Object.entries(exp.metrics as Record<string, unknown>)) {
      const m = s.metrics.find((x) => x.name === name);
      if (!m) out.push(`metrics.${name}: expected ${String(status)}, metric did not apply`);
      else if (m.status !== status) out.push(`metrics.${name}: expected ${String(status)}, got ${m.status}`);
    }
  }
  return out;
}

export interface TestOutcome {
  file: string;
  name: string;
  problems: string[];
  error?: string;
}

export async function runBlueprintTest(
  t: BlueprintTest,
  idx: number,
  makeEngine: (llm: LlmClient | null, blueprints?: () => BlueprintSet) => StewardEngine,
  set?: BlueprintSet,
): Promise<string[]> {
  let forced: (() => BlueprintSet) | undefined;
  if (t.useBlueprint && set) {
    const bp = set.blueprints.find((b) => b.id === t.useBlueprint) ?? set.get(t.useBlueprint);
    if (!bp) return [`use_blueprint: no blueprint ${t.useBlueprint} in the directory`];
    const pinned: BlueprintSet = { blueprints: set.blueprints, get: (r) => set.get(r), select: () => bp };
    forced = () => pinned;
  }
  const engine = makeEngine(t.llm ? fixedJudge(t.llm) : null, forced);
  let last: EvalRecord | undefined;
  for (let i = 0; i < t.traces.length; i++) {
    const { trace, nowMs } = fillTrace(t.traces[i], idx, i);
    if (!Number.isFinite(nowMs)) return [`traces[${i}]: timestamp is not ISO-8601`];
    last = await engine.evaluate(trace, nowMs);
  }
  return diffExpectation(t.expect, last!);
}
