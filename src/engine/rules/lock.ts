/**
 * The rules lock file (docs/rules.md "Lock file"): `<blueprint file without extension>.rules.lock`, JSON,
 * written by `steward compile-rules`, read by every loader. The extension keeps the blueprint walker from
 * reading it as a blueprint; the stable key order and indentation keep its diffs reviewable.
 */
import { createHash } from 'node:crypto';
import { StewardError } from '../../errors.js';
import type { RuleLock, RuleLockEntry, RuleTest } from './types.js';

export const RULE_LOCK_SUFFIX = '.rules.lock';

/** `support/refunds@1.0.yaml` → `support/refunds@1.0.rules.lock`. */
export function ruleLockPath(blueprintFile: string): string {
  return blueprintFile.replace(/\.(ya?ml|json)$/i, '') + RULE_LOCK_SUFFIX;
}

export function ruleTextHash(text: string): string {
  return createHash('sha256').update(text.trim(), 'utf8').digest('hex');
}

/** The hash `dsl_sha256` records: of the DSL text (a condition) or of the steps as JSON (a workflow). */
export function compiledFormHash(e: Pick<RuleLockEntry, 'kind' | 'dsl' | 'workflow'>): string {
  const form = e.kind === 'workflow' ? JSON.stringify(e.workflow?.steps ?? []) : (e.dsl ?? '');
  return createHash('sha256').update(form, 'utf8').digest('hex');
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseTest(t: unknown): RuleTest | undefined {
  if (!isObj(t) || (t.expect !== 'pass' && t.expect !== 'fail') || (t.source !== 'llm' && t.source !== 'author')) return undefined;
  return {
    source: t.source,
    ...(typeof t.name === 'string' && { name: t.name }),
    ...(isObj(t.trace) && { trace: t.trace }),
    ...(Array.isArray(t.calls) && { calls: t.calls.map(String) }),
    expect: t.expect,
    ...(typeof t.passed === 'boolean' && { passed: t.passed }),
  };
}

function parseEntry(e: unknown): RuleLockEntry | undefined {
  if (!isObj(e) || typeof e.id !== 'string' || typeof e.text_sha256 !== 'string') return undefined;
  if ((e.kind !== 'condition' && e.kind !== 'workflow') || (e.outcome !== 'mechanical' && e.outcome !== 'text')) return undefined;
  const steps = isObj(e.workflow) && Array.isArray(e.workflow.steps) ? e.workflow.steps.map(String) : undefined;
  return {
    id: e.id,
    text_sha256: e.text_sha256,
    model: typeof e.model === 'string' ? e.model : null,
    kind: e.kind,
    ...(typeof e.dsl === 'string' && { dsl: e.dsl }),
    ...(steps && { workflow: { steps } }),
    ...(typeof e.dsl_sha256 === 'string' && { dsl_sha256: e.dsl_sha256 }),
    tests: Array.isArray(e.tests) ? e.tests.map(parseTest).filter((t): t is RuleTest => t !== undefined) : [],
    outcome: e.outcome,
    ...(typeof e.reason === 'string' && { reason: e.reason }),
  };
}

/** A lock that does not parse is a warning for the loader (every rule then is a text check), never a crash. */
export function parseRuleLock(text: string, file: string): { lock?: RuleLock; problem?: StewardError } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return { problem: new StewardError('STEWARD_RULES_LOCK', `rules lock is not JSON (${(e as Error).message}); its rules are text checks until \`steward compile-rules\` rewrites it`, { position: { file, line: 1, col: 1 } }) };
  }
  if (!isObj(doc) || doc.version !== 1 || !Array.isArray(doc.rules)) {
    return { problem: new StewardError('STEWARD_RULES_LOCK', 'rules lock must be {"version": 1, "blueprint": ..., "rules": [...]}', { position: { file, line: 1, col: 1 } }) };
  }
  const rules = doc.rules.map(parseEntry).filter((r): r is RuleLockEntry => r !== undefined);
  return { lock: { version: 1, blueprint: typeof doc.blueprint === 'string' ? doc.blueprint : '', rules } };
}

/** Stable text: entries in authored order, keys in the interface's order, two-space indentation. */
export function renderRuleLock(lock: RuleLock): string {
  const entry = (e: RuleLockEntry) => ({
    id: e.id,
    text_sha256: e.text_sha256,
    model: e.model,
    kind: e.kind,
    ...(e.dsl !== undefined && { dsl: e.dsl }),
    ...(e.workflow && { workflow: { steps: e.workflow.steps } }),
    ...(e.dsl_sha256 !== undefined && { dsl_sha256: e.dsl_sha256 }),
    outcome: e.outcome,
    ...(e.reason !== undefined && { reason: e.reason }),
    tests: e.tests.map((t) => ({ source: t.source, ...(t.name && { name: t.name }), ...(t.trace && { trace: t.trace }), ...(t.calls && { calls: t.calls }), expect: t.expect, ...(t.passed !== undefined && { passed: t.passed }) })),
  });
  return JSON.stringify({ version: 1, blueprint: lock.blueprint, rules: lock.rules.map(entry) }, null, 2) + '\n';
}
