/**
 * ACM v0.2 run governance (docs/acm.md): context packets, plans and guards, run state, the task PDP
 * checks, verification sheets, memory-ledger entries and replay bundles. Pure: state and time come in.
 *
 * Stage contract, per trace of an ACM hook (docs/acm.md "Stage contract"):
 *   1. check = checkAcmEvent({run, contexts}, trace, env)       rejected → DLQ; else violations
 *   2. decision = engine.decide/score (blueprint)                 final = combineIntervention(bp, check)
 *   3. {run, contexts, drafts, context} = commitAcmEvent(..., {decision: final, nowMs, tenant}, env)
 *   4. append acmPolicyDecisionDraft(...) then drafts to the ledger chain; store run, contexts, context
 */
export { canonicalJson, contentAddress, sha256Hex } from './canonical.js';
export { bindContext, contextPacketProblems, emptyContextState, isSnapshotSource, recordContextPacket, type ContextPacket, type ContextState, type ContextVersion } from './context.js';
export { compilePlan, edgeKey, validatePlanEvent, type CompiledEdge, type CompiledPlan, type Plan, type PlanEdge, type PlanEvent, type PlanSelection, type PlanTask, type PlanValidation, type PositionLookup } from './plan.js';
export { formatAcmProblem, type AcmCode, type AcmProblem } from './problems.js';
export {
  ACM_HOOKS,
  chosenPlan,
  DEFAULT_VIOLATION_INTERVENTIONS,
  emptyRunState,
  isAcmHook,
  runIdOf,
  type AcmEnv,
  type AcmOptions,
  type AcmViolation,
  type EdgeRecord,
  type RunPlan,
  type RunState,
  type TaskRecord,
} from './run-state.js';
export { checkAcmEvent, combineIntervention, commitAcmEvent, type AcmCheck, type AcmCommit, type AcmStates, type AcmViolationRecord, type CommitInput } from './run-step.js';
export { reachability } from './edges.js';
export { RecordedStateStore, RecordingStateStore, taskPolicyInput, type PolicyRequestRecord, type PolicyResponseRecord, type StateRead, type TaskPolicyInput } from './pdp.js';
export { compileVerificationSheets, runVerification, sheetsFor, type CompiledSheet, type VerificationOutcome, type VerificationSheets } from './verification.js';
export { AcmGovernor } from './governor.js';
export { ACM_SCHEMA_FILES } from './schemas.js';
export { schemaProblems, type AcmSchemaName } from './validate.js';
export { buildReplayBundle, resealManifest, type BuildBundleInput } from './bundle/build.js';
export { acmSummary, requestOf, responseOf, RunCollector, type CollectedEvent } from './bundle/collector.js';
export { policyDigest, policyFileMap, recordDigest, MANIFEST, type BundleFiles, type BundleKey, type BundleManifest, type PolicyFiles, type RunRecord } from './bundle/layout.js';
export { verifyReplayBundle, formatBundleProblem, type BundleProblem, type VerifyBundleOptions } from './bundle/verify.js';
export { createReevaluator, type Reevaluator } from './bundle/reevaluate.js';
export { exportReplayBundle, type ReplaySource, type ReplayRun } from './bundle/source.js';
export { governAcmEvent, MemoryAcmStateStore, raiseDecision, type AcmStageOutcome, type AcmStateStore, type BlueprintAnswer } from './stage.js';
export { ANSWERS_KEPT, governRunEvent, MemoryAcmRunStateStore, type AcmAnswer, type AcmRunStateStore, type RunEventOutcome, type RunEventOptions, type RunEventRecord, type StoredRun } from './state-store.js';
export { completeRunEvent, pendingRequest, requestRecord, responseChecks, responseRecord, runEventAnswer, type CompletedRunEvent, type PendingRequest, type PendingRunEvent, type RunEventAnswer } from './bundle/stream-record.js';
