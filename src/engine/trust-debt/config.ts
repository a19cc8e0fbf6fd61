/**
 * Trust-debt configuration (ACGP-1004 §10.1): spec defaults and the authored → compiled conversion.
 * The blueprint compiler calls `compileTrustDebt` on the resolved (inherited) `trust_debt` block and
 * reports its problems with file positions; `trustDebtConfigFrom` is the throwing form for other callers.
 */
import { StewardError } from '../../errors.js';
import { INTERVENTIONS, type AgentInfo, type Intervention, type Trace, type TrustDebtConfig } from '../types.js';
import { roundDebt } from './math.js';

/**
 * The §10.4.2 example values, used for what a configured `good_behavior_audit` block leaves out. The
 * credit is also what an explicit `audit_credit` review event without its own credit grants.
 */
export const GOOD_BEHAVIOR_AUDIT_EXAMPLE = Object.freeze({ thresholdHours: 168, credit: -0.2 });

/**
 * §10.1 defaults; escalate adds nothing unless configured (spec-decisions D7). The good-behaviour audit is
 * opt-in: debt moves once per trace by its final intervention and otherwise only decays (spec-decisions
 * D7/D15, the §10.3 "after 7 days: debt × 0.95^7" example), so a blueprint without
 * `recovery.good_behavior_audit` gets none. "None" is `thresholdHours: 0` (no window; `auditEnabled`
 * reads it), keeping the example credit for explicit `audit_credit` events.
 */
export const DEFAULT_TRUST_DEBT_CONFIG: TrustDebtConfig = Object.freeze({
  enabled: true,
  accumulation: Object.freeze({ flag: 0.05, nudge: 0.02, block: 0.15, halt: 0.5 }),
  decay: Object.freeze({ rate: 0.95, periodHours: 24, minDebt: 0 }),
  recovery: Object.freeze({
    enabled: true,
    successfulReviewCredit: -0.1,
    goodBehaviorAudit: Object.freeze({ thresholdHours: 0, credit: GOOD_BEHAVIOR_AUDIT_EXAMPLE.credit }),
    agentRemediationRequest: true,
  }),
  thresholds: Object.freeze({ elevatedMonitoring: 0.3, restrictedMode: 0.5, reTieringReview: 0.75 }),
  severityWeights: Object.freeze({ standard: 1.0, critical: 2.0, severe: 5.0 }),
}) as TrustDebtConfig;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A problem in an authored `trust_debt` block; `path` is relative to `trust_debt` (e.g. ['decay', 'rate']). */
export interface TrustDebtProblem {
  code: 'STEWARD_BLUEPRINT_INVALID' | 'STEWARD_BLUEPRINT_THRESHOLD_ORDER';
  path: string[];
  message: string;
  /**
   * Threshold order only: the other key of the unordered pair when it is authored too. The blueprint
   * compiler blames whichever of `path`/`alsoAuthored` the most derived file of the chain wrote.
   */
  alsoAuthored?: string[];
}

const unit = (n: number) => n >= 0 && n <= 1;
const nonNeg = (n: number) => n >= 0;
const pos = (n: number) => n > 0;
// §10.4 writes credits negative; the blueprint must too (a reviewer's CLI `--credit 0.1` is read as −0.1, asCredit).
const credit = (n: number) => n <= 0 && n >= -1;

const THRESHOLD_KEYS = [
  ['elevated_monitoring', 'elevatedMonitoring'],
  ['restricted_mode', 'restrictedMode'],
  ['re_tiering_review', 'reTieringReview'],
] as const;

/**
 * Compiles an authored §10.1 block (snake_case, after inheritance) over the defaults and reports every
 * problem instead of stopping at the first: values that break the math (rate outside (0, 1], a period or
 * audit window ≤ 0, a floor or threshold outside [0, 1], positive credits, negative weights) and thresholds
 * that are not ordered elevated_monitoring <= restricted_mode <= re_tiering_review once the defaults are
 * filled in (a lone `re_tiering_review: 0.4` is below the default restricted_mode 0.5). Never throws: an
 * invalid value is replaced by its default in `config`, so callers can go on and report all problems.
 */
export function compileTrustDebt(authored: unknown): { config: TrustDebtConfig; problems: TrustDebtProblem[] } {
  const d = DEFAULT_TRUST_DEBT_CONFIG;
  const problems: TrustDebtProblem[] = [];
  const bad = (path: string[], message: string): void => void problems.push({ code: 'STEWARD_BLUEPRINT_INVALID', path, message });
  if (authored === undefined || authored === null) return { config: structuredClone(d), problems };
  if (!isObj(authored)) {
    bad([], 'trust_debt must be an object');
    return { config: structuredClone(d), problems };
  }
  const has = (o: Obj, key: string) => Object.hasOwn(o, key) && o[key] !== undefined && o[key] !== null;
  const sub = (o: Obj, key: string, path: string[]): Obj => {
    if (!has(o, key)) return {};
    const v = o[key];
    if (isObj(v)) return v;
    bad([...path, key], `${key} must be an object`);
    return {};
  };
  const num = (o: Obj, key: string, path: string[], dflt: number, check: (n: number) => boolean, what: string): number => {
    if (!has(o, key)) return dflt;
    const v = o[key];
    if (typeof v === 'number' && Number.isFinite(v) && check(v)) return v;
    bad([...path, key], `${key} must be ${what}`);
    return dflt;
  };
  const bool = (o: Obj, key: string, path: string[], dflt: boolean): boolean => {
    if (!has(o, key)) return dflt;
    const v = o[key];
    if (typeof v === 'boolean') return v;
    bad([...path, key], `${key} must be a boolean`);
    return dflt;
  };

  const accIn = sub(authored, 'accumulation', []);
  const accumulation: Partial<Record<Intervention, number>> = { ...d.accumulation };
  for (const [k, v] of Object.entries(accIn)) {
    if (!(INTERVENTIONS as readonly string[]).includes(k)) bad(['accumulation', k], `unknown intervention '${k}'`);
    else if (typeof v !== 'number' || !Number.isFinite(v) || !unit(v)) bad(['accumulation', k], `${k} must be a number in [0, 1]`);
    else accumulation[k as Intervention] = v;
  }

  const decayIn = sub(authored, 'decay', []);
  const decay = {
    rate: num(decayIn, 'rate', ['decay'], d.decay.rate, (n) => n > 0 && n <= 1, 'a number in (0, 1]'),
    periodHours: num(decayIn, 'period_hours', ['decay'], d.decay.periodHours, pos, 'a positive number'),
    // on the debt's 1e-12 grid (roundDebt): an off-grid floor would "decay" upwards, max(floor, round(floor)) > floor
    minDebt: roundDebt(num(decayIn, 'min_debt', ['decay'], d.decay.minDebt, unit, 'a number in [0, 1]')),
  };

  const recIn = sub(authored, 'recovery', []);
  const gbaPath = ['recovery', 'good_behavior_audit'];
  const gbaIn = has(recIn, 'good_behavior_audit') ? sub(recIn, 'good_behavior_audit', ['recovery']) : undefined;
  const recovery = {
    enabled: bool(recIn, 'enabled', ['recovery'], d.recovery.enabled),
    successfulReviewCredit: num(recIn, 'successful_review_credit', ['recovery'], d.recovery.successfulReviewCredit, credit, 'a number in [-1, 0] (a credit is negative)'),
    // opt-in (see DEFAULT_TRUST_DEBT_CONFIG): only a configured block (here or in an ancestor) opens a window
    goodBehaviorAudit: gbaIn
      ? {
          thresholdHours: num(gbaIn, 'threshold_hours', gbaPath, GOOD_BEHAVIOR_AUDIT_EXAMPLE.thresholdHours, pos, 'a positive number'),
          credit: num(gbaIn, 'credit', gbaPath, GOOD_BEHAVIOR_AUDIT_EXAMPLE.credit, credit, 'a number in [-1, 0] (a credit is negative)'),
        }
      : { ...d.recovery.goodBehaviorAudit },
    agentRemediationRequest: bool(recIn, 'agent_remediation_request', ['recovery'], d.recovery.agentRemediationRequest),
  };

  const thIn = sub(authored, 'thresholds', []);
  const th: number[] = [];
  const authoredOk: boolean[] = [];
  for (const [snake, camel] of THRESHOLD_KEYS) {
    const before = problems.length;
    th.push(num(thIn, snake, ['thresholds'], d.thresholds[camel], unit, 'a number in [0, 1]'));
    authoredOk.push(has(thIn, snake) && problems.length === before);
  }
  // Adjacent pairs suffice (the order is transitive). The effective values decide: defaults included.
  for (let i = 0; i + 1 < THRESHOLD_KEYS.length; i++) {
    if (th[i]! <= th[i + 1]!) continue;
    const [lo, hi] = [THRESHOLD_KEYS[i]![0], THRESHOLD_KEYS[i + 1]![0]];
    const shown = (j: number) => `${th[j]}${authoredOk[j] ? '' : ', default'}`;
    // blame the higher key when it is authored (the usual edit: a threshold set too low), else the lower one
    const message = authoredOk[i + 1]
      ? `trust_debt.thresholds must ascend (elevated_monitoring <= restricted_mode <= re_tiering_review, after inheritance and the §10.1 defaults): '${hi}' (${shown(i + 1)}) must be >= '${lo}' (${shown(i)})`
      : `trust_debt.thresholds must ascend (elevated_monitoring <= restricted_mode <= re_tiering_review, after inheritance and the §10.1 defaults): '${lo}' (${shown(i)}) must be <= '${hi}' (${shown(i + 1)})`;
    const problem: TrustDebtProblem = { code: 'STEWARD_BLUEPRINT_THRESHOLD_ORDER', path: ['thresholds', authoredOk[i + 1] ? hi : lo], message };
    if (authoredOk[i + 1] && authoredOk[i]) problem.alsoAuthored = ['thresholds', lo];
    problems.push(problem);
  }
  const thresholds = { elevatedMonitoring: th[0]!, restrictedMode: th[1]!, reTieringReview: th[2]! };

  const swIn = sub(authored, 'severity_weights', []);
  const severityWeights: Record<string, number> = { ...d.severityWeights };
  for (const [k, v] of Object.entries(swIn)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || !nonNeg(v)) bad(['severity_weights', k], `${k} must be a non-negative number`);
    // severities are user-chosen names: `severityWeights[k] = v` with k = '__proto__' would set the prototype
    else Object.defineProperty(severityWeights, k, { value: v, enumerable: true, writable: true, configurable: true });
  }

  return { config: { enabled: bool(authored, 'enabled', [], d.enabled), accumulation, decay, recovery, thresholds, severityWeights }, problems };
}

/** `$.trust_debt.a.b` for a problem path (what StewardError positions carry as `path`). */
export function trustDebtJsonPath(path: readonly string[]): string {
  return `$.trust_debt${path.map((k) => `.${k}`).join('')}`;
}

/**
 * Merges an authored §10.1 block (snake_case) over the defaults. `undefined`/`null` → defaults.
 * Throws the first problem `compileTrustDebt` finds as a StewardError (STEWARD_BLUEPRINT_INVALID, or
 * STEWARD_BLUEPRINT_THRESHOLD_ORDER for unordered thresholds) with its JSON path.
 */
export function trustDebtConfigFrom(authored: unknown): TrustDebtConfig {
  const { config, problems } = compileTrustDebt(authored);
  const p = problems[0];
  if (p) throw new StewardError(p.code, p.message, { position: { path: trustDebtJsonPath(p.path) } });
  return config;
}

/**
 * The trust-debt settings that apply to an agent outside any trace (audit sweep, `steward debt show`):
 * those of the blueprint selected for it from the trusted registry, as a decision would select it
 * (selection reads only the registry's AgentInfo, never trace content). Unknown agents get the globals'.
 */
export function trustDebtConfigForAgent(
  blueprints: { select(agent: AgentInfo, trace: Trace): { id: string; trustDebt: TrustDebtConfig } },
  registry: { lookup(agentId: string): AgentInfo },
  agentId: string,
): { blueprint: string; config: TrustDebtConfig; tenant: string } {
  const agent = registry.lookup(agentId);
  const bp = blueprints.select(agent, { trace_id: '', agent_id: agentId, timestamp: '', hook: '' });
  return { blueprint: bp.id, config: bp.trustDebt, tenant: agent.tenant };
}
