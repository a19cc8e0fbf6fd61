import { describe, expect, it } from 'vitest';
import { RecordedStateStore, RecordingStateStore, taskPolicyInput } from '../../../../src/engine/acm/index.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import type { Trace } from '../../../../src/engine/types.js';

describe('PDP state records', () => {
  it('RecordingStateStore records reads per namespace; RecordedStateStore answers them back', async () => {
    const live = new MemoryStateStore({ 'acme:a': { limit: 7 } });
    const rec = new RecordingStateStore(live);
    expect(await rec.get('acme:a', 'limit')).toBe(7);
    expect(await rec.hit('acme:a', 'rate:60000:k', 60_000, 1000, 't1:k')).toBe(1);
    expect(await rec.hit('acme:b', 'rate:60000:k', 60_000, 1000, 't2:k')).toBe(1);
    expect(await rec.get('acme:a', 'missing')).toBeUndefined();
    const reads = rec.take('acme:a');
    expect(reads).toEqual([
      { op: 'get', ns: 'acme:a', key: 'limit', value: 7 },
      { op: 'hit', ns: 'acme:a', key: 'rate:60000:k', window_ms: 60_000, now_ms: 1000, hit_id: 't1:k', count: 1 },
      { op: 'get', ns: 'acme:a', key: 'missing', value: null },
    ]);
    expect(rec.take('acme:a')).toEqual([]);
    expect(rec.take('acme:b')).toHaveLength(1);

    const replay = new RecordedStateStore();
    replay.load(JSON.parse(JSON.stringify(reads)));
    expect(await replay.hit('acme:a', 'rate:60000:k', 60_000, 1000, 't1:k')).toBe(1);
    expect(await replay.get('acme:a', 'limit')).toBe(7);
    expect(replay.unused()).toHaveLength(1);
    expect(await replay.get('acme:a', 'missing')).toBeUndefined();
    await expect(replay.get('acme:a', 'limit')).rejects.toThrow(/recorded state holds no/);
    await expect(replay.hit('acme:a', 'rate:60000:k', 60_000, 2000, 't1:k')).rejects.toThrow(/rate-window/);
  });

  it('the §14.1 policy input of a task hook', () => {
    const t = { trace_id: 'x', agent_id: 'a', timestamp: '', hook: 'task.pre', task: { id: 't6', capability: 'create_refund_txn', input: { amount: 5 } }, goal: { id: 'G' }, plan: { id: 'p' }, run: { runId: 'r' }, metrics: { cost_usd: 0.1 }, other: 1 } as Trace;
    expect(taskPolicyInput(t)).toEqual({ action: 'task.pre', task: t.task, goal: t.goal, plan: t.plan, run: t.run, metrics: t.metrics });
    expect(taskPolicyInput({ ...t, hook: 'tool_call' })).toBeUndefined();
  });
});
