/**
 * What the acgp client (PyPI 0.1.4) reads as feedback and oversight, built from Steward's decisions and verdicts
 * (docs/http.md "Feedback and oversight", docs/spec-decisions.md D43). The client dispatches a stream's
 * `trace_processed` event to its `on_feedback` callback only when the event has a `feedback` (or `ctq_scores`)
 * key, its `get_feedback()` waits for a `feedback` key, and `get_oversight_mode()` reads `oversight_mode`; without
 * them an unmodified client never learns that a trace was blocked or halted.
 */

/** The acgp client's three oversight modes, gentlest first. */
export type OversightMode = 'socratic_philosopher' | 'wise_critic' | 'strict_guardian';

/**
 * The oversight a trace is under: the stricter of what its decision did and what its CTQ says (the client's own
 * quality bands: above 0.7 high, from 0.5 medium, below low). A stop (block, halt) or an escalation to a human is
 * the strict guardian; a nudge or a flag the wise critic; ok the Socratic philosopher.
 */
export function oversightMode(intervention: string, ctq?: number | null): OversightMode {
  const byDecision: OversightMode = intervention === 'block' || intervention === 'halt' || intervention === 'escalate' ? 'strict_guardian' : intervention === 'nudge' || intervention === 'flag' ? 'wise_critic' : 'socratic_philosopher';
  if (ctq === undefined || ctq === null || !Number.isFinite(ctq)) return byDecision;
  const byCtq: OversightMode = ctq > 0.7 ? 'socratic_philosopher' : ctq >= 0.5 ? 'wise_critic' : 'strict_guardian';
  return stricter(byDecision, byCtq);
}

const RANK: Record<OversightMode, number> = { socratic_philosopher: 0, wise_critic: 1, strict_guardian: 2 };

/** The stricter of two oversight modes. */
export const stricter = (a: OversightMode, b: OversightMode): OversightMode => (RANK[b] > RANK[a] ? b : a);

/** The `feedback` object of a decision (the tripwire stage's answer): what it did to the trace and why. */
export function decisionFeedback(d: Record<string, unknown>): Record<string, unknown> {
  const intervention = String(d.intervention ?? 'ok');
  return {
    source: 'decision',
    intervention,
    approved: d.approved === true,
    halted: d.halted === true,
    reasons: Array.isArray(d.reasons) ? d.reasons : [],
    oversight_mode: oversightMode(intervention),
  };
}

/** The `feedback` object of a verdict (the scored CTQ): its intervention, scores and the metrics that failed. */
export function verdictFeedback(v: Record<string, unknown>): Record<string, unknown> {
  const intervention = String(v.intervention ?? 'ok');
  const ctq = typeof v.ctq === 'number' ? v.ctq : null;
  return {
    source: 'verdict',
    intervention,
    approved: v.approved === true || v.approved === 1,
    ctq,
    risk: typeof v.risk === 'number' ? v.risk : null,
    oversight_mode: oversightMode(intervention, ctq),
  };
}
