/**
 * PVS-1 verdicts (Level 1–3): approved ⇔ intervention ok/nudge/flag (spec-decisions D1), violations empty
 * when approved, non-empty otherwise, confidence in 0..1, policy_set and metadata always present.
 * Key order follows the contracts C3 example so serialised output is stable.
 */
import type { AgentInfo, Intervention, MetricOutcome, PvsVerdict, TripwireOutcome, RuleOutcome } from '../types.js';
import { isApproved } from '../types.js';

export interface VerdictInput {
  traceId: string;
  agent: AgentInfo;
  blueprint: string;
  intervention: Intervention;
  stage: 'tripwire' | 'rule' | 'ctq';
  tripwires: TripwireOutcome[];
  rules: RuleOutcome[];
  metrics: MetricOutcome[];
  ctq: number | null;
  risk: number | null;
  /** Confidence of the CTQ computation (coverage-aware); ignored when the stage is tripwire/rule. */
  ctqConfidence: number;
  fallback?: { policy: string; intervention: Intervention; metrics: string[] };
  engineVersion: string;
  latencyMs: number;
  humanReviewConfidence: number;
  /** Forces human review for non-ok verdicts (safety-critical profile). */
  humanReviewOnIntervention?: boolean;
  /**
   * Idempotency id of the trace (trace_id + a digest of its bytes in the stream): signed, so a verdict cannot be
   * passed off for another trace that reuses the trace_id. Defaults to the trace id.
   */
  eventId?: string;
  /** Event time the verdict was computed at (signed: trust debt decays by it). */
  eventTimeMs?: number;
  /** Severity of the tripwire behind a tripwire-stage intervention (signed: trust debt weights by it). */
  severity?: string;
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

export function buildVerdict(i: VerdictInput): PvsVerdict {
  const approved = isApproved(i.intervention);
  const violations: string[] = [];
  for (const t of i.tripwires) if (t.fired) violations.push(`${t.id}: ${t.reason ?? t.error?.message ?? 'tripwire fired'}`);
  for (const r of i.rules) if (!r.passed) violations.push(`${r.id}: ${r.reason ?? r.error?.message ?? 'rule failed'}`);
  if (i.stage === 'ctq' && !approved) {
    // When the fallback decided, the risk of the answered metrics did not map to this intervention.
    const byFallback = i.fallback !== undefined && i.fallback.intervention === i.intervention;
    if (i.risk !== null && !byFallback) violations.push(`ctq: risk ${r3(i.risk)} maps to ${i.intervention}`);
    if (i.fallback) violations.push(`scorers unavailable (${i.fallback.metrics.join(', ')}): fallback ${i.fallback.policy} → ${i.fallback.intervention}`);
  }
  if (!approved && violations.length === 0) violations.push(`${i.blueprint}: ${i.intervention}`);

  // Tripwire and rule outcomes are deterministic; a condition that failed closed is not.
  const deterministic = i.stage !== 'ctq';
  const failedClosed = [...i.tripwires, ...i.rules].some((o) => o.error);
  let confidence = deterministic ? (failedClosed ? 0.5 : 1) : i.ctqConfidence;
  confidence = Math.min(1, Math.max(0, r3(confidence)));

  const reasoning = summarise(i, approved);
  const policySet = [i.blueprint, ...i.tripwires.map((t) => t.id), ...i.rules.map((r) => r.id), ...i.metrics.map((m) => m.name)];
  const humanReview = confidence < i.humanReviewConfidence || (i.humanReviewOnIntervention === true && i.intervention !== 'ok');
  return {
    version: 'pvs-1',
    approved,
    reasoning,
    policy_violations: approved ? [] : violations,
    confidence_score: confidence,
    policy_set: [...new Set(policySet)],
    metadata: {
      engine: 'steward',
      engine_version: i.engineVersion,
      latency_ms: Math.max(0, Math.round(i.latencyMs)),
      tenant_id: i.agent.tenant,
      agent_id: i.agent.id,
      trace_id: i.traceId,
      event_id: i.eventId ?? i.traceId,
      ...(i.eventTimeMs !== undefined && Number.isFinite(i.eventTimeMs) ? { event_time_ms: i.eventTimeMs } : {}),
      ...(i.severity !== undefined ? { severity: i.severity } : {}),
      blueprint: i.blueprint,
      intervention: i.intervention,
      stage: i.stage,
      ctq: i.ctq,
      risk: i.risk,
      human_review: humanReview,
    },
  };
}

function summarise(i: VerdictInput, approved: boolean): string {
  const fired = i.tripwires.filter((t) => t.fired);
  const failed = i.rules.filter((r) => !r.passed);
  if (i.stage === 'tripwire' && fired.length > 0) {
    return `Tripwire ${fired.map((t) => t.id).join(', ')} fired: ${fired[0].reason ?? 'condition violated'} → ${i.intervention}.`;
  }
  if (i.stage === 'rule' && failed.length > 0) {
    return `Rule ${failed.map((r) => r.id).join(', ')} failed: ${failed[0].reason ?? 'condition not met'} → ${i.intervention}.`;
  }
  const answered = i.metrics.filter((m) => m.status === 'ok').length;
  const parts = [`${approved ? 'Approved' : 'Not approved'} (${i.intervention}) under ${i.blueprint}.`];
  if (i.ctq !== null) parts.push(`CTQ ${r3(i.ctq)} (risk ${r3(i.risk ?? 0)}) over ${answered} of ${i.metrics.length} metric(s).`);
  else if (i.metrics.length > 0) parts.push(`No metric could be scored (${i.metrics.length} matched).`);
  else parts.push('No metric applied; tripwires and rules passed.');
  if (i.fallback) parts.push(`Unavailable scorers: ${i.fallback.metrics.join(', ')} (fallback ${i.fallback.policy}).`);
  return parts.join(' ');
}
