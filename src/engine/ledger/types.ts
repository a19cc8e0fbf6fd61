/**
 * Memory Ledger (ACM v0.2 §11): an append-only, time-ordered log of decisions, hash-chained per agent and
 * signed per entry. These are the stored/transmitted shapes (snake_case JSON, schemas/ledger-entry.schema.json).
 */

export const LEDGER_ENTRY_TYPES = [
  'POLICY_DECISION',
  'PLAN_SELECTED',
  'BRANCH_TAKEN',
  'REPLAN_TRIGGERED',
  'COMPENSATION_APPLIED',
  'GOAL_AMENDED',
] as const;
export type LedgerEntryType = (typeof LEDGER_ENTRY_TYPES)[number];

export function isLedgerEntryType(s: unknown): s is LedgerEntryType {
  return typeof s === 'string' && (LEDGER_ENTRY_TYPES as readonly string[]).includes(s);
}

/** prev_hash of the first entry of every chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** What a producer asks to record; the chain assigns seq, prev_hash, hash and signature. */
export interface LedgerDraft {
  /** Stable id of the fact being recorded (e.g. `pd:<event id>`, docs/spec-decisions.md D30): appending the same id twice is a no-op upstream. */
  entry_id: string;
  agent_id: string;
  tenant: string;
  /** Event time (ms). Clamped to the chain head's time so the chain stays time-ordered. */
  ts_ms: number;
  type: LedgerEntryType;
  payload: Record<string, unknown>;
}

export interface LedgerEntry extends LedgerDraft {
  /** 1-based position in the agent's chain. */
  seq: number;
  prev_hash: string;
  /** sha256 (hex) over the RFC 8785 canonical JSON of the entry without `hash` and `signature`. */
  hash: string;
  /** Ed25519 signature (base64) over the hash's bytes. */
  signature: string;
  /** Id of the signing key. Part of the hashed content, so swapping kid alone breaks the hash. */
  kid: string;
}

/** The last entry of a chain: all that is needed to append the next one. */
export interface ChainHead {
  agent_id: string;
  seq: number;
  hash: string;
  ts_ms: number;
}
