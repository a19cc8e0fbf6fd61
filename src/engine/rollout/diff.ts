/**
 * The one decision diff of shadow evaluation (live, shadow.ts) and of `steward diff --traces` (offline): the
 * same function, so a shadow run and an offline run over the same traces report the same differences
 * (docs/rollout.md "Shadow evaluation").
 */
import type { DecisionRecord } from '../records.js';

/** One trace's difference, in the shape acgp.shadow-diffs carries (contracts C8 ShadowDiffMessage). */
export interface ShadowDiff {
  shadow_id: string;
  trace_id: string;
  agent_id: string;
  tenant: string;
  pipeline_stage: 'tripwire';
  active_blueprint: string;
  shadow_blueprint: string;
  active_intervention: string;
  shadow_intervention: string;
  active_stage: string;
  shadow_stage: string;
  changed: boolean;
  /** intervention, stage, tripwires, rules, ctq: what differs. */
  change_kinds: string[];
  active_tripwires_fired: string[];
  shadow_tripwires_fired: string[];
  active_rules_failed: string[];
  shadow_rules_failed: string[];
  ctq_delta: number | null;
  event_time_ms: number;
  evaluated_at_ms: number;
}

type Decided = Pick<DecisionRecord, 'blueprint' | 'blueprintVersion' | 'intervention' | 'stage' | 'tripwires' | 'rules'>;

const fired = (d: Decided): string[] => d.tripwires.filter((t) => t.fired).map((t) => t.id).sort();
const failed = (d: Decided): string[] => d.rules.filter((r) => !r.passed).map((r) => r.id).sort();
const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const label = (d: Decided): string => (d.blueprint.endsWith(`@${d.blueprintVersion}`) || !d.blueprintVersion ? d.blueprint : `${d.blueprint} (${d.blueprintVersion})`);

export interface DiffIds {
  shadowId: string;
  traceId: string;
  agentId: string;
  tenant: string;
  eventTimeMs: number;
  evaluatedAtMs: number;
  /** CTQ of each side when both were scored (tier 2); null at the tripwire stage. */
  ctq?: { active: number | null; shadow: number | null };
}

export function diffDecisions(active: Decided, shadow: Decided, ids: DiffIds): ShadowDiff {
  const af = fired(active);
  const sf = fired(shadow);
  const ar = failed(active);
  const sr = failed(shadow);
  const kinds: string[] = [];
  if (active.intervention !== shadow.intervention) kinds.push('intervention');
  if (active.stage !== shadow.stage) kinds.push('stage');
  if (!same(af, sf)) kinds.push('tripwires');
  if (!same(ar, sr)) kinds.push('rules');
  const ctqDelta = ids.ctq && ids.ctq.active !== null && ids.ctq.shadow !== null ? ids.ctq.shadow - ids.ctq.active : null;
  if (ctqDelta !== null && Math.abs(ctqDelta) > 1e-9) kinds.push('ctq');
  return {
    shadow_id: ids.shadowId,
    trace_id: ids.traceId,
    agent_id: ids.agentId,
    tenant: ids.tenant,
    pipeline_stage: 'tripwire',
    active_blueprint: label(active),
    shadow_blueprint: label(shadow),
    active_intervention: active.intervention,
    shadow_intervention: shadow.intervention,
    active_stage: active.stage,
    shadow_stage: shadow.stage,
    changed: kinds.length > 0,
    change_kinds: kinds,
    active_tripwires_fired: af,
    shadow_tripwires_fired: sf,
    active_rules_failed: ar,
    shadow_rules_failed: sr,
    ctq_delta: ctqDelta,
    event_time_ms: ids.eventTimeMs,
    evaluated_at_ms: ids.evaluatedAtMs,
  };
}

/** The diff without what depends on when and where it ran: for comparing a shadow run with an offline run. */
export function comparableDiff(d: ShadowDiff): Omit<ShadowDiff, 'evaluated_at_ms' | 'shadow_id'> {
  const { evaluated_at_ms: _e, shadow_id: _s, ...rest } = d;
  return rest;
}

export interface DiffSummary {
  traces: number;
  changed: number;
  /** `active → shadow` intervention pairs of changed decisions, with counts. */
  byTransition: Record<string, number>;
  byKind: Record<string, number>;
  examples: ShadowDiff[];
}

/** `steward shadow report` / `steward diff --traces` summary: changed decisions by type, a few examples each. */
export function summarizeDiffs(diffs: Iterable<ShadowDiff>, examplesPerTransition = 3): DiffSummary {
  const out: DiffSummary = { traces: 0, changed: 0, byTransition: {}, byKind: {}, examples: [] };
  const shown: Record<string, number> = {};
  for (const d of diffs) {
    out.traces++;
    if (!d.changed) continue;
    out.changed++;
    const t = `${d.active_intervention} → ${d.shadow_intervention}`;
    out.byTransition[t] = (out.byTransition[t] ?? 0) + 1;
    for (const k of d.change_kinds) out.byKind[k] = (out.byKind[k] ?? 0) + 1;
    if ((shown[t] = (shown[t] ?? 0) + 1) <= examplesPerTransition) out.examples.push(d);
  }
  return out;
}
