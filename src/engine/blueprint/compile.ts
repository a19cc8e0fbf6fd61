/**
 * Compile stage for one blueprint: file-level semantic checks (semver, threshold order, tripwire tier,
 * regexes), compilation of the file's own tripwires/checks, and assembly of the CompiledBlueprint from
 * the resolved (inherited) authored form.
 */
import { RE2JS } from 're2js';
import { StewardError } from '../../errors.js';
import { normalizeTier, type EngineConfig } from '../config.js';
import type {
  BlueprintScope,
  CompiledBlueprint,
  CompiledMetric,
  CompiledRule,
  CompiledTripwire,
  EvidenceRequirements,
  FallbackOnTimeout,
  Intervention,
  RiskThresholds,
} from '../types.js';
import { compileTrustDebt } from '../trust-debt/config.js';
import { DEFAULT_TRIPWIRE_BUDGET_MS } from '../tripwires/index.js';
import { compileConditionAt, compileWhenAt, type DslOptions } from './conditions.js';
import { PROFILES } from './profiles.js';
import type { PathSeg, SourceDoc } from './source.js';
import { idAgreesWithVersion, isSemver } from './versions.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** Order checks over a thresholds object: `keys` must be monotone (ascending or descending) where present. */
function checkOrder(doc: SourceDoc, base: PathSeg[], t: unknown, keys: string[], dir: 'asc' | 'desc', what: string, errors: StewardError[]): void {
  if (!isObj(t)) return;
  let prevKey: string | undefined;
  let prev: number | undefined;
  for (const k of keys) {
    const v = num(t[k]);
    if (v === undefined) continue;
    if (prev !== undefined && (dir === 'asc' ? v < prev : v > prev)) {
      const rel = dir === 'asc' ? '>=' : '<=';
      errors.push(
        new StewardError('STEWARD_BLUEPRINT_THRESHOLD_ORDER', `${what}: '${k}' (${v}) must be ${rel} '${prevKey}' (${prev})`, {
          position: doc.pos([...base, k]),
        }),
      );
    }
    prevKey = k;
    prev = v;
  }
}

function checkRegex(doc: SourceDoc, path: PathSeg[], pattern: unknown, errors: StewardError[]): void {
  if (typeof pattern !== 'string') return;
  try {
    RE2JS.compile(pattern);
  } catch (e) {
    errors.push(new StewardError('STEWARD_DSL_REGEX', `invalid regular expression (RE2 syntax): ${(e as Error).message}`, { position: doc.pos(path) }));
  }
}

function checkPatternParams(doc: SourceDoc, base: PathSeg[], params: unknown, errors: StewardError[]): void {
  if (!isObj(params)) return;
  checkRegex(doc, [...base, 'pattern'], params.pattern, errors);
  arr(params.patterns).forEach((p, i) => {
    if (typeof p === 'string') checkRegex(doc, [...base, 'patterns', i], p, errors);
    else if (isObj(p)) checkRegex(doc, [...base, 'patterns', i, 'pattern'], p.pattern, errors);
  });
}

/** Checks that need only this file (run after schema validation passed). */
export function fileChecks(doc: SourceDoc, v: Obj, errors: StewardError[], warnings: StewardError[]): void {
  if (!isSemver(v.version)) {
    errors.push(new StewardError('STEWARD_BLUEPRINT_SEMVER', `version ${JSON.stringify(v.version)} is not a semantic version MAJOR.MINOR.PATCH (e.g. "1.0.0")`, { position: doc.pos(['version']) }));
  } else if (!idAgreesWithVersion(String(v.id), v.version)) {
    errors.push(new StewardError('STEWARD_BLUEPRINT_SEMVER', `id '${String(v.id)}' names a version that does not match version "${v.version}"`, { position: doc.pos(['id']) }));
  }
  if (isObj(v.scoring)) checkOrder(doc, ['scoring', 'thresholds'], v.scoring.thresholds, ['ok', 'nudge', 'escalate', 'block'], 'asc', 'scoring.thresholds (risk space) must ascend', errors);
  if (isObj(v.ctq)) checkOrder(doc, ['ctq', 'thresholds'], v.ctq.thresholds, ['ok', 'nudge', 'flag', 'block'], 'desc', 'ctq.thresholds (CTQ space) must descend', errors);
  // trust_debt thresholds are checked on the resolved blueprint with the defaults filled in (index.ts).
  arr(v.tripwires).forEach((t, i) => {
    if (isObj(t) && typeof t.eval_tier === 'number' && t.eval_tier > 1) {
      errors.push(
        new StewardError('STEWARD_BLUEPRINT_TIER', `tripwire '${String(t.id)}' has eval_tier ${t.eval_tier}; tripwires allow only eval_tier 0 or 1 (ACGP-1004 §9.2)`, {
          position: doc.pos(['tripwires', i, 'eval_tier']),
        }),
      );
    }
  });
  arr(v.checks).forEach((c, i) => {
    if (!isObj(c)) return;
    if (isObj(c.rule) && isObj(c.rule.on_fail) && c.rule.on_fail.decision === 'halt') {
      warnings.push(
        new StewardError('STEWARD_BLUEPRINT_INVALID', `rule '${String(c.id)}': halt is reserved for tripwires (spec-decisions D1); it is applied as block — move it to tripwires`, {
          position: doc.pos(['checks', i, 'rule', 'on_fail', 'decision']),
        }),
      );
    }
    if (isObj(c.metric) && isObj(c.metric.check) && c.metric.check.type === 'regex') checkPatternParams(doc, ['checks', i, 'metric', 'check', 'args'], c.metric.check.args, errors);
  });
  if (isObj(v.ctq) && isObj(v.ctq.metrics))
    for (const [name, m] of Object.entries(v.ctq.metrics)) if (isObj(m) && m.scorer === 'pattern-match') checkPatternParams(doc, ['ctq', 'metrics', name, 'parameters'], m.parameters, errors);
}

/**
 * Problems of the effective `trust_debt` settings of a resolved blueprint (ACGP-1004 §10.1): inherited
 * keys and the §10.1 defaults are part of it, so a lone `re_tiering_review: 0.4` is out of order with the
 * default restricted_mode 0.5. Each problem points at the key as authored by the most derived file of the
 * chain that wrote it (`docs`: the chain's documents, root first).
 */
export function trustDebtProblems(resolvedTrustDebt: unknown, docs: readonly SourceDoc[]): StewardError[] {
  const { problems } = compileTrustDebt(resolvedTrustDebt);
  const authoredIn = (path: readonly string[]): number => {
    for (let i = docs.length - 1; i >= 0; i--) {
      let v: unknown = docs[i]!.value;
      for (const k of ['trust_debt', ...path]) v = isObj(v) && Object.hasOwn(v, k) ? v[k] : undefined;
      if (v !== undefined) return i;
    }
    return -1;
  };
  return problems.map((p) => {
    let path = p.path;
    let at = authoredIn(path);
    if (p.alsoAuthored) {
      const other = authoredIn(p.alsoAuthored);
      if (other > at) [path, at] = [p.alsoAuthored, other];
    }
    // the key as written (or, for a key nobody wrote, the nearest ancestor in the blueprint itself)
    const doc = docs[at] ?? docs[docs.length - 1]!;
    return new StewardError(p.code, p.message, { position: doc.pos(['trust_debt', ...path]) });
  });
}

export interface OwnItems {
  tripwires: CompiledTripwire[];
  rules: CompiledRule[];
  metrics: CompiledMetric[];
}

const SCORER_TYPES = new Set(['rule-based', 'llm-judge', 'source-match', 'pattern-match', 'hybrid']);
const SOURCE_TOOLS = new Set(['source_validator', 'source_validator_api']);

/** Metric check `check: {type, args}` (§6.3) → scorer id + parameters (see docs/blueprints.md). */
export function scorerFor(check: Obj): { scorer: string; parameters: Obj } {
  const type = String(check.type);
  const args: Obj = isObj(check.args) ? { ...check.args } : {};
  if (type === 'llm') return { scorer: 'llm-judge', parameters: args };
  if (type === 'regex') {
    if (typeof args.pattern === 'string' && args.patterns === undefined)
      args.patterns = [{ pattern: args.pattern, score_on_match: num(args.score_on_match) ?? 0, score_on_miss: num(args.score_on_miss) ?? 1 }];
    return { scorer: 'pattern-match', parameters: args };
  }
  if (type === 'tool') {
    const name = typeof args.name === 'string' ? args.name : 'tool';
    return { scorer: SOURCE_TOOLS.has(name) ? 'source-match' : name, parameters: { ...args, tool: name } };
  }
  return { scorer: SCORER_TYPES.has(type) ? type : type, parameters: args };
}

// Schema errors were already reported; this only keeps compilation of an invalid file from throwing.
function onFailOf(v: unknown): { decision: Intervention; reason: string } {
  const o = isObj(v) ? v : {};
  return { decision: (typeof o.decision === 'string' ? o.decision : 'block') as Intervention, reason: typeof o.reason === 'string' ? o.reason : '' };
}

/** Compiles the tripwires and checks this file itself defines (inherited ones were compiled with their own file). */
export function compileOwnItems(doc: SourceDoc, v: Obj, dsl: DslOptions, errors: StewardError[]): OwnItems {
  const out: OwnItems = { tripwires: [], rules: [], metrics: [] };
  arr(v.tripwires).forEach((t, i) => {
    if (!isObj(t) || t.condition === undefined) return; // schema already reported it
    const condition = compileConditionAt(doc, ['tripwires', i, 'condition'], t.condition, dsl, errors);
    const evalTier = (num(t.eval_tier) ?? 0) > 0 ? 1 : 0;
    const onFail = onFailOf(t.on_fail);
    if (condition?.async && evalTier === 0) {
      errors.push(
        new StewardError('STEWARD_BLUEPRINT_TIER', `tripwire '${String(t.id)}' uses stateful functions (${[...condition.functions].join(', ')}); set eval_tier: 1 and requires_state: true`, {
          position: doc.pos(['tripwires', i, t.eval_tier === undefined ? 'condition' : 'eval_tier']),
        }),
      );
    }
    if (!condition) return;
    out.tripwires.push({
      id: String(t.id),
      when: compileWhenAt(t.when),
      condition,
      evalTier,
      // §9.1 defaults; the tripwire stage caps them further by the agent tier's max latency (spec-decisions D3).
      latencyBudgetMs: num(t.latency_budget_ms) ?? DEFAULT_TRIPWIRE_BUDGET_MS[evalTier],
      requiresState: t.requires_state === true || condition.async,
      severity: typeof t.severity === 'string' ? t.severity : 'standard',
      onFail: { decision: onFail.decision, reason: onFail.reason },
      position: doc.pos(['tripwires', i]),
    });
  });
  arr(v.checks).forEach((c, i) => {
    if (!isObj(c)) return;
    if (isObj(c.rule)) {
      if (c.rule.condition === undefined) return;
      const condition = compileConditionAt(doc, ['checks', i, 'rule', 'condition'], c.rule.condition, dsl, errors);
      const onFail = onFailOf(c.rule.on_fail);
      if (!condition) return;
      out.rules.push({
        id: String(c.id),
        when: compileWhenAt(c.when),
        condition,
        onFail: { decision: onFail.decision === 'halt' ? 'block' : onFail.decision, reason: onFail.reason },
        position: doc.pos(['checks', i]),
      });
    } else if (isObj(c.metric)) {
      const m = c.metric;
      const { scorer, parameters } = scorerFor(isObj(m.check) ? m.check : { type: 'llm' });
      out.metrics.push({ id: String(c.id), name: String(m.name), weight: num(m.weight) ?? 0, when: compileWhenAt(c.when), scorer, parameters, position: doc.pos(['checks', i]) });
    }
  });
  return out;
}

function ctqMetrics(ctq: Obj, own: Map<string, SourceDoc>): { metrics: CompiledMetric[]; thresholds?: Partial<Record<'ok' | 'nudge' | 'flag' | 'block', number>>; profile?: string; requireHumanReview: boolean } {
  const profile = typeof ctq.profile === 'string' ? PROFILES[ctq.profile] : undefined;
  const byName = new Map<string, CompiledMetric>();
  if (profile)
    for (const [name, m] of Object.entries(profile.metrics))
      byName.set(name, { id: `ctq.${name}`, name, weight: m.weight, when: compileWhenAt(undefined), scorer: m.scorer, parameters: structuredClone(m.parameters) });
  if (isObj(ctq.metrics))
    for (const [name, m] of Object.entries(ctq.metrics)) {
      if (!isObj(m)) continue;
      const doc = own.get(name);
      byName.set(name, {
        id: `ctq.${name}`,
        name,
        weight: num(m.weight) ?? 0,
        when: compileWhenAt(m.when),
        scorer: String(m.scorer),
        parameters: isObj(m.parameters) ? m.parameters : {},
        position: doc?.pos(['ctq', 'metrics', name]),
      });
    }
  const thresholds = isObj(ctq.thresholds) ? (ctq.thresholds as Partial<Record<'ok' | 'nudge' | 'flag' | 'block', number>>) : profile?.thresholds;
  return { metrics: [...byName.values()], thresholds, profile: typeof ctq.profile === 'string' ? ctq.profile : undefined, requireHumanReview: profile?.requireHumanReview ?? false };
}

export interface AssembleInput {
  resolved: Obj;
  items: OwnItems;
  chain: string[];
  file?: string;
  config: EngineConfig;
  /** ctq metric name → the document that defined it last (for positions). */
  ctqMetricDocs: Map<string, SourceDoc>;
}

export function assemble(inp: AssembleInput): CompiledBlueprint {
  const r = inp.resolved;
  const scope: BlueprintScope = {};
  if (isObj(r.scope)) {
    const tiers = r.scope.agent_tier === undefined ? undefined : (Array.isArray(r.scope.agent_tier) ? r.scope.agent_tier : [r.scope.agent_tier]).map((t) => normalizeTier(t)!).filter(Boolean);
    if (tiers) scope.agentTier = [...new Set(tiers)];
    if (Array.isArray(r.scope.tools)) scope.tools = r.scope.tools.map(String);
    if (Array.isArray(r.scope.domains)) scope.domains = r.scope.domains.map(String);
  }
  const ctqIn = isObj(r.ctq) ? r.ctq : {};
  const ctq = ctqMetrics(ctqIn, inp.ctqMetricDocs);
  const st = (isObj(r.scoring) && isObj(r.scoring.thresholds) ? r.scoring.thresholds : {}) as Partial<RiskThresholds>;
  const ev = isObj(r.evidence) ? r.evidence : undefined;
  const evidence: EvidenceRequirements | undefined = ev && {
    ...(num(ev.min_certified_sources) !== undefined && { minCertifiedSources: num(ev.min_certified_sources) }),
    ...(Array.isArray(ev.source_categories) && { sourceCategories: ev.source_categories.map(String) }),
    ...(num(ev.min_trust_score) !== undefined && { minTrustScore: num(ev.min_trust_score) }),
  };
  const lists = { ...inp.config.lists, ...((isObj(r.lists) ? r.lists : {}) as Record<string, string[]>) };
  const gov = isObj(r.governance) ? r.governance : {};
  const fallback = (gov.fallback_on_timeout as FallbackOnTimeout | undefined) ?? inp.config.fallbackOnTimeout;
  return {
    id: String(r.id),
    version: String(r.version),
    description: String(r.description),
    chain: inp.chain,
    scope,
    tripwires: inp.items.tripwires,
    rules: inp.items.rules,
    metrics: [...inp.items.metrics, ...ctq.metrics],
    ctq: {
      aggregation: typeof ctqIn.aggregation === 'string' ? ctqIn.aggregation : 'weighted_average',
      ...(ctq.profile && { profile: ctq.profile }),
      ...(ctq.thresholds && { thresholds: ctq.thresholds }),
      ...(ctq.requireHumanReview && { requireHumanReview: true }),
    },
    ...(evidence && { evidence }),
    scoring: { ok: st.ok ?? 0, nudge: st.nudge ?? 0, escalate: st.escalate ?? 0, block: st.block ?? 0 },
    // problems were reported by the caller (trustDebtProblems); invalid values compile to their defaults
    trustDebt: compileTrustDebt(r.trust_debt).config,
    lists,
    ...(fallback && { fallbackOnTimeout: fallback }),
    resolved: r,
    ...(inp.file && { file: inp.file }),
  };
}
