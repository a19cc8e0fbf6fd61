/**
 * StewardEngine: the one facade over the pure engine, used by `steward eval` and by the stream stages.
 *   decide()   tier 0–1: blueprint selection, tripwires (halt short-circuits), rule checks
 *   score()    tier 2: metrics → CTQ → final intervention → signed PVS-1 verdict (never after a halt)
 *   evaluate() decide + score + one trust-debt movement (spec-decisions D15)
 * Records are plain JSON so a DecisionRecord can travel through Kafka to the scorer stage.
 */
import { isComplete, type AcmDecision, type DecisionRecord, type EvalRecord, type FinalStage, type ScoreDecisionInput, type ScoreRecord } from './records.js';
import { StewardError } from '../errors.js';
import type { AgentRegistry, BlueprintSet } from './blueprint/index.js';
import { effectiveThresholds } from './blueprint/index.js';
import type { EngineConfig } from './config.js';
import { decideCtq, fallbackPolicy } from './ctq/index.js';
import { createDefaultScorerRegistry, LruCache, type LlmJudgeOptions, type ScorerRegistry, type SourceRegistry } from './scorers/index.js';
import { MetricRunner } from './metric-runner.js';
import { isDegraded, runTripwireStage } from './tripwires/index.js';
import { DEFAULT_TRUST_DEBT_CONFIG, levelActions, maxLevel, type TrustDebtStore } from './trust-debt/index.js';
import {
  isApproved,
  mostSevere,
  severityRank,
  type AgentInfo,
  type CompiledBlueprint,
  type EvalContext,
  type Intervention,
  type LlmClient,
  type MetricOutcome,
  type StateStore,
  type Trace,
  type TripwireStageResult,
  type TrustDebtLevel,
} from './types.js';
import { buildVerdict, signVerdict, type VerdictSigner } from './verdict/index.js';
import type { FinalizationGate } from './gate/finalization-gate.js';
import { decideChunk, type DecideChunkOptions, type GateChunkItem, type GateChunkResult } from './gate/chunk.js';
import { gateDebtEvent } from './gate/decide.js';
import type { FinalizationOutcomeEvent, GateOutcome } from './gate/types.js';
import { governRunEvent, type AcmRunStateStore } from './acm/state-store.js';
import { raiseDecision } from './acm/stage.js';
import { isAcmHook, runIdOf, type AcmEnv } from './acm/run-state.js';
import { selectWithRollout, type RolloutTable } from './rollout/arm.js';
import { approvalFor } from './approvals/policy.js';
import { RecordingStateStore } from './acm/pdp.js';

export interface StewardEngineOptions {
  blueprints: () => BlueprintSet;
  registry: AgentRegistry;
  config: EngineConfig;
  state?: StateStore;
  trustDebt: TrustDebtStore;
  llm?: LlmClient;
  signer?: VerdictSigner;
  scorers?: ScorerRegistry;
  /** Options of the default llm-judge (max_in_flight, timeout, retries) when `scorers` is not given. */
  llmJudge?: LlmJudgeOptions;
  sourceRegistry?: SourceRegistry;
  engineVersion: string;
  /** Upper bound for one metric (scorer) evaluation, on top of the scorers' own timeouts. Default 30 s. */
  metricTimeoutMs?: number;
  /** Each distinct warning is reported once (e.g. "no LLM configured: llm metrics skipped"). */
  onWarning?: (message: string) => void;
  /**
   * The finalization gate (docs/gate.md): answers `final_answer` traces (finalize()) and, in decide(), gates the
   * `tool_call`s of a job (rewrite-only state, workflow order, tier-1 guardrails) and records them as evidence.
   */
  gate?: FinalizationGate;
  /**
   * ACM run governance (docs/acm.md "In the stream"): decide() checks the events of a run against its state
   * (a rejected event throws its problems, non-retryable: the stage dead-letters it and nothing changes),
   * answers the most severe of the blueprint's and the run checks' interventions, and commits the run.
   */
  acm?: { store: AcmRunStateStore; env: AcmEnv };
  /** Staged rollouts by blueprint name (docs/rollout.md): the agent's arm picks the stable or canary version. */
  rollouts?: () => RolloutTable | undefined;
}

export type { AcmDecision, DecisionRecord, EvalRecord, FinalStage, ScoreDecisionInput, ScoreRecord } from './records.js';

export class StewardEngine {
  private readonly metrics: MetricRunner;
  /** Last CTQ intervention per agent+blueprint, for the `cached_decision` fallback (spec-decisions D5). */
  private readonly lastCtq = new LruCache<Intervention>(50_000);
  /**
   * With run governance, the state reads of each decision are recorded for its PDP request (docs/acm.md "In the
   * stream"), per agent namespace: one agent's traces are decided one at a time (the stage's per-key order).
   */
  private readonly recorder?: RecordingStateStore;

  constructor(private readonly o: StewardEngineOptions) {
    this.metrics = new MetricRunner(o.scorers ?? createDefaultScorerRegistry(o.llmJudge), o);
    if (o.acm && o.state) this.recorder = new RecordingStateStore(o.state);
  }

  /** `eventId`: idempotency id of the trace's state effects (EvalContext.eventId); trace_id by default. */
  async decide(trace: Trace, nowMs: number, eventId?: string): Promise<DecisionRecord> {
    const agent = this.o.registry.lookup(trace.agent_id);
    const { blueprint: bp, arm } = selectWithRollout(this.o.blueprints(), agent, trace, this.o.rollouts?.());
    const td = await this.o.trustDebt.current(agent.tenant, agent.id, nowMs, bp.trustDebt);
    const actions = levelActions(td.level);
    const ctx: EvalContext = {
      trace,
      agent,
      trustDebt: td.debt,
      nowMs,
      // `%` and `:` escaped in each part: tenant `a` + agent `b:c` must not share state with tenant `a:b` +
      // agent `c`. Nothing else is escaped, so ids without those two characters keep their keys.
      stateNamespace: `${nsPart(agent.tenant)}:${nsPart(agent.id)}`,
      state: this.recorder ?? this.o.state,
      eventId,
    };
    // Reads left by an earlier attempt that failed (a retried conflict) are not this decision's.
    this.recorder?.take(ctx.stateNamespace);
    const gated = this.o.gate !== undefined && trace.hook === 'tool_call' && (bp.gate !== undefined || typeof trace.job_id === 'string');
    const blueprintStage = async (): Promise<TripwireStageResult> => {
      const r = await runTripwireStage(bp, ctx, { fallbackOnTimeout: bp.fallbackOnTimeout ?? this.o.config.fallbackOnTimeout, tiers: this.o.config.tiers });
      return gated ? this.gateToolCall(this.o.gate!, trace, agent, bp, td.debt, nowMs, eventId ?? trace.trace_id, r) : r;
    };
    let acm: AcmDecision | undefined;
    let res: TripwireStageResult;
    if (this.o.acm && (isAcmHook(trace.hook) || runIdOf(trace) !== undefined)) [res, acm] = await this.governRun(this.o.acm, trace, agent.tenant, nowMs, eventId, blueprintStage);
    else res = await blueprintStage();
    // docs/approvals.md: an allowed call the blueprint's tools[].requires_approval matches waits for a human.
    const approval = bp.approvals && trace.hook === 'tool_call' && severityRank(res.intervention) < severityRank('escalate') ? approvalFor(bp.approvals, ctx, eventId ?? trace.trace_id) : undefined;
    if (approval) res = { ...res, intervention: 'escalate', reasons: [...res.reasons, `approval:${approval.approval_id}: ${approval.tool} requires approval${approval.role ? ` by ${approval.role}` : ''}`] };
    // Recorded with its final intervention, after the run checks' raise and the approval: a call escalated (held
    // for a human), blocked or halted did not run, so it is neither a workflow step nor evidence (D46). An approval
    // granted later is recorded as ran by the approvals stage (recordApprovedCall).
    if (gated) await this.o.gate!.recordToolCall(trace, agent, nowMs, eventId ?? trace.trace_id, isApproved(res.intervention), bp);
    // Taken for every trace (else the namespace's list grows); kept for an event of a run only.
    const reads = this.recorder?.take(ctx.stateNamespace);
    if (acm?.record && reads) acm = { ...acm, reads };
    // Field by field, not `{ ...res, … }`: that spread plus the added fields took ~10 us per decision in
    // V8 (Node 20), about as much as the rest of decide() with the tripwires; this is ~0.1 us.
    return {
      traceId: res.traceId,
      agentId: res.agentId,
      blueprint: res.blueprint,
      intervention: res.intervention,
      stage: res.stage,
      halted: res.halted,
      tripwires: res.tripwires,
      rules: res.rules,
      reasons: res.reasons,
      severity: res.severity,
      latencyMs: res.latencyMs,
      degraded: isDegraded(res) || undefined,
      blueprintVersion: bp.version,
      tenant: agent.tenant,
      tier: agent.tier,
      trustDebt: td,
      restricted: actions.restricted,
      fullScoring: actions.fullScoring,
      nowMs,
      eventId: eventId === undefined || eventId === trace.trace_id ? undefined : eventId,
      ...(acm ? { acm } : {}),
      ...(arm ? { rolloutArm: arm } : {}),
      ...(approval ? { approval } : {}),
    };
  }

  /**
   * docs/acm.md "Stage contract": the run checks first (a rejected event is thrown before the blueprint
   * touches any state), then the blueprint, then the commit of the run over the state it was checked against.
   * A run check stricter than the blueprint raises the answer; one that refuses (a forbidden branch: block) halts it.
   */
  private async governRun(o: NonNullable<StewardEngineOptions['acm']>, trace: Trace, tenant: string, nowMs: number, eventId: string | undefined, blueprintStage: () => Promise<TripwireStageResult>): Promise<[TripwireStageResult, AcmDecision]> {
    let bpRes: TripwireStageResult | undefined;
    const out = await governRunEvent(o.store, trace, { env: o.env, tenant, nowMs, eventId, engineVersion: this.o.engineVersion }, async () => {
      bpRes = await blueprintStage();
      return { blueprint: bpRes.blueprint, intervention: bpRes.intervention, stage: bpRes.stage, reasons: bpRes.reasons, tripwires: bpRes.tripwires, rules: bpRes.rules };
    });
    if (out.kind === 'rejected') {
      const first = out.problems[0];
      throw new StewardError(first ? (first.code as `STEWARD_ACM_${string}`) : 'STEWARD_ACM_SCHEMA', out.problems.map((p) => `${p.path}${p.offset !== undefined ? `@${p.offset}` : ''}: ${p.code}: ${p.message}`).join('; '));
    }
    let res = bpRes ?? (await blueprintStage());
    if (out.kind === 'not_governed') return [res, { violations: [], drafts: [] }];
    res = raiseDecision(res, out.intervention, out.violations);
    return [res, { run_id: out.run_id, ...(out.acm_intervention ? { intervention: out.acm_intervention } : {}), violations: out.violations.map((v) => v.code), drafts: out.drafts, ...(out.record ? { record: out.record } : {}) }];
  }

  /**
   * A `final_answer`: the finalization gate's verdict, action and directive for the selected blueprint
   * (docs/gate.md). `eventId` counts the attempt once, however often the trace is redelivered.
   */
  async finalize(trace: Trace, nowMs: number, eventId: string = trace.trace_id, opts: { signal?: AbortSignal } = {}): Promise<GateOutcome> {
    if (!this.o.gate) throw new StewardError('STEWARD_INTERNAL', 'finalize: this engine has no finalization gate');
    const agent = this.o.registry.lookup(trace.agent_id);
    // The agent's rollout arm applies here too: a canary agent's final answer is judged by the canary version.
    const bp = selectWithRollout(this.o.blueprints(), agent, trace, this.o.rollouts?.()).blueprint;
    const td = await this.o.trustDebt.current(agent.tenant, agent.id, nowMs, bp.trustDebt);
    return this.o.gate.finalize(trace, agent, bp, nowMs, eventId, { signal: opts.signal, trustDebt: td.debt });
  }

  /**
   * A stage's chunk of `final_answer` and `user_feedback` traces, decided in job-state rounds (decideChunk,
   * src/engine/gate/chunk.ts): per item its answer as finalize()/userFeedback() give it, or undone (the caller
   * processes it alone, after the chunk). The agents' trust debts are read together (one round too).
   */
  async finalizeChunk<T = GateChunkResult>(items: readonly { trace: Trace; nowMs: number; eventId: string }[], opts: DecideChunkOptions<T> = {}): Promise<T[]> {
    const gate = this.o.gate;
    if (!gate) throw new StewardError('STEWARD_INTERNAL', 'finalizeChunk: this engine has no finalization gate');
    const prepared = await Promise.all(
      items.map(async ({ trace, nowMs, eventId }): Promise<GateChunkItem> => {
        const agent = this.o.registry.lookup(trace.agent_id);
        if (trace.hook !== 'final_answer') return { hook: 'user_feedback', trace, agent, nowMs };
        try {
          const bp = selectWithRollout(this.o.blueprints(), agent, trace, this.o.rollouts?.()).blueprint;
          const td = await this.o.trustDebt.current(agent.tenant, agent.id, nowMs, bp.trustDebt);
          return { hook: 'final_answer', trace, agent, blueprint: bp, nowMs, eventId, trustDebt: td.debt };
        } catch (error) {
          return { hook: 'failed', trace, agent, error };
        }
      }),
    );
    return decideChunk(gate, prepared, opts);
  }

  /**
   * A gate answer's trust-debt movement, applied as the trust-debt stage applies its judge result (gateDebtEvent,
   * same event id `fajr:<event id>`; spec-decisions D50) under the answering blueprint's settings: `steward eval`
   * runs the stream's stages in one process. None for a repair loop or a degraded outcome (the debt as it stands).
   */
  async applyGateDebt(o: GateOutcome, nowMs: number): Promise<{ before: number; after: number; level: TrustDebtLevel }> {
    // As the stage's configFor: the blueprint by id, the defaults when a hot reload removed it.
    const cfg = this.o.blueprints().get(o.blueprint)?.trustDebt ?? DEFAULT_TRUST_DEBT_CONFIG;
    const ev = gateDebtEvent({ ...o.events.final_alignment_judge_result, trust_debt: o.trust_debt }, (id) => this.o.registry.lookup(id).tenant, nowMs);
    if (!ev) {
      const td = await this.o.trustDebt.current(o.tenant, o.agent_id, nowMs, cfg);
      return { before: td.debt, after: td.debt, level: td.level };
    }
    const change = await this.o.trustDebt.apply(ev, cfg);
    return { before: change.before, after: change.after, level: change.level };
  }

  /** A `hook: user_feedback` trace: the job's finalization_outcome with the feedback, or null (docs/gate.md). */
  async userFeedback(trace: Trace, nowMs: number): Promise<FinalizationOutcomeEvent | null> {
    if (!this.o.gate) throw new StewardError('STEWARD_INTERNAL', 'userFeedback: this engine has no finalization gate');
    return this.o.gate.userFeedback(trace, this.o.registry.lookup(trace.agent_id), nowMs);
  }

  /**
   * The pre-tool gate of a job's `tool_call`: its hits block like failed rules (named `gate:<kind>:<id>`). The
   * call is recorded by decide() once its final intervention is known.
   */
  private async gateToolCall(gate: FinalizationGate, trace: Trace, agent: AgentInfo, bp: CompiledBlueprint, debt: number, nowMs: number, eventId: string, res: TripwireStageResult): Promise<TripwireStageResult> {
    const check = await gate.checkToolCall(trace, agent, bp, nowMs, { eventId, trustDebt: debt });
    let out = res;
    if (check.hits.length > 0) {
      const rules = [...res.rules];
      const reasons = [...res.reasons];
      for (const h of check.hits) {
        rules.push({ id: `gate:${h.kind}:${h.id}`, passed: false, decision: 'block', reason: h.message });
        reasons.push(h.message);
      }
      const more = severityRank('block') > severityRank(res.intervention);
      out = { ...res, rules, reasons, intervention: more ? 'block' : res.intervention, stage: more ? 'rule' : res.stage, severity: more ? undefined : res.severity };
    }
    return out;
  }

  async score(trace: Trace, decisionIn: ScoreDecisionInput, nowMs: number): Promise<ScoreRecord> {
    const t0 = performance.now();
    const agent = this.o.registry.lookup(trace.agent_id);
    const { decision, bp } = await this.scoringDecision(decisionIn, agent, trace, nowMs);
    const th = effectiveThresholds(bp, agent.tier, { restricted: decision.restricted, config: this.o.config });

    let metrics: MetricOutcome[] = [];
    let ctq: ReturnType<typeof decideCtq> | undefined;
    const fbPolicy = fallbackPolicy(agent.tier, bp.fallbackOnTimeout ?? this.o.config.fallbackOnTimeout);
    if (!decision.halted) {
      metrics = await this.metrics.run(trace, bp, agent, decision, nowMs, decision.fullScoring === true);
      const cacheKey = `${agent.tenant}:${agent.id}:${bp.id}`;
      ctq = decideCtq(metrics, th, { policy: fbPolicy, cached: this.lastCtq.get(cacheKey), tier: agent.tier });
      if (ctq.risk !== null && ctq.intervention !== null && !ctq.fallback) this.lastCtq.set(cacheKey, ctq.intervention);
    }

    const { intervention, stage } = finalOutcome(decision, ctq?.intervention ?? null);
    const severity = stage === 'tripwire' ? (decision.severity as string | undefined) : undefined;
    // spec-decisions D20: the stage that decided was forced by an unavailable dependency.
    const degraded = stage === 'ctq' ? ctq?.degraded === true : decision.degraded === true;
    let verdict = buildVerdict({
      traceId: trace.trace_id,
      agent,
      blueprint: bp.id,
      intervention,
      stage,
      tripwires: decision.tripwires,
      rules: decision.rules,
      metrics,
      ctq: ctq?.ctq ?? null,
      risk: ctq?.risk ?? null,
      ctqConfidence: ctq?.confidence ?? 1,
      fallback: ctq?.fallback ? { ...ctq.fallback, metrics: ctq.unavailable } : undefined,
      engineVersion: this.o.engineVersion,
      latencyMs: decision.latencyMs + (performance.now() - t0),
      humanReviewConfidence: this.o.config.humanReviewConfidence,
      humanReviewOnIntervention: bp.ctq.requireHumanReview,
      eventId: decision.eventId,
      eventTimeMs: nowMs,
      severity,
    });
    if (this.o.signer) verdict = signVerdict(verdict, this.o.signer);
    return {
      traceId: trace.trace_id,
      agentId: agent.id,
      tenant: agent.tenant,
      blueprint: bp.id,
      intervention,
      approved: verdict.approved,
      stage,
      severity,
      ctq: ctq?.ctq ?? null,
      risk: ctq?.risk ?? null,
      confidence: verdict.confidence_score,
      metrics,
      verdict,
      latencyMs: performance.now() - t0,
      trustDebt: decision.trustDebt,
      fullScoring: decision.fullScoring === true,
      ...(degraded ? { degraded: true } : {}),
    };
  }

  async evaluate(trace: Trace, nowMs: number, eventId?: string): Promise<EvalRecord> {
    const decision = await this.decide(trace, nowMs, eventId);
    const score = await this.score(trace, decision, nowMs);
    const agent = this.o.registry.lookup(trace.agent_id);
    const bp = this.blueprintFor(decision, agent, trace);
    // spec-decisions D20: a degraded outcome keeps its decision but moves no debt (it reads the debt as it stands).
    if (score.degraded) {
      const td = await this.o.trustDebt.current(agent.tenant, agent.id, nowMs, bp.trustDebt);
      return { decision, score, trustDebt: { before: td.debt, after: td.debt, level: td.level } };
    }
    const change = await this.o.trustDebt.apply(
      { eventId: eventId ?? trace.trace_id, tenant: agent.tenant, agentId: agent.id, atMs: nowMs, kind: 'intervention', intervention: score.intervention, severity: score.severity },
      bp.trustDebt,
    );
    return { decision, score, trustDebt: { before: change.before, after: change.after, level: change.level } };
  }

  /**
   * The decision as scoring uses it (#22 item 10, spec-decisions D33): what selects the scoring is re-derived here,
   * not taken from the record handed over (acgp.scoring, or acgp.decisions for the join: whoever can write those
   * topics writes it). The blueprint is selected again from the agent registry and the rollouts, tenant and tier
   * come from the registry, and restricted mode / full scoring are the stricter of the record's and the agent's
   * trust debt read now. A forged record can make scoring stricter, never lighter; after a hot reload the current
   * selection applies (as it did when the decided version was gone).
   */
  private async scoringDecision(d: ScoreDecisionInput, agent: AgentInfo, trace: Trace, nowMs: number): Promise<{ decision: DecisionRecord; bp: CompiledBlueprint }> {
    const bp = selectWithRollout(this.o.blueprints(), agent, trace, this.o.rollouts?.()).blueprint;
    const td = await this.o.trustDebt.current(agent.tenant, agent.id, nowMs, bp.trustDebt);
    const claimed = isComplete(d) ? d.trustDebt : undefined;
    const trustDebt = claimed && maxLevel(claimed.level, td.level) !== td.level ? claimed : td;
    const actions = levelActions(trustDebt.level);
    return {
      bp,
      decision: {
        ...d,
        blueprint: bp.id,
        blueprintVersion: bp.version,
        tenant: agent.tenant,
        tier: agent.tier,
        nowMs: d.nowMs ?? nowMs,
        restricted: actions.restricted || d.restricted === true,
        fullScoring: actions.fullScoring || d.fullScoring === true,
        trustDebt,
      },
    };
  }

  private blueprintFor(decision: Pick<DecisionRecord, 'blueprint'> & { blueprintVersion?: string }, agent: AgentInfo, trace: Trace): CompiledBlueprint {
    const set = this.o.blueprints();
    // After a hot reload the decided version may be gone; the current selection then applies.
    return set.blueprints.find((b) => b.id === decision.blueprint && b.version === decision.blueprintVersion) ?? set.select(agent, trace);
  }
}

/**
 * Most severe of tripwire/rule and CTQ (spec-decisions D1). On a tie the earlier stage keeps the credit;
 * when everything is ok the stage is `ctq` if CTQ was computed, else `rule` (docs/spec-decisions.md).
 */
export function finalOutcome(decision: Pick<TripwireStageResult, 'intervention' | 'stage' | 'halted'>, ctq: Intervention | null): { intervention: Intervention; stage: FinalStage } {
  if (decision.halted) return { intervention: decision.intervention, stage: 'tripwire' };
  const d = decision.intervention;
  if (ctq !== null && severityRank(ctq) > severityRank(d)) return { intervention: ctq, stage: 'ctq' };
  const intervention = mostSevere(d, ctq ?? 'ok');
  if (decision.stage !== 'none' && severityRank(d) > 0) return { intervention, stage: decision.stage };
  return { intervention, stage: ctq !== null ? 'ctq' : decision.stage === 'tripwire' ? 'tripwire' : 'rule' };
}

const nsPart = (s: string): string => (s.includes('%') || s.includes(':') ? s.replace(/%/g, '%25').replace(/:/g, '%3A') : s);
