/**
 * The input of the gate's hooks (contracts C5, docs/gate.md): a `final_answer` parsed into what the gate reads, and the
 * check every gate hook passes before anything is decided or stored.
 */
import { StewardError } from '../../errors.js';
import type { Trace } from '../types.js';
import { optStr } from './tool-call-check.js';

/** What a final answer must carry (contracts C5): job_id and a draft. Anything else is a STEWARD_GATE_INPUT error. */
export interface FinalAnswerInput {
  jobId: string;
  draft: string;
  goal?: string;
  intentId: string | null;
  constraints: string[];
  abstractionLevel: string | null;
  artifactType: string | null;
  clarification: string | null;
}

export function parseFinalAnswer(trace: Trace): FinalAnswerInput {
  const bad = (m: string) => new StewardError('STEWARD_GATE_INPUT', `final_answer trace ${JSON.stringify(trace.trace_id)}: ${m}`);
  if (trace.hook !== 'final_answer') throw bad(`hook is '${trace.hook}', not final_answer`);
  if (typeof trace.job_id !== 'string' || trace.job_id.trim() === '') throw bad("missing 'job_id' (a non-empty string: the job is the unit of retries)");
  const draft = typeof trace.draft_answer === 'string' ? trace.draft_answer : trace.draft_answer === undefined ? trace.content : undefined;
  if (typeof draft !== 'string' || draft.trim() === '') throw bad("missing draft: 'draft_answer' (or 'content') must be a non-empty string");
  if (trace.constraints !== undefined && (!Array.isArray(trace.constraints) || !trace.constraints.every((c) => typeof c === 'string'))) throw bad("'constraints' must be a list of strings");
  return {
    jobId: trace.job_id,
    draft,
    ...(typeof trace.goal === 'string' && { goal: trace.goal }),
    intentId: optStr(trace.intent_id),
    constraints: (trace.constraints as string[] | undefined) ?? [],
    abstractionLevel: optStr(trace.abstraction_level),
    artifactType: optStr(trace.artifact_type),
    clarification: optStr(trace.clarification),
  };
}

/**
 * The input check of a gate hook, before anything is decided or stored (the tripwire stage dead-letters what
 * fails it; `steward eval` reports a line error): a well-formed final answer, or a `user_feedback` with
 * `job_id` and `feedback` up or down. STEWARD_GATE_INPUT otherwise.
 */
export function checkGateHookInput(trace: Trace): void {
  if (trace.hook === 'final_answer') {
    parseFinalAnswer(trace);
    return;
  }
  if (trace.hook !== 'user_feedback' || typeof trace.job_id !== 'string' || trace.job_id === '' || (trace.feedback !== 'up' && trace.feedback !== 'down')) {
    throw new StewardError('STEWARD_GATE_INPUT', `user_feedback trace ${JSON.stringify(trace.trace_id)}: needs 'job_id' and 'feedback' (up or down)`);
  }
}
