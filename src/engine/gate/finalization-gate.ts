/**
 * FinalizationGate: the one facade over the gate (docs/gate.md). The stage, `steward eval` and the HTTP
 * ingress all call it. Pure apart from what is passed in: the LLM client, the job store and event time.
 *
 *   finalize(trace, agent, blueprint, nowMs, eventId)   a `final_answer`: tier 1 → tier 2 → judge → action
 *   checkToolCall(trace, agent, blueprint, nowMs)       the pre-tool gate for a `tool_call` (reads state only)
 *   recordToolCall(trace, agent, nowMs, eventId, ran, blueprint)   the call as decided, into the job's evidence
 */
import { StewardError } from '../../errors.js';
import type { AgentInfo, CompiledBlueprint, Intervention, LlmClient, Trace } from '../types.js';
import { BUILTIN_REASON_CODES, type FixMode, type GateAction, type GateVerdict, type JudgedBy } from './codes.js';
import { EMPTY_GATE } from './config.js';
import { actionFor, antiLoop, antiLoopEnding, computeVerdict, directiveFor, effectiveFixMode, interventionFor, isRepair, onJudgeErrorOutcome, settingsFor, trustDebtFor } from './decide.js';
import { judgeCanApply, rewriteOnlyJobs, syncRewriteIndex } from './agent-index.js';
import { eventFacts } from './events.js';
import { attemptOf, recordAttempt, recordToolCall, type DecidedAttempt } from './job-state.js';
import { GateJudge } from './judge.js';
import { buildPayload, toolCallFacts } from './payload.js';
import { JUDGE_SYSTEM, promptWithAdditions, renderJudgePrompt } from './prompts.js';
import { draftView, scanDraft, tier1Scope } from './scan.js';
import { expandOutcome, lastEndedOutcome, outcomeOfAttempt, packStored, supersededEnding, type OutcomeIds } from './stored-outcome.js';
import { DEFAULT_GATE_RUNTIME_LIMITS, type GateHit, type GateJobKey, type GateJobState, type GateJobStore, type GateOutcome, type GateRuntimeLimits, type NextAction, type StoredOutcome, type SupersededEnding, type ToolCallCheck, type FinalizationOutcomeEvent } from './types.js';
import { gateScope } from './skills.js';
import { missingWorkflowSteps } from './workflow.js';
import { checkToolCallPure, optStr } from './tool-call-check.js';
import { parseFinalAnswer, type FinalAnswerInput } from './final-answer-input.js';

export interface FinalizationGateOptions {
  /** No LLM: tiers 1–2 only (`judged_by: rules`). */
  llm?: LlmClient;
  jobStore: GateJobStore;
  limits?: Partial<GateRuntimeLimits>;
  /** Things an operator should see once in a while (unknown reason codes dropped, unknown intents). */
  onWarning?: (message: string) => void;
}

/** A final answer decided against its job's state, to be recorded (FinalizationGate.decideAgainst). */
export interface DecidedAnswer {
  key: GateJobKey;
  ids: OutcomeIds;
  /** What the job state records (its outcome packed). */
  attempt: DecidedAttempt;
  /** The whole stored outcome: settle() expands the answer from it, as a redelivery's will be (not before: a
   * chunk holds its decisions until they are recorded, and the expanded events are most of an answer's objects). */
  stored: StoredOutcome;
  /** The job's earlier ending this one replaces (GateOutcome.supersedes, D45). */
  supersedes?: SupersededEnding;
}

export interface FinalizeOptions {
  /** Cancels a pending judge call (the stage shutting down, the agent gone). */
  signal?: AbortSignal;
  /** The agent's trust debt, for tier-1 conditions that read `trust_debt` (0 when not given). */
  trustDebt?: number;
}

/** A final answer parsed, and the job it belongs to. */
export interface PreparedAnswer {
  input: FinalAnswerInput;
  key: GateJobKey;
}

/** Parses a final answer (STEWARD_GATE_INPUT when it is not a well-formed one) and names its job. */
export function prepareAnswer(trace: Trace, agent: AgentInfo): PreparedAnswer {
  const input = parseFinalAnswer(trace);
  return { input, key: { tenant: agent.tenant, agentId: agent.id, jobId: input.jobId } };
}

export class FinalizationGate {
  private readonly limits: GateRuntimeLimits;
  private readonly judge?: GateJudge;
  private readonly warned = new Set<string>();
  /** Decisions whose record() found their event recorded by another instance first. */
  private readonly lostRace = new WeakSet<DecidedAnswer>();

  constructor(private readonly o: FinalizationGateOptions) {
    this.limits = { ...DEFAULT_GATE_RUNTIME_LIMITS, ...(o.limits ?? {}) };
    if (o.llm) this.judge = new GateJudge(o.llm, this.limits.maxJudgeInFlight);
  }

  /** The job store it reads and records through (decideChunk, chunk.ts). */
  get jobStore(): GateJobStore {
    return this.o.jobStore;
  }

  /** Judge calls it lets run at once (limits.maxJudgeInFlight: llm.max_in_flight). */
  get judgeInFlight(): number {
    return this.limits.maxJudgeInFlight;
  }

  /** Judge calls made so far (tests, metrics). */
  get judgeCalls(): number {
    return this.judge?.calls ?? 0;
  }

  private warn(m: string): void {
    if (this.warned.has(m) || this.warned.size > 1000) return;
    this.warned.add(m);
    this.o.onWarning?.(m);
  }

  async finalize(trace: Trace, agent: AgentInfo, blueprint: CompiledBlueprint, nowMs: number, eventId: string = trace.trace_id, opts: FinalizeOptions = {}): Promise<GateOutcome> {
    const p = prepareAnswer(trace, agent);
    const state = await this.o.jobStore.get(p.key, nowMs);
    const d = await this.decideAgainst(state, p, trace, agent, blueprint, nowMs, eventId, opts);
    if ('again' in d) {
      // A redelivered rewrite: its index entry again, in case the first delivery stopped before writing it (D45).
      await syncRewriteIndex(this.o.jobStore, p.key, nowMs, undefined, state);
      return d.again;
    }
    const saved = await this.o.jobStore.update(p.key, nowMs, (prev) => this.record(prev, d, nowMs));
    // Before the answer goes out: the agent's next job-less tool call must find the job's rewrite-only state (D45).
    await syncRewriteIndex(this.o.jobStore, p.key, nowMs, state, saved);
    return this.settle(saved, d);
  }

  /**
   * A final answer decided against its job's state as read (`state`), not yet recorded: a redelivery of a
   * decided event (`again`: its stored answer), or the decision to record (record(), then settle()). finalize()
   * does read → decide → record for one answer; decideChunk (chunk.ts) for a stage's chunk in rounds.
   */
  async decideAgainst(state: GateJobState | undefined, { input, key }: PreparedAnswer, trace: Trace, agent: AgentInfo, blueprint: CompiledBlueprint, nowMs: number, eventId: string, opts: FinalizeOptions = {}): Promise<{ again: GateOutcome } | DecidedAnswer> {
    const gate = blueprint.gate ?? EMPTY_GATE;
    // The trace's skill_id only adds a registry skill; the skills whose workflows the job engaged apply too (D46).
    const { settings, skillId, skills, workflows } = gateScope(gate, trace.skill_id, agent.skills, state);
    const seen = attemptOf(state, eventId);
    const again = seen && outcomeOfAttempt(state!, seen, true);
    if (again) return { again };
    const attemptIndex = state?.attempt_count ?? 0;
    const calls = state?.tool_calls ?? [];
    // Rules and `when` matchers read the answer to deliver (the draft as `content`), never another `content` beside it.
    const view = draftView(trace, input.draft);
    const style = gate.style.filter((s) => (!s.skills || s.skills.some((k) => skills.includes(k))) && s.when(view)).map((s) => s.text);

    let verdict: GateVerdict | null;
    let score: number | null = null;
    let codes: string[] = [];
    let fixMode: FixMode | null = null;
    let action: GateAction;
    let judgedBy: JudgedBy;
    let missing: string[] = [];
    let degraded = false;
    let intervention: Intervention | undefined;
    let judgeError: GateOutcome['judge_error'] = null;
    let dropped: string[] = [];
    let evidenceIssues: string[] = [];
    let nextActions: NextAction[] = [];
    let model: string | null = null;
    let latencyMs = 0;
    let tokenCost: number | null = null;
    let antiLoopWhy: GateOutcome['anti_loop'] = null;

    // Tier 1 first, before any LLM call: a hit is FAIL + block whatever the attempt (D17). Its rules and patterns
    // are those of every skill the registry lists for the agent, not of the skill the trace names (D44).
    const customHardFail = settings.customReasonCodes.filter((c) => c.hardFail).map((c) => c.code);
    const hits: GateHit[] = scanDraft(input.draft, { trace: view, agent, nowMs, trustDebt: opts.trustDebt, eventId }, tier1Scope(gate, agent.skills), this.limits);
    const tier1 = hits.length > 0;
    if (tier1) {
      verdict = 'FAIL';
      codes = ['SAFETY_OR_POLICY_VIOLATION'];
      action = 'block';
      judgedBy = 'patterns';
      missing = hits.map((h) => h.message);
    } else {
      const wf = missingWorkflowSteps(workflows, calls, view, agent.skills, state?.steps_done);
      hits.push(...wf);
      if (wf.length > 0 || !this.judge || !settings.enabled) {
        // D21, no LLM (and a tier-2 failure, which no judge can overrule): tiers 1–2 decide.
        judgedBy = 'rules';
        if (wf.length > 0) {
          verdict = 'FAIL';
          codes = ['MISSING_REQUIRED_ELEMENTS'];
          fixMode = 'NEEDS_NEW_EVIDENCE';
          missing = wf.map((h) => h.message);
          action = 'replan';
        } else {
          verdict = 'PASS';
          action = 'finalize';
        }
      } else {
        judgedBy = 'llm';
        const r = await this.callJudge(input, trace, settings, calls, opts.signal);
        model = r.model;
        latencyMs = r.latencyMs;
        // §9.13 token_cost: the judge's tokens for this attempt, input + output (no prices known: spec-decisions D41).
        tokenCost = r.usage ? r.usage.inputTokens + r.usage.outputTokens : null;
        if (r.ok) {
          const a = r.answer;
          score = a.quality_score;
          codes = a.reason_codes;
          dropped = a.dropped_reason_codes;
          if (dropped.length) this.warn(`gate: judge returned unknown reason code(s) ${dropped.join(', ')} (dropped; blueprint ${blueprint.id})`);
          missing = a.missing_requirements;
          evidenceIssues = a.evidence_issues;
          nextActions = a.next_actions;
          fixMode = effectiveFixMode(a.fix_mode, codes);
          verdict = computeVerdict(score, codes, settings.strictness, customHardFail);
          action = actionFor(verdict, fixMode);
        } else {
          // D20/D21: the judge timed out or answered invalid JSON twice — on_judge_error, degraded.
          degraded = true;
          judgeError = r.error;
          verdict = null;
          ({ action, intervention } = onJudgeErrorOutcome(settings.onJudgeError));
        }
      }
      if (isRepair(action)) {
        antiLoopWhy = antiLoop(attemptIndex, settings.maxRetries, state, { abstraction_level: input.abstractionLevel, artifact_type: input.artifactType, clarification: input.clarification });
        // D45: the spec's limitations ending delivers the draft; one failing safety, policy or a workflow step is blocked.
        if (antiLoopWhy) action = antiLoopEnding(codes, customHardFail, wf.length > 0);
      }
    }
    intervention ??= interventionFor(verdict, action);
    // The compact form is what the job state keeps; the answer is expanded from it, as a redelivery's will be.
    const stored: StoredOutcome = {
      quality_score: score,
      reason_codes: codes,
      fix_mode: fixMode,
      attempt_index: attemptIndex,
      judged_by: judgedBy,
      missing_requirements: missing,
      directive: directiveFor(action, { reasonCodes: codes, missing, fixMode, style, blockReasons: hits.map((h) => h.message), ...(judgeError && { judgeError: judgeError.message }), antiLoop: antiLoopWhy }),
      intervention,
      degraded,
      trace_id: trace.trace_id,
      blueprint: blueprint.id,
      skill_id: skillId,
      hits,
      dropped_reason_codes: dropped,
      evidence_issues: evidenceIssues,
      next_actions: nextActions,
      anti_loop: antiLoopWhy,
      judge_error: judgeError,
      trust_debt: trustDebtFor(action, intervention, { tier1, degraded }),
      facts: eventFacts(trace, { model, latencyMs, tokenCost }),
      job_start_ms: state?.created_ms ?? nowMs,
    };
    const ids = { job_id: input.jobId, agent_id: agent.id, tenant: agent.tenant };
    const attempt: DecidedAttempt = { event_id: eventId, ts_ms: nowMs, abstraction_level: input.abstractionLevel, artifact_type: input.artifactType, clarification: input.clarification, action, verdict, o: packStored(stored) };
    // D45: a job that ended before and ends again counts once in the metrics — the earlier ending is handed on.
    const supersedes = supersededEnding(ids, state, action);
    return { key, ids, attempt, stored, ...(supersedes && { supersedes }) };
  }

  /** The job state with a decided answer recorded (the job store's update function: pure, may run again). */
  record(prev: GateJobState | undefined, d: DecidedAnswer, nowMs: number): GateJobState {
    // The store keeps what the last run of this function returned: whether that run found the event recorded
    // already (another instance decided it first) is whether this instance lost the race (settle()).
    if (attemptOf(prev, d.attempt.event_id)) this.lostRace.add(d);
    else this.lostRace.delete(d);
    return recordAttempt(prev, d.key, d.attempt, nowMs, this.limits.maxRecordedAttempts);
  }

  /**
   * The answer once recorded: ours, or — when another instance decided this event first (a redelivery racing us) —
   * its answer, as a redelivery (the winner counts it in the metrics; also when both decided alike, as rules and
   * tier 1 always do: identical stored outcomes cannot tell whose attempt the state holds, record() can).
   */
  settle(saved: GateJobState, d: DecidedAnswer): GateOutcome {
    const won = attemptOf(saved, d.attempt.event_id);
    const a = d.attempt;
    const outcome = expandOutcome(d.ids, a, d.stored, false);
    if (!won || (!this.lostRace.has(d) && won.o === a.o)) return d.supersedes ? { ...outcome, supersedes: d.supersedes } : outcome;
    return outcomeOfAttempt(d.ids, won, true) ?? { ...outcome, redelivered: true };
  }

  private async callJudge(input: FinalAnswerInput, trace: Trace, settings: ReturnType<typeof settingsFor>['settings'], calls: GateJobState['tool_calls'], signal?: AbortSignal) {
    if (input.intentId && !Object.hasOwn(settings.intents, input.intentId) && !['SYSTEM_CONTROL_FLOW', 'CODE_FLOW_ANALYSIS', 'REPO_ORIENTATION', 'CHANGE_IMPLEMENTATION', 'DEBUG_AND_DIAGNOSE'].includes(input.intentId))
      this.warn(`gate: intent '${input.intentId}' is neither built in nor declared by the blueprint; judged without required elements`);
    const { text, allowedCodes } = judgeSetup(settings);
    const payload = buildPayload({ goal: input.goal, intentId: input.intentId, constraints: input.constraints, draft: input.draft, calls, agentSummary: trace.tool_trace_summary, maxDraftChars: this.limits.maxDraftPromptChars });
    return this.judge!.judge({
      system: JUDGE_SYSTEM,
      prompt: renderJudgePrompt(text, settings.prompt, payload),
      model: settings.model,
      timeoutMs: settings.judgeTimeoutMs ?? this.limits.judgeTimeoutMs,
      allowedCodes,
      signal,
    });
  }

  /**
   * The pre-tool gate (docs/gate.md "Tool calls"): blocks a call that a tier-1 rule forbids, a workflow step
   * taken out of order, and any tool call of a job in rewrite-only state (§9.7: no tools). Reads the job
   * state; records nothing (recordToolCall does, once the call's fate is known). A call without job_id is checked
   * against an empty history and the agent's rewrite-only jobs (D45).
   */
  async checkToolCall(trace: Trace, agent: AgentInfo, blueprint: CompiledBlueprint, nowMs: number, opts: FinalizeOptions & { eventId?: string } = {}): Promise<ToolCallCheck> {
    const jobId = optStr(trace.job_id);
    const state = jobId ? await this.o.jobStore.get({ tenant: agent.tenant, agentId: agent.id, jobId }, nowMs) : undefined;
    // D45: a call without job_id may belong to any job of the agent, so its rewrite-only jobs hold it too. Only a
    // judge gives rewrite directives: a gate without one, or an agent none of whose settings enable it, has none.
    const rewriteOnly = !jobId && this.judge && judgeCanApply(blueprint.gate ?? EMPTY_GATE, agent.skills) ? await rewriteOnlyJobs(this.o.jobStore, { tenant: agent.tenant, agentId: agent.id }, nowMs, this.limits.rewriteOnlyHoldMs) : undefined;
    return checkToolCallPure(trace, agent, blueprint, nowMs, state, this.limits, rewriteOnly?.length ? { ...opts, rewriteOnlyJobs: rewriteOnly } : opts);
  }

  /**
   * A `hook: user_feedback` trace (`job_id`, `feedback: up|down`): the job's finalization_outcome again, with
   * the feedback (the analytics row is replaced). Null when the job has not ended or its state expired.
   */
  async userFeedback(trace: Trace, agent: AgentInfo, nowMs: number): Promise<FinalizationOutcomeEvent | null> {
    return feedbackAgainst(await this.o.jobStore.get(feedbackKey(trace, agent), nowMs), trace);
  }

  /**
   * Records a decided tool call of a job (`ran`: it was allowed, so it is evidence and a workflow step). No job_id:
   * nothing. `blueprint`: the one the call was checked against — its workflows' completed steps are kept in the
   * job beyond the newest calls (without it, the steps are read from the newest calls only).
   */
  async recordToolCall(trace: Trace, agent: AgentInfo, nowMs: number, eventId: string, ran: boolean, blueprint: CompiledBlueprint | undefined): Promise<GateJobState | undefined> {
    const jobId = optStr(trace.job_id);
    if (!jobId || typeof trace.tool !== 'string') return undefined;
    const key = { tenant: agent.tenant, agentId: agent.id, jobId };
    const call = { event_id: eventId, tool: trace.tool, ts_ms: nowMs, blocked: !ran, ...toolCallFacts(trace) };
    const workflows = workflowSteps(blueprint);
    return this.o.jobStore.update(key, nowMs, (prev) => recordToolCall(prev, key, call, nowMs, this.limits.maxRecordedToolCalls, workflows));
  }
}

/**
 * What a judge call of one settings object always uses: the prompt text with its custom codes and intents and
 * the reason codes it may answer. Compiled settings do not change, so it is made once per settings object
 * instead of once per final answer.
 */
const judgeSetups = new WeakMap<GateSettingsOf, { text: string; allowedCodes: ReadonlySet<string> }>();
type GateSettingsOf = ReturnType<typeof settingsFor>['settings'];
function judgeSetup(settings: GateSettingsOf): { text: string; allowedCodes: ReadonlySet<string> } {
  let s = judgeSetups.get(settings);
  if (!s) {
    const text = promptWithAdditions(settings.prompt, {
      codes: settings.customReasonCodes.map((c) => c.code),
      hardFailCodes: settings.customReasonCodes.filter((c) => c.hardFail).map((c) => c.code),
      intents: Object.entries(settings.intents).map(([id, requiredElements]) => ({ id, requiredElements })),
    });
    s = { text, allowedCodes: new Set([...BUILTIN_REASON_CODES, ...settings.customReasonCodes.map((c) => c.code)]) };
    judgeSetups.set(settings, s);
  }
  return s;
}

/** The step lists of a blueprint's workflows (what recordToolCall keeps progress on), made once per blueprint. */
const stepLists = new WeakMap<CompiledBlueprint, readonly (readonly string[])[]>();
function workflowSteps(blueprint: CompiledBlueprint | undefined): readonly (readonly string[])[] {
  if (!blueprint?.gate || blueprint.gate.workflows.length === 0) return [];
  let l = stepLists.get(blueprint);
  if (!l) stepLists.set(blueprint, (l = blueprint.gate.workflows.map((w) => w.steps)));
  return l;
}

/** The job a `user_feedback` trace is about (STEWARD_GATE_INPUT when it names none or its feedback is not up/down). */
export function feedbackKey(trace: Trace, agent: AgentInfo): GateJobKey {
  const bad = (m: string) => new StewardError('STEWARD_GATE_INPUT', `user_feedback trace ${JSON.stringify(trace.trace_id)}: ${m}`);
  const jobId = optStr(trace.job_id);
  if (!jobId) throw bad("missing 'job_id'");
  if (trace.feedback !== 'up' && trace.feedback !== 'down') throw bad("'feedback' must be 'up' or 'down'");
  return { tenant: agent.tenant, agentId: agent.id, jobId };
}

/** userFeedback as a pure function of the job's state (feedbackKey validated the trace). */
export function feedbackAgainst(state: GateJobState | undefined, trace: Trace): FinalizationOutcomeEvent | null {
  const ended = state && lastEndedOutcome(state, state.attempts);
  return ended ? { ...ended, user_feedback: trace.feedback as 'up' | 'down' } : null;
}
