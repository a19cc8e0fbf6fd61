import { describe, expect, it } from 'vitest';
import { parseSource } from '../../../../src/engine/blueprint/source.js';
import { emptyContextState, formatAcmProblem, recordContextPacket, validatePlanEvent } from '../../../../src/engine/acm/index.js';
import { compileCondition } from '../../../../src/engine/dsl/index.js';
import { DSL } from './helpers.js';

const PLAN = `goal: { id: G-1 }
selection: { method: human, chosenPlanId: plan-A }
plans:
  - id: plan-A
    contextRef: ctx-1
    tasks: [{ id: t1 }, { id: t2 }, { id: t3 }]
    edges:
      - { from: t1, to: t2, guard: "$t1.ok == true" }
      - { from: t2, to: t3, guard: "$t2.x > 1 && agent.tier == 'ACL-1'" }
      - { from: t3, to: t9 }
`;

describe('plans from a file', () => {
  it('problems carry FILE:LINE:COL, inside the guard for guard problems', () => {
    const { doc } = parseSource('plans/refund.plan.yaml', PLAN);
    const contexts = recordContextPacket(emptyContextState(), { id: 'ctx-1', sources: ['kb-snap://x'], facts: {} }).state;
    const v = validatePlanEvent(doc!.value, { dsl: DSL, contexts, positions: doc! });
    expect(v.problems.map(formatAcmProblem).sort()).toEqual([
      "plans/refund.plan.yaml:10:25: STEWARD_ACM_EDGE_TASK: edge to 't9' is not a task of plan plan-A ($.plans[0].edges[2].to)",
      expect.stringMatching(/^plans\/refund\.plan\.yaml:9:50: STEWARD_ACM_GUARD_UNRECORDED: 'agent\.tier' is not a recorded fact/),
    ]);
  });
});

describe('the DSL outside guards', () => {
  it('a task reference in a blueprint condition is a parse problem at its offset', () => {
    const r = compileCondition("args.x == 1 AND $t3.risk == 'HIGH'", DSL);
    expect(r.condition).toBeUndefined();
    expect(r.problems).toEqual([expect.objectContaining({ code: 'STEWARD_DSL_PARSE', offset: 16 })]);
  });
  it("single quotes and ! work in blueprint conditions as before", () => {
    expect(compileCondition("!(tool == 'shell')", DSL).problems).toEqual([]);
  });
});
