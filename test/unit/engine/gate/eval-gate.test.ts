/**
 * `steward eval` with the finalization gate (contracts C5): runEval — the CLI's code — with the judge reached
 * over HTTP on the local OpenAI-protocol server (test/support/llm-server.ts) through STEWARD_LLM_* variables.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEval } from '../../../../src/cli/commands/eval.js';
import { verdictsOf } from '../../../../src/cli/commands/verify.js';
import { startLlmServer, type LlmStandIn, type RecordedRequest } from '../../../support/llm-server.js';

const DIR = join(import.meta.dirname, '../../../golden/gate/eval');
let server: LlmStandIn;

const judge = (o: Record<string, unknown>) => ({ kind: 'content' as const, content: JSON.stringify({ reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [], verdict: 'PASS', ...o }) });

beforeAll(async () => {
  server = await startLlmServer();
  // The judge answers by the draft it is shown: the test writes the wanted answer into the draft.
  server.setDefault((req: RecordedRequest) => {
    const prompt = JSON.stringify(req.body.messages ?? req.body);
    if (prompt.includes('DRAFT_V1')) return judge({ quality_score: 0.72, verdict: 'PASS_WITH_CAVEATS', reason_codes: ['MISSING_REQUIRED_ELEMENTS', 'MISSING_TEST_PLAN', 'NOT_A_CODE'], missing_requirements: ['risks'] });
    if (prompt.includes('DRAFT_V2')) return judge({ quality_score: 0.9 });
    if (prompt.includes('DRAFT_V3')) return judge({ quality_score: 0.72, verdict: 'PASS_WITH_CAVEATS' });
    if (prompt.includes('DRAFT_BAD')) return { kind: 'content', content: 'looks good to me' };
    return judge({ quality_score: 0.95 });
  });
});
afterAll(() => server.close());

async function evalLines(traces: Record<string, unknown>[], dir = DIR) {
  const base = Date.parse('2026-02-01T10:00:00Z');
  const lines = traces.map((t, i) => JSON.stringify({ agent_id: 'coder-1', timestamp: new Date(base + i * 60_000).toISOString(), ...t }));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runEval(
    { blueprints: dir, input: '-' },
    { input: Readable.from(lines.map((l) => l + '\n')), out: (l) => void out.push(l), err: (l) => void err.push(l), stderrIsTty: false, env: { STEWARD_LLM_BASE_URL: server.url, STEWARD_LLM_MODEL: 'judge-1' } },
  );
  return { code, out: out.map((l) => JSON.parse(l) as Record<string, unknown>), err };
}

describe('steward eval: the gate object on final_answer lines', () => {
  it('a job: tool calls as evidence, rewrite → PASS; unknown codes dropped; line errors for bad final answers', async () => {
    const before = server.requests.length;
    const { code, out, err } = await evalLines([
      { trace_id: 'tc-1', hook: 'tool_call', tool: 'read_file', args: { path: 'src/app.ts' }, job_id: 'job-1' },
      { trace_id: 'fa-1', hook: 'final_answer', job_id: 'job-1', goal: 'Review the PR. Say if it can merge.', intent_id: 'PR_REVIEW', draft_answer: 'DRAFT_V1 looks fine', skill_id: 'code-review' },
      { trace_id: 'tc-2', hook: 'tool_call', tool: 'read_file', args: { path: 'src/app.ts' }, job_id: 'job-1' },
      { trace_id: 'fa-2', hook: 'final_answer', job_id: 'job-1', goal: 'Review the PR.', intent_id: 'PR_REVIEW', draft_answer: 'DRAFT_V2 summary, risks, verdict', skill_id: 'code-review' },
      { trace_id: 'fa-3', hook: 'final_answer', job_id: 'job-2', draft_answer: '-----BEGIN EC PRIVATE KEY----- abc' },
      { trace_id: 'fa-4', hook: 'final_answer', draft_answer: 'no job' },
      { trace_id: 'fa-5', hook: 'final_answer', job_id: 'job-3', draft_answer: 'DRAFT_BAD' },
      { trace_id: 'fa-6', hook: 'final_answer', job_id: 'job-4', draft_answer: 'DRAFT_V3' },
      { trace_id: 'tc-3', hook: 'tool_call', tool: 'read_file', args: { path: 'a.ts' }, job_id: 'job-4' },
    ]);
    expect(code, err.join('\n')).toBe(1); // fa-4 is a line error
    expect(out).toHaveLength(9);
    expect(out[0]).not.toHaveProperty('gate');
    const g1 = out[1].gate as Record<string, unknown>;
    // strictness high for the registry-listed skill: .72 is below .85, and MISSING_REQUIRED_ELEMENTS is hard-fail there
    expect(g1).toMatchObject({ verdict: 'FAIL', quality_score: 0.72, reason_codes: ['MISSING_REQUIRED_ELEMENTS', 'MISSING_TEST_PLAN'], fix_mode: 'REWRITE_ONLY', attempt_index: 0, action: 'replan', judged_by: 'llm', missing_requirements: ['risks'], intervention: 'block', degraded: false });
    expect(Object.keys(g1).slice(0, 9)).toEqual(['verdict', 'quality_score', 'reason_codes', 'fix_mode', 'attempt_index', 'action', 'judged_by', 'missing_requirements', 'directive']);
    expect(g1.directive).toMatch(/^You must repair the final answer/);
    expect(g1.directive).toContain('Keep the answer under one screen.');
    expect(out[3].gate).toMatchObject({ verdict: 'PASS', action: 'finalize', attempt_index: 1, directive: null });
    expect(out[4].gate).toMatchObject({ verdict: 'FAIL', action: 'block', judged_by: 'patterns', reason_codes: ['SAFETY_OR_POLICY_VIOLATION'] });
    expect(out[5]).toEqual({ line: 6, error: { code: 'STEWARD_GATE_INPUT', message: expect.stringMatching(/job_id/) } });
    expect(out[6].gate).toMatchObject({ verdict: null, action: 'block', intervention: 'escalate', degraded: true });
    expect(err.join('\n')).toMatch(/unknown reason code\(s\) NOT_A_CODE/);
    // a rewrite directive puts the job in rewrite-only state: its next tool call is blocked, as in the tripwire stage
    expect(out[7].gate).toMatchObject({ action: 'rewrite', verdict: 'PASS_WITH_CAVEATS' });
    expect(out[8]).toMatchObject({ intervention: 'block', approved: false, rules: expect.arrayContaining([expect.objectContaining({ id: 'gate:rewrite_only:rewrite_only', passed: false })]) });
    expect(out[8]).not.toHaveProperty('gate');
    // judge calls: fa-1, fa-2, fa-5 twice (one retry); the pattern hit made none
    const calls = server.requests.slice(before);
    expect(calls).toHaveLength(5);
    expect(calls[0].body.model).toBe('judge-1');
    const prompt = JSON.stringify(calls[0].body.messages);
    expect(prompt).toContain('- PR_REVIEW: summary of the change, risks, verdict');
    expect(prompt).toContain('Tools used: read_file');
  });

  it('the engine keeps a workflow step done after 70 later tool calls (decide() records it with the blueprint)', async () => {
    const fill = Array.from({ length: 70 }, (_, i) => ({ trace_id: `r-${i}`, hook: 'tool_call', tool: 'read_file', args: { path: `f${i}.ts` }, job_id: 'job-w' }));
    const { out } = await evalLines([
      { trace_id: 'd-0', hook: 'tool_call', tool: 'deploy', args: {}, job_id: 'job-v' }, // before run_tests: out of order
      { trace_id: 't-1', hook: 'tool_call', tool: 'run_tests', args: {}, job_id: 'job-w' },
      ...fill,
      { trace_id: 'd-1', hook: 'tool_call', tool: 'deploy', args: {}, job_id: 'job-w' },
    ]);
    expect(out[0]).toMatchObject({ intervention: 'block', rules: expect.arrayContaining([expect.objectContaining({ id: 'gate:workflow:tests_before_deploy', passed: false })]) });
    const last = out.at(-1)!;
    expect(last).toMatchObject({ intervention: 'ok' });
    expect(JSON.stringify(last.rules)).not.toContain('gate:workflow');
  });

  it('without an LLM: rules only (tiers 1–2)', async () => {
    const { code, out } = await (async () => {
      const lines = [{ trace_id: 'x-1', agent_id: 'coder-1', timestamp: '2026-02-01T10:00:00Z', hook: 'final_answer', job_id: 'j', draft_answer: 'ok' }];
      const o: string[] = [];
      const c = await runEval({ blueprints: DIR, input: '-' }, { input: Readable.from(lines.map((l) => JSON.stringify(l) + '\n')), out: (l) => void o.push(l), err: () => undefined, stderrIsTty: false, env: {}, llm: null });
      return { code: c, out: o.map((l) => JSON.parse(l) as Record<string, unknown>) };
    })();
    expect(code).toBe(0);
    expect(out[0].gate).toMatchObject({ verdict: 'PASS', quality_score: null, action: 'finalize', judged_by: 'rules', intervention: 'ok' });
  });

  // spec-decisions D50 (issue #20 audit round 4): gate hooks take the stream's path, never the tripwire stage's.
  it('a final answer moves trust debt by the gate\'s answer (tier-1 hit: block at critical severity), and the summary counts the gate\'s intervention', async () => {
    const { code, out, err } = await evalLines([
      { trace_id: 'fa-1', hook: 'final_answer', job_id: 'j1', draft_answer: 'Customer SSN is 536-22-1234.' },
      { trace_id: 'fa-2', hook: 'final_answer', job_id: 'j2', draft_answer: 'token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789', timestamp: '2026-02-01T10:01:00.000Z' },
      { trace_id: 'fa-2', hook: 'final_answer', job_id: 'j2', draft_answer: 'token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789', timestamp: '2026-02-01T10:01:00.000Z' },
      { trace_id: 'tc-4', hook: 'tool_call', tool: 'read_file', job_id: 'j4', args: { path: 'a.ts' } },
    ]);
    expect(code, err.join('\n')).toBe(0);
    expect(out[0]).toMatchObject({ intervention: 'block', approved: false, stage: 'gate', tripwires: [], rules: [], verdict: null, trust_debt: { before: 0, after: 0.3 }, gate: { judged_by: 'patterns', intervention: 'block' } });
    expect(Object.keys(out[0]!)).toEqual(['trace_id', 'agent_id', 'blueprint', 'intervention', 'approved', 'stage', 'tripwires', 'rules', 'ctq', 'risk', 'metrics', 'verdict', 'trust_debt', 'gate']);
    expect((out[1]!.trust_debt as { after: number }).after).toBeCloseTo(0.6, 4);
    // the same line again is a redelivery: the stored answer, its debt applied once (same event id as the stream)
    expect(out[2]).toMatchObject({ intervention: 'block', trust_debt: { after: (out[1]!.trust_debt as { after: number }).after } });
    expect(out[3]).toMatchObject({ intervention: 'ok', trust_debt: { level: 'restricted_mode' } });
    expect((out[3]!.trust_debt as { before: number }).before).toBeGreaterThan(0.59);
    expect(err.join('\n')).toMatch(/4 trace\(s\) evaluated \(ok 1, block 3\).*1 repeated trace_id/);
  });

  it('a check with when: {hook: final_answer} never runs (the stream never decides the hook in the tripwire stage); a final answer without job_id touches nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eval-gate-'));
    try {
      cpSync(join(DIR, 'agents.yaml'), join(dir, 'agents.yaml'));
      writeFileSync(
        join(dir, 'g@1.0.yaml'),
        ['id: probe/g@1.0', 'version: "1.0.0"', 'description: probe', 'checks:', '  - id: no_secret_word', '    when: { hook: final_answer }', '    rule:', '      condition: NOT (content contains "zebra")', '      on_fail: { decision: block, reason: secret word }', 'finalization_gate:', '  enabled: true', ''].join('\n'),
      );
      const { code, out } = await evalLines(
        [
          { trace_id: 'fa-1', hook: 'final_answer', content: 'zebra zebra' },
          { trace_id: 'fa-2', hook: 'final_answer', job_id: 'j2', draft_answer: 'zebra is fine' },
          { trace_id: 'tc-3', hook: 'tool_call', tool: 'read_file', job_id: 'j3', args: { path: 'a.ts' } },
        ],
        dir,
      );
      expect(code).toBe(1);
      expect(out[0]).toEqual({ line: 1, error: { code: 'STEWARD_GATE_INPUT', message: expect.stringMatching(/job_id/) } });
      expect(out[1]).toMatchObject({ intervention: 'ok', rules: [], trust_debt: { before: 0, after: 0 } });
      expect(out[2]).toMatchObject({ intervention: 'ok', trust_debt: { before: 0, after: 0 } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('malformed gate hooks are line errors with no state touched; a well-formed user_feedback re-states the ended job', async () => {
    const { code, out, err } = await evalLines([
      { trace_id: 'fb-1', hook: 'user_feedback', feedback: 'sideways' },
      { trace_id: 'fa-2', hook: 'final_answer', job_id: 'j2', draft_answer: 'SSN 536-22-1234', constraints: 'not a list' },
      { trace_id: 'tc-3', hook: 'tool_call', tool: 'read_file', job_id: 'j3', args: { path: 'a.ts' } },
      { trace_id: 'fa-4', hook: 'final_answer', job_id: 'j4', draft_answer: 'card 4111 1111 1111 1111' },
      { trace_id: 'fb-5', hook: 'user_feedback', job_id: 'j4', feedback: 'down' },
      { trace_id: 'fb-6', hook: 'user_feedback', job_id: 'nope', feedback: 'up' },
    ]);
    expect(code).toBe(1);
    expect(out[0]).toEqual({ line: 1, error: { code: 'STEWARD_GATE_INPUT', message: expect.stringMatching(/feedback/) } });
    expect(out[1]).toEqual({ line: 2, error: { code: 'STEWARD_GATE_INPUT', message: expect.stringMatching(/constraints/) } });
    expect(out[2]).toMatchObject({ intervention: 'ok', trust_debt: { before: 0, after: 0 } });
    expect(out[3]).toMatchObject({ intervention: 'block', trust_debt: { before: 0, after: 0.3 } });
    expect(out[4]).toEqual({ trace_id: 'fb-5', agent_id: 'coder-1', job_id: 'j4', user_feedback: 'down', outcome: { final_verdict: 'fail', action: 'block', num_retries: 0, intervention: 'block' } });
    expect(out[5]).toMatchObject({ trace_id: 'fb-6', outcome: null });
    expect(err.join('\n')).toMatch(/4 trace\(s\) evaluated \(ok 1, block 1\), 2 malformed line\(s\).*, 2 of them user_feedback/);
    // steward verify over this output: the tool call's signed verdict only (gate hooks have none in the stream)
    const skipped: string[] = [];
    expect(verdictsOf(out.map((o) => JSON.stringify(o)).join('\n'), skipped).map((v) => v.where)).toEqual(['line 3']);
    expect(skipped).toEqual(['SKIP line 4 fa-4 (gate hook: no verdict)', 'SKIP line 5 fb-5 (gate hook: no verdict)', 'SKIP line 6 fb-6 (gate hook: no verdict)']);
    // Only that shape is skipped (review of D50): a verdict object with feedback keys added, or a verdict removed
    // from a line that is not a gate line, is still checked — and fails.
    const verdictLine = out[2] as Record<string, unknown>;
    const forged = [{ ...verdictLine, user_feedback: 'up', outcome: null }, { ...verdictLine, verdict: null }];
    expect(verdictsOf(forged.map((o) => JSON.stringify(o)).join('\n')).map((v) => v.where)).toEqual(['line 1', 'line 2']);
  });
});
