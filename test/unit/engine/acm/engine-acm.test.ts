/** StewardEngine's `acm` option (docs/acm.md "In the stream"): decide() governs the events of a run. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { compileBlueprintSet, createAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { compileVerificationSheets, MemoryAcmRunStateStore, type AcmOptions } from '../../../../src/engine/acm/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { dslOptionsFromConfig } from '../../../../src/engine/dsl/index.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import { StewardEngine, type DecisionRecord } from '../../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../../src/engine/types.js';
import { Ed25519Signer } from '../../../../src/engine/verdict/index.js';
import { isStewardError } from '../../../../src/errors.js';

const DIR = 'examples/refund-run';
const traces = readFileSync(`${DIR}/trace.jsonl`, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Trace);
const nowOf = (t: Trace) => Date.parse(String(t.timestamp));

/** The example's blueprint with a stateful tripwire over task.pre (a rate window read for every task.pre). */
const WITH_RATE = readFileSync(`${DIR}/blueprints/refund_run@1.0.yaml`, 'utf8').replace(
  'checks:\n',
  'tripwires:\n  - id: task_rate\n    severity: standard\n    when:\n      hook: "task.pre"\n    condition: NOT exceeds_rate(agent_id, 100, "1h")\n    eval_tier: 1\n    requires_state: true\n    on_fail:\n      decision: block\n      reason: "too many tasks"\n\nchecks:\n',
);

/** `text`: another blueprint, selected for the agent (it lists the blueprint's tool, as examples/refund-run/blueprints/agents.yaml does). */
function engine(withAcm: boolean, text?: string): { engine: StewardEngine; store: MemoryAcmRunStateStore } {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 'refund.yaml', text: text ?? readFileSync(`${DIR}/blueprints/refund_run@1.0.yaml`, 'utf8') }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const set = res.set;
  const dsl = dslOptionsFromConfig(config);
  const store = new MemoryAcmRunStateStore();
  const sheets = compileVerificationSheets([{ file: 'refund.verify.yaml', text: readFileSync(`${DIR}/blueprints/refund.verify.yaml`, 'utf8') }], dsl).sheets;
  const options = parseYaml(readFileSync(`${DIR}/blueprints/acm.yaml`, 'utf8')) as AcmOptions;
  return {
    store,
    engine: new StewardEngine({
      blueprints: () => set,
      registry: createAgentRegistry([
        { id: 'refund-agent-1', tenant: 'acme', tier: 'ACL-2', tools: text ? ['create_refund_txn'] : [], domains: [], registered: true },
        { id: 'alice@example.com', tenant: 'acme', tier: 'ACL-1', tools: [], domains: [], registered: true },
      ]),
      config,
      state: new MemoryStateStore(),
      trustDebt: new MemoryTrustDebtStore(),
      signer: Ed25519Signer.ephemeral(),
      engineVersion: '9.9.9',
      ...(withAcm ? { acm: { store, env: { dsl, sheets, options } } } : {}),
    }),
  };
}

describe('StewardEngine acm option', () => {
  it('answers a forbidden branch block (halted, reasons, BRANCH_TAKEN allowed false) and hands the ledger drafts to the stage', async () => {
    const { engine: e } = engine(true);
    const recs: DecisionRecord[] = [];
    for (const t of traces.slice(0, 19)) recs.push(await e.decide(t, nowOf(t)));
    const forbidden = recs.find((r) => r.acm?.drafts.some((d) => d.type === 'BRANCH_TAKEN' && d.payload.allowed === false));
    expect(forbidden).toMatchObject({ intervention: 'block', halted: true, acm: { violations: ['STEWARD_ACM_FORBIDDEN_BRANCH'] } });
    expect(forbidden!.reasons.some((r) => r.startsWith('acm:STEWARD_ACM_FORBIDDEN_BRANCH'))).toBe(true);
    for (const r of recs.filter((x) => x.acm?.run_id)) {
      // the POLICY_DECISION with the run first (the entry id the sink's derived one has), then the event's entries
      expect(r.acm!.drafts[0]).toMatchObject({ type: 'POLICY_DECISION', entry_id: `pd:${r.traceId}`, payload: { run_id: r.acm!.run_id, intervention: r.intervention } });
    }
    expect(recs[1]!.acm!.drafts.map((d) => d.type)).toEqual(['POLICY_DECISION', 'PLAN_SELECTED']);
  });

  it('a malformed plan throws its problems (not retryable) and changes nothing; a redelivered event gets its first drafts', async () => {
    const { engine: e, store } = engine(true);
    await e.decide(traces[0]!, nowOf(traces[0]!));
    const bad = { ...traces[1]!, trace_id: 'bad', run: { runId: 'run-bad' }, plans: [{ id: 'p', contextRef: 'ctx-2025-10-03-001', tasks: [{ id: 't1' }], edges: [{ from: 't1', to: 'gone' }] }], selection: { method: 'llm', chosenPlanId: 'p' } } as Trace;
    const err = await e.decide(bad, nowOf(traces[1]!)).catch((x: unknown) => x);
    expect(isStewardError(err) && !err.retryable && err.code).toBe('STEWARD_ACM_EDGE_TASK');
    expect((err as Error).message).toContain('$.plans[0].edges[0]');
    expect(await store.getRun('acme', 'run-bad')).toBeUndefined();
    const first = await e.decide(traces[1]!, nowOf(traces[1]!));
    const again = await e.decide(traces[1]!, nowOf(traces[1]!));
    expect(again.acm!.drafts).toEqual(first.acm!.drafts);
    expect((await store.getRun('acme', first.acm!.run_id!))!.run!.selections).toBe(1);
  });

  it('an event of a run carries its replay record and the state reads of its own decision only (docs/acm.md "In the stream")', async () => {
    const { engine: e } = engine(true, WITH_RATE);
    const recs: DecisionRecord[] = [];
    for (const t of traces.slice(0, 5)) recs.push(await e.decide(t, nowOf(t), `${t.trace_id}#e`));
    // refund-03 and refund-05 are task.pre: one rate-window read each, counting that run's task.pre events so far.
    expect(recs.map((r) => r.acm?.record?.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(recs.map((r) => (r.acm?.reads ?? []).map((x) => (x.op === 'hit' ? x.count : -1)))).toEqual([[], [], [1], [], [2]]);
    expect(recs[2]!.acm!.reads![0]).toMatchObject({ op: 'hit', ns: 'acme:refund-agent-1', hit_id: 'refund-03#e:refund-agent-1' });
    expect(recs[1]!.acm!.record!.acm).toMatchObject({ intervention: 'ok', violations: [] });
  });

  it('without the option ACM events are decided by their blueprint only', async () => {
    const { engine: e } = engine(false);
    const r = await e.decide(traces[10]!, nowOf(traces[10]!));
    expect(r.acm).toBeUndefined();
  });
});
