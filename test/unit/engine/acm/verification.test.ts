import { describe, expect, it } from 'vitest';
import { compileVerificationSheets, formatAcmProblem, runVerification } from '../../../../src/engine/acm/index.js';
import { DSL } from './helpers.js';

const SHEET = `capability: compute_refund
checks:
  - id: amount_positive
    condition: "output.amount > 0"
  - id: within_order_total
    condition: "output.amount <= input.order_total"
  - id: eur_in_eu
    condition:
      any:
        - "context.facts.region != 'EU'"
        - "output.currency == 'EUR'"
`;

describe('verification sheets', () => {
  it('compile once and evaluate over input, output and context facts', () => {
    const { sheets, problems } = compileVerificationSheets([{ file: 'v/refund.verify.yaml', text: SHEET }], DSL);
    expect(problems).toEqual([]);
    const s = sheets.get('compute_refund')!;
    const ok = runVerification(s, { task: {}, input: { order_total: 100 }, output: { amount: 80, currency: 'EUR' }, error: undefined, contextFacts: { region: 'EU' } });
    expect(ok.failed).toEqual([]);
    const bad = runVerification(s, { task: {}, input: { order_total: 100 }, output: { amount: 180, currency: 'USD' }, error: undefined, contextFacts: { region: 'EU' } });
    expect(bad.failed).toEqual(['within_order_total', 'eur_in_eu']);
  });

  it("records the agent's claims next to Steward's results and reports disagreements", () => {
    const { sheets } = compileVerificationSheets([{ file: 'v.yaml', text: SHEET }], DSL);
    const out = runVerification(sheets.get('compute_refund')!, { task: {}, input: { order_total: 100 }, output: { amount: 180, currency: 'EUR' }, error: undefined, contextFacts: {} }, [
      { id: 'within_order_total', passed: true, detail: 'looks fine' },
      { id: 'amount_positive', passed: true },
      { id: 'own_check', passed: false },
    ]);
    expect(out.claims).toHaveLength(3);
    expect(out.disagreements).toEqual([{ id: 'within_order_total', steward: false, agent: true }]);
  });

  it('problems carry FILE:LINE:COL, with the offset inside the condition', () => {
    const text = `capability: c\nchecks:\n  - id: a\n    condition: "output.amount >> 1"\n  - id: b\n    condition: "storage.get('x', 0) > 1"\n`;
    const { problems } = compileVerificationSheets([{ file: 'x.verify.yaml', text }], DSL);
    const lines = problems.map(formatAcmProblem);
    expect(lines[0]).toMatch(/^x\.verify\.yaml:4:32: STEWARD_DSL_PARSE: /);
    expect(lines[1]).toMatch(/^x\.verify\.yaml:6:16: STEWARD_ACM_SHEET: .*live state/);
  });

  it('schema problems and duplicate capabilities are positioned', () => {
    const { problems } = compileVerificationSheets(
      [
        { file: 'a.yaml', text: 'capability: c\nchecks:\n  - id: x\n    condition: "true"\n' },
        { file: 'b.yaml', text: 'capability: c\nchecks:\n  - id: x\n    condition: "true"\n' },
        { file: 'c.yaml', text: 'capability: d\nchecks:\n  - id: x\n' },
      ],
      DSL,
    );
    expect(problems.map(formatAcmProblem)).toEqual([
      expect.stringMatching(/^b\.yaml:1:13: STEWARD_ACM_DUPLICATE_ID: a second verification sheet/),
      expect.stringMatching(/^c\.yaml:3:5: STEWARD_ACM_SHEET: missing required field 'condition'/),
    ]);
  });
});
