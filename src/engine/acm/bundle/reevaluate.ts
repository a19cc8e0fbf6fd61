/**
 * Re-evaluation of recorded policy requests (ACM §16.6 third-party reproduction): the blueprint files
 * of the bundle compiled again, and each decision taken again by the same engine with the state the
 * request recorded: storage.get values and rate-window counts (RecordedStateStore), the trust debt
 * the decision read, and the scorers' answers. Nothing live is consulted; verdicts are not signed.
 */
import type { StewardError } from '../../../errors.js';
import { compileBlueprintSet, createAgentRegistry, parseAgentRegistry, type AgentRegistry } from '../../blueprint/index.js';
import type { EngineConfig } from '../../config.js';
import { ScorerRegistry, skipped, unavailable, type Scorer } from '../../scorers/types.js';
import { StewardEngine, type DecisionRecord, type ScoreRecord } from '../../steward-engine.js';
import type { TrustDebtStore } from '../../trust-debt/store.js';
import type { MetricOutcome, Trace, TrustDebtLevel } from '../../types.js';
import { RecordedStateStore, type PolicyRequestRecord } from '../pdp.js';

/** Answers every metric with the scorer answer the request recorded for it (never a live scorer). */
class RecordedScorers extends ScorerRegistry {
  answers = new Map<string, MetricOutcome>();

  private readonly scorer: Scorer = {
    scorerType: 'recorded',
    evalTier: 2,
    latencyBudgetMs: 0,
    evaluate: async (_trace, _params, ctx) => {
      const a = this.answers.get(ctx.metric?.name ?? '');
      if (!a) throw unavailable(`replay: no recorded answer for metric ${ctx.metric?.name ?? '?'}`);
      if (a.status === 'skipped') throw skipped(a.explanation ?? 'skipped');
      if (a.status !== 'ok' || a.score === null) throw unavailable(a.explanation ?? 'unavailable');
      return { score: a.score, confidence: a.confidence, explanation: a.explanation ?? '', evidence: {}, latencyMs: 0 };
    },
  };

  override resolve(): Scorer {
    return this.scorer;
  }
}

export interface Reevaluator {
  /** The tenant the recorded agent registry gives an agent (a run may hold another agent's events, e.g. approvals). */
  tenantOf(agentId: string): string;
  /** `adjust`: the decision as scored (the run checks' answer folded in, raiseDecision). */
  decide(trace: Trace, req: PolicyRequestRecord, adjust?: (d: DecisionRecord) => DecisionRecord): Promise<{ decision: DecisionRecord; score: ScoreRecord; unusedReads: number }>;
}

export interface PolicyTexts {
  blueprints: { file: string; text: string }[];
  agents?: { file: string; text: string };
  config: EngineConfig;
}

/** Compiles the recorded policy; the problems are load errors (the policy files do not compile). */
export function createReevaluator(p: PolicyTexts): { reevaluator?: Reevaluator; problems: StewardError[] } {
  const res = compileBlueprintSet(p.blueprints, { config: p.config });
  let registry: AgentRegistry = createAgentRegistry([], p.config.defaultTier);
  const problems: StewardError[] = [...res.errors];
  if (p.agents) {
    const r = parseAgentRegistry(p.agents.text, p.agents.file, { defaultTier: p.config.defaultTier });
    problems.push(...r.errors);
    if (r.registry) registry = r.registry;
  }
  if (!res.set || problems.length > 0) return { problems };
  const set = res.set;
  const state = new RecordedStateStore();
  const scorers = new RecordedScorers();
  let debt: { debt: number; level: TrustDebtLevel } = { debt: 0, level: 'normal' };
  const trustDebt = { current: () => Promise.resolve(debt) } as unknown as TrustDebtStore;
  const engine = new StewardEngine({ blueprints: () => set, registry, config: p.config, state, trustDebt, scorers, engineVersion: 'replay' });
  const reevaluator: Reevaluator = {
    tenantOf: (agentId) => registry.lookup(agentId).tenant,
    async decide(trace, req, adjust) {
      state.load(req.reads);
      debt = req.trust_debt;
      scorers.answers = new Map(req.scorer_answers.map((a) => [a.name, a]));
      const decided = await engine.decide(trace, req.now_ms, req.event_id);
      const decision = adjust ? adjust(decided) : decided;
      const score = await engine.score(trace, decision, req.now_ms);
      return { decision, score, unusedReads: state.unused().length };
    },
  };
  return { reevaluator, problems: [] };
}
