/**
 * The finalization gate in `steward eval` (contracts C5, docs/gate.md "steward eval"): the same
 * FinalizationGate as the stream, with an in-memory job store across the run's lines. A `final_answer`
 * line gains the `gate` object; a `tool_call` with a `job_id` becomes the job's evidence (when it ran:
 * approved by the engine and not stopped by the pre-tool gate), and a call the pre-tool gate blocks says so
 * in a `gate` object of its own. The judge is the configured LLM (STEWARD_LLM_*), reached over HTTP.
 */
import type { EvalRecord } from '../engine/steward-engine.js';
import { FinalizationGate, MemoryGateJobStore, type GateOutcome } from '../engine/gate/index.js';
import type { LlmClient, Trace } from '../engine/types.js';
import type { AgentRegistry, BlueprintSet } from '../engine/blueprint/index.js';

/** The `gate` object of an eval line: the contract's fields in its order, then intervention and degraded. */
export function gateLine(o: GateOutcome): Record<string, unknown> {
  return {
    verdict: o.verdict,
    quality_score: o.quality_score,
    reason_codes: o.reason_codes,
    fix_mode: o.fix_mode,
    attempt_index: o.attempt_index,
    action: o.action,
    judged_by: o.judged_by,
    missing_requirements: o.missing_requirements,
    directive: o.directive,
    intervention: o.intervention,
    degraded: o.degraded,
  };
}

export interface EvalGateSetup {
  set: BlueprintSet;
  registry: AgentRegistry;
  llm?: LlmClient;
}

export class EvalGate {
  readonly gate: FinalizationGate;
  constructor(
    private readonly setup: EvalGateSetup,
    warn: (m: string) => void,
  ) {
    this.gate = new FinalizationGate({ llm: setup.llm, jobStore: new MemoryGateJobStore(), onWarning: (m) => warn(`warning: ${m}`) });
  }

  /**
   * Adds the gate's answer to an eval line. Throws STEWARD_GATE_INPUT for a final answer without job_id or
   * draft, which `steward eval` reports as a line error. Lines of one agent arrive in order (eval serialises
   * them per agent), so a job's tool calls are recorded before its later final answers are judged.
   */
  async extend(trace: Trace, nowMs: number, eventId: string | undefined, rec: EvalRecord, line: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (trace.hook !== 'final_answer' && trace.hook !== 'tool_call') return line;
    const agent = this.setup.registry.lookup(trace.agent_id);
    const bp = this.setup.set.select(agent, trace);
    const id = eventId ?? trace.trace_id;
    if (trace.hook === 'final_answer') return { ...line, gate: gateLine(await this.gate.finalize(trace, agent, bp, nowMs, id)) };
    // Tier 1 applies to every tool call; only calls of a job are recorded (recordToolCall skips the others).
    const check = await this.gate.checkToolCall(trace, agent, bp, nowMs, { eventId: id });
    await this.gate.recordToolCall(trace, agent, nowMs, id, rec.score.approved && check.intervention === 'ok');
    return check.intervention === 'block' ? { ...line, gate: { action: 'block', intervention: 'block', reasons: check.hits.map((h) => h.message) } } : line;
  }
}
