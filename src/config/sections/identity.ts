/** approvals.*, signing.*, agents.*: who may answer approvals, which keys sign verdicts and the ledger, who may send traces. */
import { resolve } from 'node:path';
import type { IdentityPolicy } from '../../engine/identity.js';
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';
import { settingPath, type SectionContext } from './context.js';

export interface IdentitySection {
  /** docs/approvals.md: the approver registry file and the deadline sweep's period. */
  approvals: { approversFile?: string; sweepIntervalMs: number };
  signing?: { key: string; keyId?: string };
  /** signing.ledger_key / STEWARD_LEDGER_KEY: the ledger's own key; signing.key signs the ledger when unset. */
  ledgerSigning?: { key: string; keyId?: string };
  /** Who may send traces: agents.* (docs/security.md). */
  agents: IdentityPolicy;
  /** signing.require_key / STEWARD_REQUIRE_SIGNING_KEY: refuse to run the scorer with an ephemeral key (production). */
  requireSigningKey: boolean;
  /** signing.allow_ephemeral / STEWARD_ALLOW_EPHEMERAL_KEY: `steward run` may sign with a throwaway key (trials). */
  allowEphemeralKey: boolean;
}

export function identitySection(raw: Raw, ctx: SectionContext): IdentitySection {
  // signing.key is PEM text or a path: a path from the file is relative to the file (as ssl files are).
  const keyPath = (k: string) => (k.includes('-----BEGIN') || ctx.fromEnv('STEWARD_SIGNING_KEY') ? k : resolve(ctx.base, k));
  const ledgerKey = v(raw, 'signing.ledger_key');
  const approvers = v(raw, 'approvals.approvers_file');
  return {
    approvals: { approversFile: approvers ? settingPath(ctx, 'STEWARD_APPROVERS_FILE', approvers) : undefined, sweepIntervalMs: v(raw, 'approvals.sweep_interval_ms') },
    signing: raw.signing?.key ? { key: keyPath(raw.signing.key), keyId: v(raw, 'signing.key_id') } : undefined,
    ledgerSigning: ledgerKey ? { key: ctx.fromEnv('STEWARD_LEDGER_KEY') || ledgerKey.includes('-----BEGIN') ? ledgerKey : resolve(ctx.base, ledgerKey), keyId: v(raw, 'signing.ledger_key_id') } : undefined,
    agents: { requireRegistered: v(raw, 'agents.require_registered'), keyMustMatch: v(raw, 'agents.key_must_match'), requireSignature: v(raw, 'agents.require_signature') },
    requireSigningKey: v(raw, 'signing.require_key'),
    allowEphemeralKey: v(raw, 'signing.allow_ephemeral'),
  };
}
