// The `acgp-steward` package entry point: the pure engine, its errors and types, and the wire contracts'
// types. It pulls in no Kafka, Redis or ClickHouse client; the agent SDK is the `acgp-steward/client` entry.
export {
  StewardError,
  StewardAggregateError,
  formatProblem,
  isRetryable,
  isStewardError,
  sortProblems,
  type SourcePosition,
  type StewardErrorCode,
  type StewardErrorOptions,
} from './errors.js';
export {
  INTERVENTIONS,
  isApproved,
  mostSevere,
  severityRank,
  type AclTier,
  type AgentInfo,
  type BlueprintScope,
  type Clock,
  type CompiledBlueprint,
  type CompiledCondition,
  type CompiledMetric,
  type CompiledRule,
  type CompiledTripwire,
  type EvalContext,
  type EvidenceRequirements,
  type FallbackOnTimeout,
  type Intervention,
  type LlmClient,
  type LlmRequest,
  type LlmResponse,
  type LlmUsage,
  type MetricOutcome,
  type MetricStatus,
  type OnFail,
  type PvsVerdict,
  type RiskThresholds,
  type RuleOutcome,
  type ScorerResult,
  type SourceRef,
  type StateStore,
  type Trace,
  type TripwireOutcome,
  type TripwireSeverity,
  type TripwireStageResult,
  type TrustDebtConfig,
  type TrustDebtLevel,
  type TrustDebtSnapshot,
  type WhenMatcher,
} from './engine/types.js';
export { DEFAULT_TIERS, defaultEngineConfig, normalizeTier, type EngineConfig, type TierSettings } from './engine/config.js';
export {
  StewardEngine,
  finalOutcome,
  type DecisionRecord,
  type EvalRecord,
  type ScoreDecisionInput,
  type ScoreRecord,
  type StewardEngineOptions,
} from './engine/steward-engine.js';
export { compileBlueprintSet, createAgentRegistry, parseAgentRegistry, type AgentRegistry, type AuthoredBlueprint, type BlueprintSet, type CompileOptions, type CompileResult } from './engine/blueprint/index.js';
export { FunctionRegistry, type DslFunction } from './engine/dsl/index.js';
export { Ed25519Signer, buildVerdict, embedInAdpStep, signVerdict, verifyVerdict, type VerifyResult } from './engine/verdict/index.js';
export { MemoryTrustDebtStore } from './engine/trust-debt/memory-store.js';
export { MemoryStateStore } from './engine/state/memory-state-store.js';
export type { CheckOutcome, DecisionMessage, RejectedInfo, ReviewMessage, RuleCheckOutcome, TrustDebtMessage, VerdictMessage } from './contracts/messages.js';
