/** The intervention scale every stage decides on (spec-decisions D1), and its order. */

/** Severity order (spec-decisions D1): ok < nudge < flag < escalate < block < halt. */
export const INTERVENTIONS = ['ok', 'nudge', 'flag', 'escalate', 'block', 'halt'] as const;
export type Intervention = (typeof INTERVENTIONS)[number];

const RANK: Record<Intervention, number> = { ok: 0, nudge: 1, flag: 2, escalate: 3, block: 4, halt: 5 };
export function severityRank(i: Intervention): number {
  return RANK[i];
}
export function mostSevere(a: Intervention, b: Intervention): Intervention {
  return RANK[a] >= RANK[b] ? a : b;
}
/** PVS-1 `approved` is true for ok, nudge and flag (spec-decisions D1). */
export function isApproved(i: Intervention): boolean {
  return RANK[i] <= RANK.flag;
}

export type TripwireSeverity = 'standard' | 'critical' | 'severe' | (string & {});
