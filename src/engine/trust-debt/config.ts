/**
 * Trust-debt configuration (ACGP-1004 §10.1): spec defaults and the authored → compiled conversion.
 * The blueprint compiler calls `trustDebtConfigFrom` on the resolved `trust_debt` block.
 */
import { StewardError } from '../../errors.js';
import { INTERVENTIONS, type AgentInfo, type Intervention, type Trace, type TrustDebtConfig } from '../types.js';

/** §10.1 defaults; escalate adds nothing unless configured (DESIGN §5.7). */
export const DEFAULT_TRUST_DEBT_CONFIG: TrustDebtConfig = Object.freeze({
  enabled: true,
  accumulation: Object.freeze({ flag: 0.05, nudge: 0.02, block: 0.15, halt: 0.5 }),
  decay: Object.freeze({ rate: 0.95, periodHours: 24, minDebt: 0 }),
  recovery: Object.freeze({
    enabled: true,
    successfulReviewCredit: -0.1,
    goodBehaviorAudit: Object.freeze({ thresholdHours: 168, credit: -0.2 }),
    agentRemediationRequest: true,
  }),
  thresholds: Object.freeze({ elevatedMonitoring: 0.3, restrictedMode: 0.5, reTieringReview: 0.75 }),
  severityWeights: Object.freeze({ standard: 1.0, critical: 2.0, severe: 5.0 }),
}) as TrustDebtConfig;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function problem(path: string, message: string): StewardError {
  return new StewardError('STEWARD_BLUEPRINT_INVALID', message, { position: { path: `$.trust_debt${path}` } });
}

function num(o: Obj, key: string, path: string, dflt: number, check: (n: number) => boolean, what: string): number {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || !check(v)) throw problem(`${path}.${key}`, `${key} must be ${what}`);
  return v;
}

function bool(o: Obj, key: string, path: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw problem(`${path}.${key}`, `${key} must be a boolean`);
  return v;
}

function sub(o: Obj, key: string, path: string): Obj {
  const v = o[key];
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw problem(`${path}.${key}`, `${key} must be an object`);
  return v;
}

const unit = (n: number) => n >= 0 && n <= 1;
const nonNeg = (n: number) => n >= 0;
const pos = (n: number) => n > 0;
const credit = (n: number) => n <= 0 && n >= -1;

/**
 * Merges an authored §10.1 block (snake_case) over the defaults. `undefined`/`null` → defaults.
 * Throws StewardError(STEWARD_BLUEPRINT_INVALID) with a JSON path for values that break the math
 * (rate outside (0,1], credits that are positive, a floor outside [0,1], unordered thresholds).
 */
export function trustDebtConfigFrom(authored: unknown, base: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG): TrustDebtConfig {
  if (authored === undefined || authored === null) return structuredClone(base);
  if (!isObj(authored)) throw problem('', 'trust_debt must be an object');
  const d = base;

  const accIn = sub(authored, 'accumulation', '');
  const accumulation: Partial<Record<Intervention, number>> = { ...d.accumulation };
  for (const [k, v] of Object.entries(accIn)) {
    if (!(INTERVENTIONS as readonly string[]).includes(k)) throw problem(`.accumulation.${k}`, `unknown intervention '${k}'`);
    if (typeof v !== 'number' || !Number.isFinite(v) || !unit(v)) throw problem(`.accumulation.${k}`, `${k} must be a number in [0, 1]`);
    accumulation[k as Intervention] = v;
  }

  const decayIn = sub(authored, 'decay', '');
  const decay = {
    rate: num(decayIn, 'rate', '.decay', d.decay.rate, (n) => n > 0 && n <= 1, 'a number in (0, 1]'),
    periodHours: num(decayIn, 'period_hours', '.decay', d.decay.periodHours, pos, 'a positive number'),
    minDebt: num(decayIn, 'min_debt', '.decay', d.decay.minDebt, unit, 'a number in [0, 1]'),
  };

  const recIn = sub(authored, 'recovery', '');
  const gbaIn = sub(recIn, 'good_behavior_audit', '.recovery');
  const recovery = {
    enabled: bool(recIn, 'enabled', '.recovery', d.recovery.enabled),
    successfulReviewCredit: num(recIn, 'successful_review_credit', '.recovery', d.recovery.successfulReviewCredit, credit, 'a number in [-1, 0]'),
    goodBehaviorAudit: {
      thresholdHours: num(gbaIn, 'threshold_hours', '.recovery.good_behavior_audit', d.recovery.goodBehaviorAudit.thresholdHours, pos, 'a positive number'),
      credit: num(gbaIn, 'credit', '.recovery.good_behavior_audit', d.recovery.goodBehaviorAudit.credit, credit, 'a number in [-1, 0]'),
    },
    agentRemediationRequest: bool(recIn, 'agent_remediation_request', '.recovery', d.recovery.agentRemediationRequest),
  };

  const thIn = sub(authored, 'thresholds', '');
  const thresholds = {
    elevatedMonitoring: num(thIn, 'elevated_monitoring', '.thresholds', d.thresholds.elevatedMonitoring, unit, 'a number in [0, 1]'),
    restrictedMode: num(thIn, 'restricted_mode', '.thresholds', d.thresholds.restrictedMode, unit, 'a number in [0, 1]'),
    reTieringReview: num(thIn, 're_tiering_review', '.thresholds', d.thresholds.reTieringReview, unit, 'a number in [0, 1]'),
  };
  if (!(thresholds.elevatedMonitoring <= thresholds.restrictedMode && thresholds.restrictedMode <= thresholds.reTieringReview)) {
    throw problem('.thresholds', 'thresholds must satisfy elevated_monitoring <= restricted_mode <= re_tiering_review');
  }

  const swIn = sub(authored, 'severity_weights', '');
  const severityWeights: Record<string, number> = { ...d.severityWeights };
  for (const [k, v] of Object.entries(swIn)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || !nonNeg(v)) throw problem(`.severity_weights.${k}`, `${k} must be a non-negative number`);
    // severities are user-chosen names: `severityWeights[k] = v` with k = '__proto__' would set the prototype
    Object.defineProperty(severityWeights, k, { value: v, enumerable: true, writable: true, configurable: true });
  }

  return { enabled: bool(authored, 'enabled', '', d.enabled), accumulation, decay, recovery, thresholds, severityWeights };
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
