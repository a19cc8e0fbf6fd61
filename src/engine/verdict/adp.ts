/** PVS-1 §4: a verdict embeds in an ADP-1 step as the observation of a `policy_judge` tool call. */
import type { PvsVerdict } from '../types.js';

export interface AdpStep {
  action: { type: 'tool_call'; name: string; input: { draft_output: string; policies: string[]; trace_id?: string } };
  observation: { type: 'tool_result'; output: PvsVerdict };
}

export function embedInAdpStep(verdict: PvsVerdict, draftOutput: string, traceId?: string): AdpStep {
  return {
    action: {
      type: 'tool_call',
      name: 'policy_judge',
      input: { draft_output: draftOutput, policies: verdict.policy_set ?? [], ...(traceId ? { trace_id: traceId } : {}) },
    },
    observation: { type: 'tool_result', output: verdict },
  };
}
