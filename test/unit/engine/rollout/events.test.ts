import { describe, expect, it } from 'vitest';
import { declaredRollout, rollbackEvent, rolloutLedgerDraft, setEvent } from '../../../../src/engine/rollout/events.js';
import { compileTrigger, type CompiledTrigger } from '../../../../src/engine/rollout/triggers.js';

const state = { name: 't/roll', stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 25, generation: 3, updatedAtMs: 10 };

describe('rollout events and ledger entries', () => {
  it('a trigger rollback names the trigger, the values and the percentages; its ledger entry is on the steward:rollout chain', () => {
    const ev = rollbackEvent(state, { trigger: compileTrigger('halt_rate > 1%') as CompiledTrigger, canaryValue: 0.05, stableValue: 0 }, 4, 99);
    expect(ev).toMatchObject({ event_id: 'rollout:t/roll:4', kind: 'rollback', from_percent: 25, to_percent: 0, trigger_id: 'halt_rate > 1%', metric: 'halt_rate', actor: 'steward', ts_ms: 99 });
    expect(ev.reason).toContain('canary 5.00% vs stable 0.00%');
    expect(rolloutLedgerDraft(ev)).toMatchObject({ entry_id: 'rollout:t/roll:4', agent_id: 'steward:rollout', tenant: '', type: 'POLICY_DECISION', ts_ms: 99, payload: { rollout: 'rollback', blueprint: 't/roll', to_percent: 0 } });
    expect(rollbackEvent(state, 'manual', 4, 1, 'ops')).toMatchObject({ trigger_id: 'manual_trigger', actor: 'ops' });
    expect(setEvent(undefined, state, 'ops', 'raise')).toMatchObject({ kind: 'set', from_percent: 0, to_percent: 25, event_id: 'rollout:t/roll:3' });
  });

  it('a migration block declares its rollout from from_version at the first stage, when that version is loaded', () => {
    const bp = (migration: unknown) => ({ id: 't/roll@2.0.0', version: '2.0.0', resolved: { migration } });
    const has = (ref: string) => ref === 't/roll@1.0.0';
    expect(declaredRollout(bp({ from_version: '1.0.0', stages: [{ name: 'canary', percentage: 5 }, { name: 'full', percentage: 100 }] }), has)).toEqual({ name: 't/roll', stableVersion: '1.0.0', canaryVersion: '2.0.0', percent: 5 });
    expect(declaredRollout(bp({ from_version: '0.9.0', stages: [{ percentage: 5 }] }), has)).toBeUndefined();
    expect(declaredRollout(bp({ blueprint_id: 'other@2.0.0', from_version: '1.0.0', stages: [{ percentage: 5 }] }), has)).toBeUndefined();
    expect(declaredRollout(bp(undefined), has)).toBeUndefined();
  });
});
