/** The stages one process can run, and the topics each one reads and writes (start-up checks, backlog checks). */
import type { TopicKey } from '../adapters/kafka/topics.js';
import type { StewardConfig } from '../config/steward-config.js';

export const STAGES = ['tripwire', 'scorer', 'gate', 'trust-debt', 'sink', 'approvals'] as const;
export type StageName = (typeof STAGES)[number];

/** The input topics of each stage's consumer group. */
export function stageInputs(cfg: StewardConfig, s: StageName): TopicKey[] {
  return s === 'scorer' && cfg.consumer.scorerInput === 'join' ? ['decisions'] : STAGE_INPUTS[s];
}

const STAGE_INPUTS: Record<StageName, TopicKey[]> = {
  tripwire: ['traces'],
  scorer: ['scoring'],
  gate: ['finalize'],
  'trust-debt': ['verdicts', 'decisions', 'reviews', 'gate'],
  sink: ['decisions', 'verdicts', 'ledger', 'trustDebt', 'gate', 'dlq'],
  // docs/approvals.md: requests and outcomes on acgp.approvals, approvers' answers on acgp.approval-answers.
  approvals: ['approvals', 'approvalAnswers'],
};
/** What each stage writes besides its inputs (replies are checked on their own: a missing one only warns). */
export const STAGE_OUTPUTS: Record<StageName, TopicKey[]> = {
  tripwire: ['decisions', 'scoring', 'finalize', 'ledger', 'dlq', 'approvals'],
  scorer: ['verdicts', 'ledger', 'dlq'],
  gate: ['gate', 'ledger', 'dlq'],
  'trust-debt': ['trustDebt', 'dlq'],
  sink: ['ledger'],
  approvals: ['ledger', 'dlq'],
};
