/**
 * `steward diff` core (ACGP-1004 §13.3): compares two resolved blueprints and classifies every change.
 *   breaking (MAJOR): removed check/tripwire/metric, tightened thresholds (scoring, ctq, evidence),
 *     new required field (evidence block, required metric), tripwire severity change, changed scoring
 *     semantics (metric weight/scorer/type, profile, aggregation, trust_debt, fallback), changed rule or
 *     tripwire logic, scope change, more severe new tripwire (critical/severe).
 *   non-breaking (MINOR): added optional check (rule or metric without `required: true`), added
 *     standard-severity tripwire, relaxed thresholds, less severe on_fail, removed evidence, lists changes.
 *   patch: description, reasons, metadata, calibration, migration, rollback, compatibility, x- fields.
 */
import semver from 'semver';
import { severityRank, type Intervention } from '../types.js';

export type ChangeClass = 'breaking' | 'non-breaking' | 'patch';
export type Bump = 'none' | 'patch' | 'minor' | 'major';

export interface Change {
  class: ChangeClass;
  path: string;
  message: string;
}

export interface DiffResult {
  changes: Change[];
  required: Bump;
  actual: Bump | 'downgrade';
  ok: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const byId = (v: unknown): Map<string, Obj> => new Map((Array.isArray(v) ? v : []).filter(isObj).map((c) => [String(c.id), c]));

function diffThresholds(out: Change[], path: string, a: unknown, b: unknown, tighterWhen: 'lower' | 'higher'): void {
  const A = isObj(a) ? a : {};
  const B = isObj(b) ? b : {};
  for (const k of [...new Set([...Object.keys(A), ...Object.keys(B)])]) {
    const x = A[k];
    const y = B[k];
    if (same(x, y)) continue;
    if (typeof x !== 'number' || typeof y !== 'number') {
      out.push({ class: y === undefined ? 'non-breaking' : 'breaking', path: `${path}.${k}`, message: y === undefined ? `removed boundary ${k} (relaxed)` : `added boundary ${k}=${String(y)} (tightened)` });
      continue;
    }
    const tighter = tighterWhen === 'lower' ? y < x : y > x;
    out.push({ class: tighter ? 'breaking' : 'non-breaking', path: `${path}.${k}`, message: `${k}: ${x} -> ${y} (${tighter ? 'tightened' : 'relaxed'})` });
  }
}

function isRequiredCheck(c: Obj): boolean {
  return isObj(c.metric) && c.metric.required === true;
}

function diffChecks(out: Change[], a: unknown, b: unknown): void {
  const A = byId(a);
  const B = byId(b);
  for (const [id] of A) if (!B.has(id)) out.push({ class: 'breaking', path: `checks.${id}`, message: `removed check '${id}'` });
  for (const [id, c] of B) {
    const old = A.get(id);
    if (!old) {
      const req = isRequiredCheck(c);
      out.push({ class: req ? 'breaking' : 'non-breaking', path: `checks.${id}`, message: `added ${req ? 'required' : 'optional'} check '${id}'` });
      continue;
    }
    if (same(old, c)) continue;
    if (!same(old.when, c.when)) out.push({ class: 'breaking', path: `checks.${id}.when`, message: `check '${id}' now triggers on different traces` });
    if (isObj(old.rule) && isObj(c.rule)) {
      if (!same(old.rule.condition, c.rule.condition)) out.push({ class: 'breaking', path: `checks.${id}.rule.condition`, message: `rule '${id}' condition changed` });
      diffOnFail(out, `checks.${id}.rule.on_fail`, old.rule.on_fail, c.rule.on_fail);
    } else if (isObj(old.metric) && isObj(c.metric)) {
      const m0 = old.metric;
      const m1 = c.metric;
      if (!same(m0.weight, m1.weight) || !same(m0.check, m1.check) || !same(m0.name, m1.name))
        out.push({ class: 'breaking', path: `checks.${id}.metric`, message: `metric '${id}' scoring changed (name, weight or check)` });
      if (m0.required !== true && m1.required === true) out.push({ class: 'breaking', path: `checks.${id}.metric.required`, message: `metric '${id}' became required` });
      else if (m0.required === true && m1.required !== true) out.push({ class: 'non-breaking', path: `checks.${id}.metric.required`, message: `metric '${id}' became optional` });
    } else out.push({ class: 'breaking', path: `checks.${id}`, message: `check '${id}' changed kind (rule/metric)` });
    if (!same(old.description, c.description)) out.push({ class: 'patch', path: `checks.${id}.description`, message: `check '${id}' description changed` });
  }
}

function diffOnFail(out: Change[], path: string, a: unknown, b: unknown): void {
  const A = (isObj(a) ? a : {}) as { decision?: Intervention; reason?: string };
  const B = (isObj(b) ? b : {}) as { decision?: Intervention; reason?: string };
  if (A.decision !== B.decision && A.decision && B.decision) {
    const stricter = severityRank(B.decision) > severityRank(A.decision);
    out.push({ class: stricter ? 'breaking' : 'non-breaking', path: `${path}.decision`, message: `decision ${A.decision} -> ${B.decision} (${stricter ? 'stricter' : 'more lenient'})` });
  }
  if (A.reason !== B.reason) out.push({ class: 'patch', path: `${path}.reason`, message: 'reason text changed' });
}

function diffTripwires(out: Change[], a: unknown, b: unknown): void {
  const A = byId(a);
  const B = byId(b);
  for (const [id] of A) if (!B.has(id)) out.push({ class: 'breaking', path: `tripwires.${id}`, message: `removed tripwire '${id}'` });
  for (const [id, t] of B) {
    const old = A.get(id);
    const sev = (x: Obj): string => (typeof x.severity === 'string' ? x.severity : 'standard');
    if (!old) {
      const std = sev(t) === 'standard';
      out.push({ class: std ? 'non-breaking' : 'breaking', path: `tripwires.${id}`, message: `added ${sev(t)}-severity tripwire '${id}'` });
      continue;
    }
    if (same(old, t)) continue;
    if (sev(old) !== sev(t)) out.push({ class: 'breaking', path: `tripwires.${id}.severity`, message: `tripwire '${id}' severity ${sev(old)} -> ${sev(t)}` });
    for (const k of ['condition', 'when', 'eval_tier', 'latency_budget_ms', 'requires_state'])
      if (!same(old[k], t[k])) out.push({ class: 'breaking', path: `tripwires.${id}.${k}`, message: `tripwire '${id}' ${k} changed` });
    diffOnFail(out, `tripwires.${id}.on_fail`, old.on_fail, t.on_fail);
    if (!same(old.description, t.description)) out.push({ class: 'patch', path: `tripwires.${id}.description`, message: `tripwire '${id}' description changed` });
  }
}

function diffCtq(out: Change[], a: unknown, b: unknown): void {
  const A = isObj(a) ? a : {};
  const B = isObj(b) ? b : {};
  for (const k of ['profile', 'aggregation'])
    if (!same(A[k], B[k])) out.push({ class: 'breaking', path: `ctq.${k}`, message: `ctq ${k} ${JSON.stringify(A[k] ?? null)} -> ${JSON.stringify(B[k] ?? null)} (scoring semantics)` });
  const mA = isObj(A.metrics) ? A.metrics : {};
  const mB = isObj(B.metrics) ? B.metrics : {};
  for (const n of Object.keys(mA)) if (!(n in mB)) out.push({ class: 'breaking', path: `ctq.metrics.${n}`, message: `removed ctq metric '${n}'` });
  for (const [n, m] of Object.entries(mB)) {
    if (!(n in mA)) out.push({ class: 'non-breaking', path: `ctq.metrics.${n}`, message: `added ctq metric '${n}'` });
    else if (!same(mA[n], m)) out.push({ class: 'breaking', path: `ctq.metrics.${n}`, message: `ctq metric '${n}' changed (weight, scorer or parameters)` });
  }
  diffThresholds(out, 'ctq.thresholds', A.thresholds, B.thresholds, 'higher');
}

function diffEvidence(out: Change[], a: unknown, b: unknown): void {
  if (same(a, b)) return;
  if (!isObj(a)) return void out.push({ class: 'breaking', path: 'evidence', message: 'added required evidence block' });
  if (!isObj(b)) return void out.push({ class: 'non-breaking', path: 'evidence', message: 'removed evidence block (relaxed)' });
  diffThresholds(out, 'evidence', { min_certified_sources: a.min_certified_sources, min_trust_score: a.min_trust_score }, { min_certified_sources: b.min_certified_sources, min_trust_score: b.min_trust_score }, 'higher');
  const ca = new Set((Array.isArray(a.source_categories) ? a.source_categories : []).map(String));
  const cb = new Set((Array.isArray(b.source_categories) ? b.source_categories : []).map(String));
  for (const c of cb) if (!ca.has(c)) out.push({ class: 'breaking', path: 'evidence.source_categories', message: `added required source category '${c}'` });
  for (const c of ca) if (!cb.has(c)) out.push({ class: 'non-breaking', path: 'evidence.source_categories', message: `removed source category '${c}'` });
}

const PATCH_FIELDS = ['description', 'metadata', 'calibration', 'migration', 'rollback', 'compatibility', 'inherits'];
const RANK: Record<Bump, number> = { none: 0, patch: 1, minor: 2, major: 3 };

export function actualBump(from: string, to: string): Bump | 'downgrade' {
  const a = semver.parse(from);
  const b = semver.parse(to);
  if (!a || !b) return 'downgrade';
  const c = semver.compare(b, a);
  if (c < 0) return 'downgrade';
  if (c === 0) return 'none';
  if (b.major > a.major) return 'major';
  if (b.minor > a.minor) return 'minor';
  return 'patch';
}

/** Compares two resolved authored blueprints (CompiledBlueprint.resolved). */
export function diffBlueprints(oldBp: Obj, newBp: Obj): DiffResult {
  const out: Change[] = [];
  diffChecks(out, oldBp.checks, newBp.checks);
  diffTripwires(out, oldBp.tripwires, newBp.tripwires);
  const th = (x: Obj): unknown => (isObj(x.scoring) ? x.scoring.thresholds : undefined);
  diffThresholds(out, 'scoring.thresholds', th(oldBp), th(newBp), 'lower');
  diffCtq(out, oldBp.ctq, newBp.ctq);
  diffEvidence(out, oldBp.evidence, newBp.evidence);
  if (!same(oldBp.scope, newBp.scope)) out.push({ class: 'breaking', path: 'scope', message: 'scope changed (different agents are governed)' });
  if (!same(oldBp.trust_debt, newBp.trust_debt)) out.push({ class: 'breaking', path: 'trust_debt', message: 'trust_debt configuration changed (scoring semantics)' });
  if (!same(oldBp.governance, newBp.governance)) out.push({ class: 'breaking', path: 'governance', message: 'governance fallback changed' });
  if (!same(oldBp.lists, newBp.lists)) out.push({ class: 'non-breaking', path: 'lists', message: 'named lists changed' });
  for (const k of [...PATCH_FIELDS, ...Object.keys({ ...oldBp, ...newBp }).filter((k) => k.startsWith('x-'))])
    if (!same(oldBp[k], newBp[k])) out.push({ class: 'patch', path: k, message: `${k} changed` });
  const required: Bump = out.some((c) => c.class === 'breaking') ? 'major' : out.some((c) => c.class === 'non-breaking') ? 'minor' : out.length ? 'patch' : 'none';
  const actual = actualBump(String(oldBp.version), String(newBp.version));
  const ok = actual !== 'downgrade' && RANK[actual] >= RANK[required];
  const order: Record<ChangeClass, number> = { breaking: 0, 'non-breaking': 1, patch: 2 };
  out.sort((a, b) => order[a.class] - order[b.class] || a.path.localeCompare(b.path));
  return { changes: out, required, actual, ok };
}
