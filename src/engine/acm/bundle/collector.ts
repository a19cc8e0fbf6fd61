/**
 * Collects a run's records as events are decided (what `steward eval --bundles` and a stage do) and
 * chains and signs the run's memory-ledger entries: each decided event gets a POLICY_DECISION holding
 * the digests of its PDP request and response and of the policy files, then the ACM entries the
 * event produced. The ledger is the signed anchor a replay checks everything else against.
 */
import { LedgerChain } from '../../ledger/chain.js';
import type { LedgerSigner } from '../../ledger/crypto.js';
import { acmPolicyDecisionDraft } from '../../ledger/acm-entries.js';
import type { LedgerDraft } from '../../ledger/types.js';
import type { EvalRecord } from '../../steward-engine.js';
import type { Trace } from '../../types.js';
import type { ContextVersion } from '../context.js';
import { acmSummary, type PolicyRequestRecord, type PolicyResponseRecord, type StateRead } from '../pdp.js';
import { pendingRequest, requestRecord, responseChecks, responseRecord } from './stream-record.js';
import type { AcmCheck } from '../run-step.js';
import { recordDigest, type RunRecord } from './layout.js';

export interface CollectedEvent {
  runId: string;
  line: string;
  trace: Trace;
  nowMs: number;
  eventId?: string;
  tenant: string;
  check?: AcmCheck;
  /** The blueprint evaluation; absent for a rejected event (not decided). */
  rec?: EvalRecord;
  reads?: StateRead[];
  drafts?: LedgerDraft[];
  contexts?: ContextVersion[];
}

export { acmSummary } from '../pdp.js';

export function responseOf(seq: number, trace: Trace, rec: EvalRecord, check: AcmCheck | undefined): PolicyResponseRecord {
  const s = rec.score;
  return responseRecord(seq, trace.trace_id, responseChecks(rec.decision), { intervention: s.intervention, stage: s.stage, ctq: s.ctq, risk: s.risk, verdict: s.verdict as unknown as Record<string, unknown> }, acmSummary(check));
}

/** The PDP request record of a decided event (what a stage records next to the response). */
export function requestOf(i: { seq: number; trace: Trace; traceLine: number; line: string; nowMs: number; eventId?: string; rec: EvalRecord; reads: StateRead[] }): PolicyRequestRecord {
  // The stream builds the same record from two halves (stream-record.ts).
  return requestRecord(pendingRequest({ ...i, decision: i.rec.decision }), i.trace, i.rec.score.metrics);
}

export class RunCollector {
  private readonly runs = new Map<string, { record: RunRecord; chain: LedgerChain; seq: number; contexts: Set<string> }>();

  constructor(private readonly o: { signer: LedgerSigner; policyDigest: string; engineVersion: string }) {}

  add(e: CollectedEvent): void {
    let r = this.runs.get(e.runId);
    if (!r) {
      // One chain per run: the bundle's ledger is complete from its genesis (docs/acm.md).
      r = { record: { run_id: e.runId, agent_id: e.trace.agent_id, tenant: e.tenant, traces: [], requests: [], responses: [], ledger: [], contexts: [] }, chain: new LedgerChain(this.o.signer), seq: 0, contexts: new Set() };
      this.runs.set(e.runId, r);
    }
    const rec = r.record;
    rec.traces.push({ line: e.line, trace: e.trace, now_ms: e.nowMs });
    for (const v of e.contexts ?? []) {
      const k = `${v.id}@${v.version}`;
      if (!r.contexts.has(k)) {
        r.contexts.add(k);
        rec.contexts.push(v);
      }
    }
    if (!e.rec) return;
    const seq = ++r.seq;
    const request = requestOf({ seq, trace: e.trace, traceLine: rec.traces.length, line: e.line, nowMs: e.nowMs, eventId: e.eventId, rec: e.rec, reads: e.reads ?? [] });
    const response = responseOf(seq, e.trace, e.rec, e.check);
    rec.requests.push(request);
    rec.responses.push(response);
    const task = (e.trace.task as { id?: unknown } | undefined)?.id;
    const pd = acmPolicyDecisionDraft({
      trace_id: e.trace.trace_id,
      ...(e.eventId !== undefined ? { event_id: e.eventId } : {}),
      agent_id: e.trace.agent_id,
      tenant: e.tenant,
      run_id: e.runId,
      hook: e.trace.hook,
      ts_ms: e.nowMs,
      blueprint: e.rec.score.blueprint,
      intervention: response.intervention,
      approved: response.approved,
      stage: e.rec.score.stage,
      reasons: e.rec.decision.reasons,
      tripwires: e.rec.decision.tripwires,
      rules: e.rec.decision.rules,
      engine_version: this.o.engineVersion,
      ...(typeof task === 'string' ? { task_id: task } : {}),
      request_digest: recordDigest(request),
      response_digest: recordDigest(response),
      policy_digest: this.o.policyDigest,
      ...(e.check ? { acm: { intervention: e.check.intervention, codes: e.check.violations.map((v) => v.code) } } : {}),
    });
    rec.ledger.push(r.chain.append(pd));
    for (const d of e.drafts ?? []) rec.ledger.push(r.chain.append(d));
  }

  records(): RunRecord[] {
    return [...this.runs.values()].map((r) => r.record);
  }
}
