/**
 * Verification sheets (ACM §14.2): YAML per capability, named checks written in the condition DSL over
 * the task's `input.*`, `output.*`, `error.*`, `task.*` and `context.facts.*`. Parsed with positions,
 * compiled once, evaluated by Steward on `task.post`. The agent's own `verification` results are claims:
 * recorded next to Steward's results, and a different answer for the same check id is a disagreement.
 */
import { parseSource } from '../blueprint/source.js';
import { compileCondition, STATEFUL_FUNCTIONS, type DslCompileOptions } from '../dsl/index.js';
import type { SourcePosition } from '../../errors.js';
import type { AgentInfo, CompiledCondition, EvalContext, Trace } from '../types.js';
import { jsonPath, type AcmProblem } from './problems.js';
import { schemaProblems } from './validate.js';

export interface CompiledCheck {
  id: string;
  condition: CompiledCondition;
  position?: SourcePosition;
}

export interface CompiledSheet {
  capability: string;
  file: string;
  /** The sheet's text, kept for the replay bundle. */
  text: string;
  checks: CompiledCheck[];
}

export type VerificationSheets = ReadonlyMap<string, CompiledSheet>;

export interface VerificationResult {
  id: string;
  passed: boolean;
  /** Set when the check could not be evaluated (counts as failed). */
  error?: string;
}

export interface VerificationClaim {
  id: string;
  passed: boolean;
  detail?: unknown;
}

export interface VerificationOutcome {
  /** The sheet's capability (one sheet per capability). */
  capability: string;
  results: VerificationResult[];
  claims: VerificationClaim[];
  /** Check ids where the agent's claim differs from Steward's result. */
  disagreements: { id: string; steward: boolean; agent: boolean }[];
  /** Check ids that failed by Steward's evaluation. */
  failed: string[];
}

export interface VerificationFacts {
  task: Record<string, unknown>;
  input: unknown;
  output: unknown;
  error: unknown;
  contextFacts: Record<string, unknown>;
}

/** Parses and compiles sheets; problems carry FILE:LINE:COL. Two sheets for one capability are an error. */
export function compileVerificationSheets(files: readonly { file: string; text: string }[], dsl: DslCompileOptions): { sheets: Map<string, CompiledSheet>; problems: AcmProblem[] } {
  const sheets = new Map<string, CompiledSheet>();
  const problems: AcmProblem[] = [];
  for (const f of files) {
    const parsed = parseSource(f.file, f.text);
    if (!parsed.doc) {
      for (const e of parsed.errors) problems.push({ code: 'STEWARD_ACM_SHEET', message: e.message, path: '$', position: e.position });
      continue;
    }
    const doc = parsed.doc;
    const schema = schemaProblems('verification-sheet', doc.value, '$', 'STEWARD_ACM_SHEET');
    if (schema.length > 0) {
      for (const p of schema) problems.push({ ...p, position: doc.pos(segsOf(p.path)) });
      continue;
    }
    const v = doc.value as { capability: string; checks: { id: string; condition: unknown }[] };
    const checks: CompiledCheck[] = [];
    const ids = new Set<string>();
    v.checks.forEach((c, i) => {
      const segs = ['checks', i, 'condition'];
      if (ids.has(c.id)) problems.push({ code: 'STEWARD_ACM_DUPLICATE_ID', message: `check id '${c.id}' appears twice`, path: jsonPath(['checks', i, 'id']), position: doc.pos(['checks', i, 'id']) });
      ids.add(c.id);
      const r = compileCondition(c.condition, dsl);
      for (const p of r.problems) {
        const at = p.path ? [...segs, ...segsOf('$.' + p.path)] : segs;
        problems.push({ code: p.code, message: p.message, path: jsonPath(at), offset: p.offset, position: p.offset !== undefined ? doc.posInScalar(at, p.offset) : doc.pos(at) });
      }
      if (!r.condition) return;
      // Checks must give the same answer on replay: no state reads, no async (custom) functions.
      const stateful = [...r.condition.functions].filter((fn) => STATEFUL_FUNCTIONS.has(fn));
      if (stateful.length > 0 || r.condition.async) {
        problems.push({ code: 'STEWARD_ACM_SHEET', message: `checks read the task's recorded facts only; ${stateful.join(', ') || 'an async function'} reads live state`, path: jsonPath(segs), position: doc.pos(segs) });
        return;
      }
      checks.push({ id: c.id, condition: r.condition, position: doc.pos(['checks', i]) });
    });
    if (sheets.has(v.capability)) {
      problems.push({ code: 'STEWARD_ACM_DUPLICATE_ID', message: `a second verification sheet for capability '${v.capability}' (first: ${sheets.get(v.capability)!.file})`, path: '$.capability', position: doc.pos(['capability']) });
      continue;
    }
    sheets.set(v.capability, { capability: v.capability, file: f.file, text: f.text, checks });
  }
  return { sheets, problems };
}

const SHEET_AGENT: AgentInfo = { id: '', tenant: '', tier: 'ACL-0', tools: [], domains: [], registered: false };

/** Runs one sheet over a task's recorded facts and sets the agent's claims beside the results. */
export function runVerification(sheet: CompiledSheet, facts: VerificationFacts, claims: readonly VerificationClaim[] = []): VerificationOutcome {
  const root = { task: facts.task, input: facts.input, output: facts.output, error: facts.error, context: { facts: facts.contextFacts } };
  const ctx: EvalContext = { trace: root as unknown as Trace, agent: SHEET_AGENT, trustDebt: 0, nowMs: 0, stateNamespace: '' };
  const results: VerificationResult[] = sheet.checks.map((c) => {
    try {
      return { id: c.id, passed: c.condition.evaluate(ctx) === true };
    } catch (e) {
      // Fail closed: a check that cannot be evaluated has not passed.
      return { id: c.id, passed: false, error: (e as Error).message };
    }
  });
  const byId = new Map(results.map((r) => [r.id, r.passed]));
  const disagreements = claims.filter((c) => byId.has(c.id) && byId.get(c.id) !== c.passed).map((c) => ({ id: c.id, steward: byId.get(c.id)!, agent: c.passed }));
  return { capability: sheet.capability, results, claims: claims.map((c) => ({ ...c })), disagreements, failed: results.filter((r) => !r.passed).map((r) => r.id) };
}

/** The sheets that apply to a task: its capability's, then those named in `verificationRefs`. */
export function sheetsFor(sheets: VerificationSheets, capability: string | undefined, refs: readonly string[] = []): CompiledSheet[] {
  const out: CompiledSheet[] = [];
  for (const name of [capability, ...refs]) {
    const s = name === undefined ? undefined : sheets.get(name);
    if (s && !out.includes(s)) out.push(s);
  }
  return out;
}

function segsOf(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  const re = /\.([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+)\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(path)) !== null) out.push(m[1] ?? Number(m[2]));
  return out;
}
