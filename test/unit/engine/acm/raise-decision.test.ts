// One semantics for a decision the run checks make stricter (raiseDecision): folded in before scoring, a refusal
// halts it. The stream's engine, `eval --bundles` and the replay verifier all score the raised decision, so the
// records a stream stores and the ones eval writes agree (a run check's block is never scored further).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval } from '../../../../src/cli/commands/eval.js';
import { raiseDecision, verifyReplayBundle, type PolicyResponseRecord } from '../../../../src/engine/acm/index.js';
import { readBundleDir } from '../../../../src/cli/commands/replay.js';

const tmp = mkdtempSync(join(tmpdir(), 'acm-raise-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('raiseDecision', () => {
  const d = { intervention: 'ok' as const, halted: false, stage: 'rule', reasons: ['r'] };
  const v = [{ code: 'forbidden_branch', message: 'no' }];
  it('a refusal halts the decision at the tripwire stage with the violation as a reason', () => {
    expect(raiseDecision(d, 'block', v)).toEqual({ intervention: 'block', halted: true, stage: 'tripwire', reasons: ['r', 'acm:forbidden_branch: no'] });
  });
  it('a flag raises without halting; an answer no stricter leaves the decision as it was', () => {
    expect(raiseDecision(d, 'flag', v)).toMatchObject({ intervention: 'flag', halted: false, stage: 'tripwire' });
    const blocked = { ...d, intervention: 'block' as const, halted: true };
    expect(raiseDecision(blocked, 'block', v)).toBe(blocked);
    expect(raiseDecision(d, 'ok', v)).toBe(d);
  });
});

describe('eval --bundles scores the raised decision', () => {
  it("the forbidden branch's response is the halted block (not the blueprint's own ok), and the bundle verifies", async () => {
    const input = readFileSync('examples/refund-run/trace.jsonl', 'utf8');
    await runEval({ blueprints: 'examples/refund-run/blueprints', input: '-', bundles: tmp }, { input: Readable.from([input]), out: () => undefined, err: () => undefined, stderrIsTty: false, llm: null });
    const files = await readBundleDir(join(tmp, 'run-2025-10-03-REFUND-001'));
    const responses = files.get('policy/responses/responses.jsonl')!.split('\n').filter(Boolean).map((l) => JSON.parse(l) as PolicyResponseRecord);
    const forbidden = responses.find((r) => r.acm?.violations.some((x) => x.code === 'STEWARD_ACM_FORBIDDEN_BRANCH'));
    expect(forbidden).toBeDefined();
    expect(forbidden!.blueprint).toMatchObject({ intervention: 'block', stage: 'tripwire', ctq: null });
    expect(forbidden!.intervention).toBe('block');
    expect(await verifyReplayBundle(files)).toEqual([]);
  });
});
