/**
 * The gate hooks in `steward eval` (contracts C3/C5, docs/gate.md "steward eval", spec-decisions D50): a
 * `final_answer` or `user_feedback` line takes the stream's path for it, not the tripwire stage's. The stream
 * never decides these hooks in the tripwire stage (it checks them and hands them to the gate stage), so eval
 * does not run evaluate() on them either: the input check first (a bad one is a line error, nothing touched),
 * then the engine's finalize() / userFeedback(), then the gate's own trust-debt movement as the trust-debt
 * stage applies it. The run's engine has a FinalizationGate over an in-memory job store (eval-setup.ts), so a
 * job's `tool_call`s, decided by evaluate() as in the tripwire stage, are its evidence.
 */
import type { StewardEngine } from '../engine/steward-engine.js';
import { checkGateHookInput, type GateOutcome } from '../engine/gate/index.js';
import type { Intervention, Trace } from '../engine/types.js';
import { gateAnswerFields } from '../contracts/engine-records.js';
import { feedbackEvalLine, gateEvalLine } from './eval-format.js';

/** The `gate` object of an eval line: the contract's fields in its order, then intervention and degraded. */
export function gateLine(o: GateOutcome): Record<string, unknown> {
  return gateAnswerFields(o);
}

export const isGateHook = (hook: string): boolean => hook === 'final_answer' || hook === 'user_feedback';

export class EvalGate {
  constructor(private readonly engine: StewardEngine) {}

  /**
   * The eval line of a gate hook, and the gate's intervention for the summary (null for user_feedback). Throws
   * STEWARD_GATE_INPUT for a malformed one (a final answer without job_id or draft, constraints not a list; a
   * feedback without job_id or up/down), which `steward eval` reports as a line error, as the stream dead-letters
   * it. Lines of one agent arrive in order (eval serialises them per agent), so a job's tool calls are recorded
   * before its later answers are judged. `eventId` as the gate stage gets it (trace_id, or trace_id#digest).
   */
  async answer(trace: Trace, nowMs: number, eventId: string | undefined): Promise<{ line: Record<string, unknown>; intervention: Intervention | null }> {
    checkGateHookInput(trace);
    if (trace.hook === 'user_feedback') return { line: feedbackEvalLine(trace, await this.engine.userFeedback(trace, nowMs)), intervention: null };
    const o = await this.engine.finalize(trace, nowMs, eventId ?? trace.trace_id);
    const debt = await this.engine.applyGateDebt(o, nowMs);
    return { line: { ...gateEvalLine(o, debt), gate: gateLine(o) }, intervention: o.intervention };
  }
}
