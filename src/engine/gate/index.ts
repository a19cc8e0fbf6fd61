/**
 * The finalization gate (docs/gate.md): guardrail tiers, output scanning, the final alignment judge and
 * bounded replans. Pure: the LLM, the job store and event time are passed in.
 */
export * from './codes.js';
export { checkToolCallPure, type ToolCallCheckOptions } from './tool-call-check.js';
export { FinalizationGate, type DecidedAnswer, type FinalizationGateOptions, type FinalizeOptions } from './finalization-gate.js';
export { checkGateHookInput, parseFinalAnswer, type FinalAnswerInput } from './final-answer-input.js';
export { decideChunk, type DecideChunkOptions, type GateChunkItem, type GateChunkResult } from './chunk.js';
export { DEFAULT_GATE_SETTINGS, EMPTY_GATE, assembleGate, compileOwnGuardrails, workflowLimitProblems, workflowToolWarnings } from './config.js';
export { mergeFinalizationGate } from './merge-config.js';
export { MemoryGateJobStore, emptyJobState, recordAttempt, recordToolCall, attemptOf, type DecidedAttempt } from './job-state.js';
export { GateJudge, JUDGE_OUTPUT_SCHEMA, parseJudgeOutput, type JudgeAnswer, type JudgeResult } from './judge.js';
export { PROMPTS, PROMPT_A, PROMPT_B, PROMPT_LITE, REPLAN_TEMPLATE, JUDGE_SYSTEM, promptWithAdditions, renderJudgePrompt, replanDirective, type JudgePayload } from './prompts.js';
export { buildPayload, goalSentences, toolTraceSummary, toolCallFacts } from './payload.js';
export { DEFAULT_DETECTORS, scanDraft, scanToolCall, tier1Scope, type Tier1Scope } from './scan.js';
export { approvedCallEventId, recordApprovedCall, type DecidedApproval } from './approved-call.js';
export { missingWorkflowSteps, outOfOrderSteps, workflowProgress } from './workflow.js';
export { computeVerdict, effectiveFixMode, actionFor, antiLoop, interventionFor, trustDebtFor, gateDebtEvent, type JudgedDebtInput } from './decide.js';
export { judgeResultEvent, outcomeEvent, replanLedgerDraft, userIdHash } from './events.js';
export { packStored, unpackStored } from './stored-outcome.js';
export * from './types.js';
