/**
 * A run event's replay records as the stream builds them in two halves (docs/acm.md "Export from the stream"):
 * the tripwire stage knows the trace, the PDP request without the scorers' answers, the blueprint's checks, the
 * ACM summary and the event's ACM entries (`PendingRunEvent`); the scorer knows the metric answers, CTQ, risk,
 * the final stage and intervention and the signed verdict (`RunEventAnswer`). `completeRunEvent` joins them into
 * exactly what `steward eval --bundles` records for the event (RunCollector): the request and response lines and
 * the run's POLICY_DECISION with their digests, then the event's ACM entries. Pure: the sink does the I/O.
 */
import { acmPolicyDecisionDraft } from '../../ledger/acm-entries.js';
import type { LedgerDraft } from '../../ledger/types.js';
import type { DecisionRecord, FinalStage, ScoreRecord } from '../../records.js';
import { isApproved, mostSevere, type Intervention, type MetricOutcome, type Trace } from '../../types.js';
import { sha256Hex } from '../canonical.js';
import type { ContextVersion } from '../context.js';
import { taskPolicyInput, type PolicyRequestRecord, type PolicyResponseRecord, type StateRead } from '../pdp.js';
import { recordDigest } from './layout.js';

/**
 * The request record without the §14.1 input and the scorers' answers: the input is the trace's own fields (the
 * join takes them from the trace line, which the pending record carries anyway), the answers are the scorer's.
 */
export type PendingRequest = Omit<PolicyRequestRecord, 'scorer_answers' | 'input'>;

/** The scorer's half of a run event's records (for a halted decision: its score without metrics, as eval scores it). */
export interface RunEventAnswer {
  run_record: 'answer';
  tenant: string;
  run_id: string;
  agent_id: string;
  trace_id: string;
  /** The idempotency id the event was decided under (its ledger entries are `<kind>:<event id>`). */
  event_id: string;
  /** The score's blueprint id (the POLICY_DECISION's `blueprint`). */
  blueprint: string;
  intervention: Intervention;
  stage: FinalStage;
  ctq: number | null;
  risk: number | null;
  /** The scorers' answers: the request's `scorer_answers`. */
  metrics: MetricOutcome[];
  /** The signed PVS-1 verdict as issued. */
  verdict: Record<string, unknown>;
}

/** The tripwire stage's half of a run event's records. */
export interface PendingRunEvent {
  run_record: 'pending';
  tenant: string;
  run_id: string;
  agent_id: string;
  trace_id: string;
  event_id: string;
  /** The event's place in the run (RunEventRecord.seq): names its request/response pair and its trace line. */
  seq: number;
  now_ms: number;
  /** The trace as received (engine-trace/traces.jsonl). */
  line: string;
  request: PendingRequest;
  /** The blueprint's checks as the response records them, and what the POLICY_DECISION takes from the decision. */
  checks: { blueprint: string; reasons: string[]; tripwires: PolicyResponseRecord['blueprint']['tripwires']; rules: PolicyResponseRecord['blueprint']['rules'] };
  acm?: PolicyResponseRecord['acm'];
  /** Context versions the event recorded or bound. */
  contexts: ContextVersion[];
  /** The event's ACM entries (after its POLICY_DECISION, which the join builds with the digests). */
  drafts: LedgerDraft[];
  engine_version?: string;
  /** The trace's `task.id` (the POLICY_DECISION's task_id). */
  task_id?: string;
}

export interface CompletedRunEvent {
  request: PolicyRequestRecord;
  response: PolicyResponseRecord;
  /** The run's POLICY_DECISION (with the request and response digests), then the event's ACM entries. */
  drafts: LedgerDraft[];
}

/** The request record without the input and the scorers' answers (`requestRecord` completes it). */
export function pendingRequest(i: { seq: number; trace: Trace; traceLine: number; line: string; nowMs: number; eventId?: string; decision: Pick<DecisionRecord, 'blueprint' | 'blueprintVersion' | 'trustDebt'>; reads: StateRead[] }): PendingRequest {
  return {
    seq: i.seq,
    trace_id: i.trace.trace_id,
    ...(i.eventId && i.eventId !== i.trace.trace_id ? { event_id: i.eventId } : {}),
    hook: i.trace.hook,
    trace_line: i.traceLine,
    trace_digest: sha256Hex(i.line),
    now_ms: i.nowMs,
    blueprint: { id: i.decision.blueprint, version: i.decision.blueprintVersion },
    reads: i.reads,
    trust_debt: i.decision.trustDebt,
  };
}

/** The PDP request record in its fixed key order (the line a POLICY_DECISION's request_digest covers). */
export function requestRecord(p: PendingRequest, trace: Trace, scorerAnswers: MetricOutcome[]): PolicyRequestRecord {
  const { blueprint, reads, trust_debt, ...head } = p;
  const input = taskPolicyInput(trace);
  return { ...head, ...(input ? { input } : {}), blueprint, reads, trust_debt, scorer_answers: scorerAnswers };
}

/** The blueprint's checks of a decision as a response records them. */
export function responseChecks(d: Pick<DecisionRecord, 'blueprint' | 'reasons' | 'tripwires' | 'rules'>): PendingRunEvent['checks'] {
  return {
    blueprint: d.blueprint,
    reasons: d.reasons,
    tripwires: d.tripwires.map((t) => ({ id: t.id, fired: t.fired, ...(t.fired && t.decision ? { decision: t.decision } : {}) })),
    rules: d.rules.map((r) => ({ id: r.id, passed: r.passed, ...(!r.passed && r.decision ? { decision: r.decision } : {}) })),
  };
}

/** The PDP response record (responseOf's shape and key order): the blueprint's outcome, the ACM part, the answer. */
export function responseRecord(seq: number, traceId: string, checks: Pick<PendingRunEvent['checks'], 'tripwires' | 'rules'>, answer: Pick<RunEventAnswer, 'intervention' | 'stage' | 'ctq' | 'risk' | 'verdict'>, acm: PolicyResponseRecord['acm']): PolicyResponseRecord {
  const final = acm ? mostSevere(answer.intervention, acm.intervention) : answer.intervention;
  return {
    seq,
    trace_id: traceId,
    blueprint: { intervention: answer.intervention, stage: answer.stage, tripwires: checks.tripwires, rules: checks.rules, ctq: answer.ctq, risk: answer.risk },
    ...(acm ? { acm } : {}),
    intervention: final,
    approved: isApproved(final),
    verdict: answer.verdict,
  };
}

/** The answer half of a score. */
export function runEventAnswer(p: Pick<RunEventAnswer, 'tenant' | 'run_id' | 'agent_id' | 'trace_id' | 'event_id'>, s: ScoreRecord): RunEventAnswer {
  return { run_record: 'answer', ...p, blueprint: s.blueprint, intervention: s.intervention, stage: s.stage, ctq: s.ctq, risk: s.risk, metrics: s.metrics, verdict: s.verdict as unknown as Record<string, unknown> };
}

/** The two halves joined: what RunCollector.add records for the same event. */
export function completeRunEvent(p: PendingRunEvent, a: RunEventAnswer, policyDigest?: string): CompletedRunEvent {
  const request = requestRecord(p.request, JSON.parse(p.line) as Trace, a.metrics);
  const response = responseRecord(p.seq, p.trace_id, p.checks, a, p.acm);
  const pd = acmPolicyDecisionDraft({
    trace_id: p.trace_id,
    ...(p.event_id !== p.trace_id ? { event_id: p.event_id } : {}),
    agent_id: p.agent_id,
    tenant: p.tenant,
    run_id: p.run_id,
    hook: p.request.hook,
    ts_ms: p.now_ms,
    blueprint: a.blueprint,
    intervention: response.intervention,
    approved: response.approved,
    stage: a.stage,
    reasons: p.checks.reasons,
    tripwires: p.checks.tripwires,
    rules: p.checks.rules,
    engine_version: p.engine_version,
    ...(p.task_id !== undefined ? { task_id: p.task_id } : {}),
    request_digest: recordDigest(request),
    response_digest: recordDigest(response),
    policy_digest: policyDigest,
    ...(p.acm ? { acm: { intervention: p.acm.intervention, codes: p.acm.violations.map((v) => v.code) } } : {}),
  });
  return { request, response, drafts: [pd, ...p.drafts] };
}
