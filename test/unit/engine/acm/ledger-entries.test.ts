import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { acmPolicyDecisionDraft, branchTakenDraft, compensationAppliedDraft, goalAmendedDraft, planSelectedDraft, replanTriggeredDraft } from '../../../../src/engine/ledger/acm-entries.js';
import { LedgerChain } from '../../../../src/engine/ledger/chain.js';
import { ed25519Signer } from '../../../../src/engine/ledger/crypto.js';
import { verifyLedger } from '../../../../src/engine/ledger/verify.js';

const base = (trace_id: string, ts_ms: number) => ({ trace_id, agent_id: 'a-1', tenant: 'acme', run_id: 'run-1', ts_ms });

describe('ACM §11 ledger entries', () => {
  it('all six types chain, sign and verify, time-ordered', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const signer = ed25519Signer(privateKey);
    const chain = new LedgerChain(signer);
    const drafts = [
      planSelectedDraft({ ...base('e1', 1000), goal_id: 'G', plan_id: 'plan-A', plan_digest: 'sha256:x', alternatives: [{ id: 'plan-A', rationale: 'cost' }, { id: 'plan-B' }], method: 'policy', rationale: 'cheaper', context: { id: 'ctx', version: 1, digest: 'sha256:y' } }),
      acmPolicyDecisionDraft({ ...base('e2', 2000), hook: 'task.pre', blueprint: 'bp@1', intervention: 'ok', approved: true, task_id: 't1', request_digest: 'r', response_digest: 's', policy_digest: 'p', acm: { intervention: 'ok', codes: [] } }),
      branchTakenDraft({ ...base('e3', 3000), plan_id: 'plan-A', from: 't3', to: 't4', allowed: false, kind: 'guard', guard: "$t3.risk == 'HIGH'", facts: { $t3: { risk: 'LOW' } }, intervention: 'block' }),
      replanTriggeredDraft({ ...base('e4', 2500), cause: 'latency', scope: 'rest', diff: '-t2', from_plan: 'plan-A', to_plan: 'plan-B' }),
      compensationAppliedDraft({ ...base('e5', 5000), task_id: 't5', reason: 'fatal' }),
      goalAmendedDraft({ ...base('e6', 6000), goal_id: 'G', by: 'lead', delta: { deadline: 'x' } }),
    ];
    const entries = drafts.map((d) => chain.append(d));
    expect(entries.map((e) => e.type)).toEqual(['PLAN_SELECTED', 'POLICY_DECISION', 'BRANCH_TAKEN', 'REPLAN_TRIGGERED', 'COMPENSATION_APPLIED', 'GOAL_AMENDED']);
    expect(entries.map((e) => e.entry_id)).toEqual(['ps:e1', 'pd:e2', 'bt:e3', 'rt:e4', 'ca:e5', 'ga:e6']);
    // An event older than the head keeps the chain time-ordered (its own time stays in the payload).
    expect(entries[3]!.ts_ms).toBe(3000);
    expect(entries[3]!.payload.event_ts_ms).toBe(2500);
    expect(entries.every((e) => e.payload.run_id === 'run-1')).toBe(true);
    expect(verifyLedger(entries, { [signer.kid]: publicKey })).toMatchObject({ ok: true, entries: 6 });
    expect(verifyLedger(entries, { [signer.kid]: publicKey }, { signatures: 'last' })).toMatchObject({ ok: true });
  });

  it('POLICY_DECISION keeps the fields of the stream decisions and adds the run', () => {
    const d = acmPolicyDecisionDraft({ ...base('t-9', 42), hook: 'branch', blueprint: 'bp@1', intervention: 'block', approved: false, stage: 'rule', tripwires: [{ id: 'x', fired: true }], rules: [{ id: 'r', passed: false }] });
    expect(d.payload).toMatchObject({ trace_id: 't-9', decision: 'deny', intervention: 'block', stage: 'rule', tripwires_fired: ['x'], rules_failed: ['r'], run_id: 'run-1', hook: 'branch' });
  });

  it("verification with signatures: 'last' still finds an edited entry", () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const signer = ed25519Signer(privateKey);
    const chain = new LedgerChain(signer);
    const entries = [1, 2, 3].map((i) => chain.append(goalAmendedDraft({ ...base(`g${i}`, i), by: 'x', delta: i })));
    entries[1] = { ...entries[1]!, payload: { ...entries[1]!.payload, delta: 99 } };
    const r = verifyLedger(entries, { [signer.kid]: publicKey }, { signatures: 'last' });
    expect(r.issues.map((i) => [i.seq, i.kind])).toEqual([[2, 'edited']]);
  });
});
