/**
 * The acgp.scoring message: what the tripwire stage hands the scorer for a trace it did not halt.
 *
 * Written as `{trace, event_time_ms, decision_record, reply?}`: the trace as received, the event time the
 * decision used, and the engine's decision record without the per-check latencies (nothing downstream of
 * the tripwire stage reads them; the decision message drops them too). The scorer rebuilds the decision
 * fields it needs from the record (`decisionMessage`), so the decision is not sent twice — the earlier
 * form also carried the whole acgp.decisions message (~1.5 KB per trace instead of ~0.8 KB, and the bytes
 * a stage produces are most of its Kafka cost). Messages of the earlier form (`decision` present) are
 * still read.
 */
import { carriedReplyRoute } from '../adapters/kafka/request-reply.js';
import type { InMessage } from '../adapters/kafka/client.js';
import type { DecisionMessage, ReplyRoute, ScoringMessage } from '../contracts/messages.js';
import { validateTrace } from '../adapters/kafka/serde.js';
import type { Trace } from '../engine/types.js';
import { StewardError } from '../errors.js';
import { decisionInputOf, decisionMessage } from '../contracts/engine-records.js';
import type { ScoreDecisionInput } from '../engine/steward-engine.js';
import { INTERVENTIONS } from '../engine/types.js';

type Rec = Record<string, any>;

/** A check outcome without its latency (undefined fields are left out by JSON.stringify). */
function checks(list: unknown, passedKey: 'fired' | 'passed'): unknown {
  if (!Array.isArray(list)) return list;
  const out: Rec[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const c = list[i] as Rec;
    out[i] =
      c === null || typeof c !== 'object'
        ? c
        : passedKey === 'fired'
          ? { id: c.id, fired: c.fired, decision: c.decision, reason: c.reason, severity: c.severity, error: c.error }
          : { id: c.id, passed: c.passed, decision: c.decision, reason: c.reason, error: c.error };
  }
  return out;
}

/** The decision record as the scorer needs it: per-check latencies dropped, everything else as is. */
export function compactRecord(record: unknown): unknown {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return record;
  const r = record as Rec;
  if (!Array.isArray(r.tripwires) && !Array.isArray(r.rules)) return record;
  return { ...r, tripwires: checks(r.tripwires, 'fired'), rules: checks(r.rules, 'passed') };
}

/** The scoring message as JSON, around the trace text as received (not serialised a second time). */
export function scoringJson(traceJson: string, eventTimeMs: number, record: unknown, reply: ReplyRoute | undefined): string {
  let out = `{"trace":${traceJson},"event_time_ms":${Number.isFinite(eventTimeMs) ? eventTimeMs : 'null'}`;
  if (record !== undefined) out += `,"decision_record":${JSON.stringify(compactRecord(record))}`;
  if (reply !== undefined) out += `,"reply":${JSON.stringify(reply)}`;
  return out + '}';
}

export interface ParsedScoring {
  trace: Trace;
  /** The decision fields the verdict message takes over (tenant, blueprint, intervention, reasons, …). */
  decision: DecisionMessage;
  /** What StewardEngine.score() receives: the record, or the one the decision message gives when there is none. */
  decisionForScore: ScoreDecisionInput;
  reply?: ReplyRoute;
}


/** Parses and validates an acgp.scoring message (either form); malformed input is a non-retryable StewardError. */
export function parseScoring(m: InMessage, repliesTopic?: string): ParsedScoring {
  if (m.value === null) throw new StewardError('STEWARD_TRACE_JSON', 'empty scoring message');
  let obj: Partial<ScoringMessage> & { event_time_ms?: unknown };
  try {
    obj = JSON.parse(m.value.toString('utf8')) as typeof obj;
  } catch (e) {
    throw new StewardError('STEWARD_TRACE_JSON', `malformed scoring message: ${(e as Error).message}`);
  }
  if (!obj || typeof obj !== 'object' || !obj.trace || typeof obj.trace !== 'object') throw new StewardError('STEWARD_TRACE_SCHEMA', 'scoring message lacks trace/decision');
  const legacy = obj.decision;
  if (legacy !== undefined && (!legacy || typeof legacy.trace_id !== 'string')) throw new StewardError('STEWARD_TRACE_SCHEMA', 'scoring message lacks trace/decision');
  if (legacy === undefined && !('event_time_ms' in obj)) throw new StewardError('STEWARD_TRACE_SCHEMA', 'scoring message lacks trace/decision');
  const trace = validateTrace(obj.trace);
  // The earlier form's decision names the trace itself: its ids go into the verdict, so they must be the trace's.
  if (legacy !== undefined && (legacy.trace_id !== trace.trace_id || legacy.agent_id !== trace.agent_id)) {
    throw new StewardError('STEWARD_TRACE_SCHEMA', 'scoring message: the decision names another trace or agent than the trace');
  }
  const record = obj.decision_record === undefined ? undefined : recordOf(obj.decision_record, trace);
  const decision = legacy ?? decisionMessage(record ?? okRecord(trace), trace, typeof obj.event_time_ms === 'number' ? obj.event_time_ms : NaN, 0);
  return { trace, decision, decisionForScore: record ?? decisionInputOf(decision), reply: carriedReplyRoute(obj.reply, repliesTopic) };
}

const STAGES = new Set(['tripwire', 'rule', 'none']);
const KNOWN_INTERVENTIONS = new Set<string>(INTERVENTIONS);

/** The decision record a scoring message carries, checked where the scorer relies on it (else DLQ). */
function recordOf(v: unknown, trace: Trace): ScoreDecisionInput {
  const r = v as Record<string, unknown> | null;
  const ok =
    r !== null &&
    typeof r === 'object' &&
    !Array.isArray(r) &&
    typeof r.blueprint === 'string' &&
    typeof r.intervention === 'string' &&
    KNOWN_INTERVENTIONS.has(r.intervention) &&
    typeof r.stage === 'string' &&
    STAGES.has(r.stage) &&
    Array.isArray(r.tripwires) &&
    Array.isArray(r.rules) &&
    (r.reasons === undefined || Array.isArray(r.reasons));
  if (!ok) throw new StewardError('STEWARD_TRACE_SCHEMA', 'scoring message: decision_record is not a decision record');
  const rec = r as unknown as ScoreDecisionInput;
  return {
    ...rec,
    traceId: trace.trace_id,
    agentId: trace.agent_id,
    halted: rec.halted === true,
    reasons: rec.reasons ?? [],
    latencyMs: typeof rec.latencyMs === 'number' ? rec.latencyMs : 0,
  };
}

/** A scoring message without a record (not written by Steward): the trace is scored as if its decision was ok. */
function okRecord(trace: Trace): ScoreDecisionInput {
  return { traceId: trace.trace_id, agentId: trace.agent_id, blueprint: '', intervention: 'ok', stage: 'none', halted: false, tripwires: [], rules: [], reasons: [], latencyMs: 0 };
}
