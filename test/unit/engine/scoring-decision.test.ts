// #22 item 10 (spec-decisions D33): the scorer does not trust what selects the scoring in the record it is
// handed. A forged acgp.scoring record naming a lighter blueprint, no restricted mode and no debt is scored
// with the agent's own blueprint and its trust debt as the scorer reads it.
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet, createAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { createDefaultScorerRegistry, type Scorer } from '../../../src/engine/scorers/index.js';
import { MemoryStateStore } from '../../../src/engine/state/memory-state-store.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore, type TrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import type { Trace } from '../../../src/engine/types.js';
import { Ed25519Signer } from '../../../src/engine/verdict/index.js';
import { ScorerProcessor } from '../../../src/consumers/scorer.js';
import { scoringJson } from '../../../src/consumers/scoring-message.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';

const STRICT = `
id: t/strict@1.0
version: "1.0.0"
description: the agent's own, scoped blueprint
scope: { agent_tier: [ACL-2] }
checks:
  - id: counted
    when: { hook: tool_call }
    metric: { name: counted, weight: 1, check: { type: counting } }
scoring: { thresholds: { ok: 0.1, nudge: 0.2, escalate: 0.3, block: 0.4 } }
`;
const LIGHT = `
id: t/light@1.0
version: "1.0.0"
description: a global blueprint without metrics
`;

const counting: Scorer = { scorerType: 'counting', evalTier: 0, latencyBudgetMs: 1, evaluate: async () => ({ score: 0.5, confidence: 1, explanation: 'counted', evidence: {}, latencyMs: 0 }) };
const NOW = Date.parse('2025-01-01T00:00:00Z');
const trace: Trace = { trace_id: 'f-1', agent_id: 'a', timestamp: '2025-01-01T00:00:00Z', hook: 'tool_call', tool: 'x', args: {} };
const topics = topicNames('acgp');

function engine(trustDebt: TrustDebtStore = new MemoryTrustDebtStore()): StewardEngine {
  const config = defaultEngineConfig();
  const res = compileBlueprintSet([{ file: 'strict.yaml', text: STRICT }, { file: 'light.yaml', text: LIGHT }], { config });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const set = res.set;
  return new StewardEngine({
    blueprints: () => set,
    registry: createAgentRegistry([{ id: 'a', tenant: 'ten', tier: 'ACL-2', tools: [], domains: [], registered: true }]),
    config,
    state: new MemoryStateStore(),
    trustDebt,
    signer: Ed25519Signer.ephemeral(),
    engineVersion: '9.9.9',
    scorers: createDefaultScorerRegistry().register(counting),
  });
}

/** The scorer stage on `e`, fed one acgp.scoring record carrying `record` as its decision record. */
async function scoreThroughStage(e: StewardEngine, record: unknown) {
  const proc = new ScorerProcessor({ engine: e, topics, metrics: new StewardMetrics() });
  const value = Buffer.from(scoringJson(JSON.stringify(trace), NOW, record, undefined));
  const outs = await proc.process({ topic: topics.scoring, partition: 0, offset: '1', key: Buffer.from('a'), value, headers: {}, timestampMs: NOW });
  return JSON.parse(String(outs[0]!.message.value)) as { blueprint: string; intervention: string; stage: string };
}

describe('the scorer re-derives what selects the scoring (forged acgp.scoring records)', () => {
  it('a record naming a lighter blueprint is scored with the agent\'s own', async () => {
    const e = engine();
    const decided = await e.decide(trace, NOW);
    expect(decided.blueprint).toBe('t/strict@1.0');
    const honest = await scoreThroughStage(e, JSON.parse(JSON.stringify(decided)));
    expect(honest).toMatchObject({ blueprint: 't/strict@1.0', intervention: 'block', stage: 'ctq' });
    // Forged: the global blueprint without metrics would answer ok.
    const forged = await scoreThroughStage(e, { ...JSON.parse(JSON.stringify(decided)), blueprint: 't/light@1.0', blueprintVersion: '1.0.0' });
    expect(forged).toEqual(expect.objectContaining({ blueprint: 't/strict@1.0', intervention: 'block', stage: 'ctq' }));
  });

  it('a record claiming no debt does not lift restricted mode or full scoring; a stricter claim is kept', async () => {
    // The agent's debt as the scorer's store reads it: restricted mode.
    const store = new MemoryTrustDebtStore();
    const restricted: TrustDebtStore = Object.assign(Object.create(store) as TrustDebtStore, { current: async () => ({ debt: 0.8, level: 'restricted_mode' as const }) });
    const e = engine(restricted);
    const decided = JSON.parse(JSON.stringify(await e.decide(trace, NOW)));
    expect(decided.restricted).toBe(true);
    const forged = { ...decided, restricted: false, fullScoring: false, trustDebt: { debt: 0, level: 'normal' } };
    const s = await e.score(trace, forged, NOW);
    expect(s.trustDebt).toEqual({ debt: 0.8, level: 'restricted_mode' });
    expect(s.fullScoring).toBe(true);
    // The other way round (the record stricter than the store, e.g. debt charged since): the record's stands.
    const calm = engine();
    const d2 = JSON.parse(JSON.stringify(await calm.decide(trace, NOW)));
    const s2 = await calm.score(trace, { ...d2, restricted: true, fullScoring: true, trustDebt: { debt: 0.8, level: 'restricted_mode' } }, NOW);
    expect(s2.trustDebt.level).toBe('restricted_mode');
    expect(s2.fullScoring).toBe(true);
  });
});
