/**
 * What a rollout change leaves behind (docs/rollout.md "Rollback triggers"): the acgp.rollouts event and the
 * ledger entry. Rollouts belong to no agent, so their ledger chain is the pseudo-agent `steward:rollout`
 * (tenant ''); the entry is a POLICY_DECISION (the policy in force changed) whose payload names the rollout.
 */
import type { LedgerDraft } from '../ledger/types.js';
import type { RolloutState } from './arm.js';
import type { TriggerFiring } from './triggers.js';

export const ROLLOUT_LEDGER_AGENT = 'steward:rollout';

/** acgp.rollouts record (contracts C8 RolloutEventMessage). */
export interface RolloutEvent {
  event_id: string;
  blueprint: string;
  kind: 'set' | 'rollback';
  stable_version: string;
  canary_version: string;
  from_percent: number;
  to_percent: number;
  /** The rollback trigger that fired ('' for set, `manual_trigger` for a manual rollback). */
  trigger_id: string;
  metric: string;
  canary_value: number;
  stable_value: number;
  reason: string;
  /** `steward` (a trigger) or the operator (`--by`). */
  actor: string;
  ts_ms: number;
}

export function rollbackEvent(state: RolloutState, firing: TriggerFiring | 'manual', generation: number, atMs: number, actor = 'steward'): RolloutEvent {
  const auto = firing !== 'manual';
  return {
    event_id: `rollout:${state.name}:${generation}`,
    blueprint: state.name,
    kind: 'rollback',
    stable_version: state.stableVersion,
    canary_version: state.canaryVersion,
    from_percent: state.percent,
    to_percent: 0,
    trigger_id: auto ? firing.trigger.source : 'manual_trigger',
    metric: auto ? `${firing.trigger.metric}${firing.trigger.delta ? '_delta' : ''}` : '',
    canary_value: auto ? firing.canaryValue : 0,
    stable_value: auto ? firing.stableValue : 0,
    reason: auto
      ? `rollback trigger '${firing.trigger.source}' fired: canary ${(firing.canaryValue * 100).toFixed(2)}% vs stable ${(firing.stableValue * 100).toFixed(2)}%`
      : 'manual rollback',
    actor,
    ts_ms: atMs,
  };
}

export function setEvent(before: RolloutState | undefined, after: RolloutState, actor: string, reason: string): RolloutEvent {
  return {
    event_id: `rollout:${after.name}:${after.generation}`,
    blueprint: after.name,
    kind: 'set',
    stable_version: after.stableVersion,
    canary_version: after.canaryVersion,
    from_percent: before?.percent ?? 0,
    to_percent: after.percent,
    trigger_id: '',
    metric: '',
    canary_value: 0,
    stable_value: 0,
    reason,
    actor,
    ts_ms: after.updatedAtMs,
  };
}

export function rolloutLedgerDraft(e: RolloutEvent): LedgerDraft {
  return {
    entry_id: e.event_id,
    agent_id: ROLLOUT_LEDGER_AGENT,
    tenant: '',
    ts_ms: e.ts_ms,
    type: 'POLICY_DECISION',
    payload: {
      rollout: e.kind,
      blueprint: e.blueprint,
      stable_version: e.stable_version,
      canary_version: e.canary_version,
      from_percent: e.from_percent,
      to_percent: e.to_percent,
      trigger: e.trigger_id,
      reason: e.reason,
      actor: e.actor,
    },
  };
}

/** A blueprint's declared rollout start (§13.5.1 `migration`): from_version → this version at the first stage. */
export function declaredRollout(bp: { id: string; version: string; resolved: Record<string, unknown> }, has: (ref: string) => boolean): { name: string; stableVersion: string; canaryVersion: string; percent: number } | undefined {
  const m = bp.resolved.migration as { blueprint_id?: unknown; from_version?: unknown; stages?: { percentage?: unknown }[] } | undefined;
  const pct = m?.stages?.[0]?.percentage;
  if (!m || typeof m.from_version !== 'string' || typeof pct !== 'number') return undefined;
  const name = bp.id.slice(0, bp.id.lastIndexOf('@') < 0 ? undefined : bp.id.lastIndexOf('@'));
  if (typeof m.blueprint_id === 'string' && m.blueprint_id.split('@')[0] !== name) return undefined;
  if (!has(`${name}@${m.from_version}`)) return undefined;
  return { name, stableVersion: m.from_version, canaryVersion: bp.version, percent: pct };
}
