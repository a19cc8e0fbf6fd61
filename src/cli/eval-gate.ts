/**
 * The finalization gate in `steward eval` (contracts C5, docs/gate.md "steward eval"): the run's engine has
 * a FinalizationGate over an in-memory job store (eval-setup.ts), so a job's `tool_call`s are gated and
 * recorded in decide() exactly as in the tripwire stage; a `final_answer` line gains the `gate` object from
 * the engine's finalize(). The judge is the configured LLM (STEWARD_LLM_*), reached over HTTP.
 */
import type { StewardEngine } from '../engine/steward-engine.js';
import type { GateOutcome } from '../engine/gate/index.js';
import type { Trace } from '../engine/types.js';
import { gateAnswerFields } from '../contracts/engine-records.js';

/** The `gate` object of an eval line: the contract's fields in its order, then intervention and degraded. */
export function gateLine(o: GateOutcome): Record<string, unknown> {
  return gateAnswerFields(o);
}

export class EvalGate {
  constructor(private readonly engine: StewardEngine) {}

  /**
   * Adds the gate's answer to a final answer's eval line. Throws STEWARD_GATE_INPUT for a final answer
   * without job_id or draft, which `steward eval` reports as a line error. Lines of one agent arrive in order
   * (eval serialises them per agent), so a job's tool calls are recorded before its later answers are judged.
   */
  async extend(trace: Trace, nowMs: number, eventId: string | undefined, line: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (trace.hook !== 'final_answer') return line;
    return { ...line, gate: gateLine(await this.engine.finalize(trace, nowMs, eventId ?? trace.trace_id)) };
  }
}
