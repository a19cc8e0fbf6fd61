// The public surface of the `acgp-steward` package: the agent SDK, the pure engine and its contracts.
// Stage consumers and adapters are internals of `steward run` and are not exported.
export * from './errors.js';
export * from './engine/types.js';
export * from './engine/config.js';
export * from './client/index.js';
export { StewardEngine, finalOutcome, type StewardEngineOptions, type DecisionRecord, type ScoreRecord, type EvalRecord } from './engine/steward-engine.js';
export { compileBlueprintSet, createAgentRegistry, parseAgentRegistry, type CompileOptions, type CompileResult, type BlueprintSet, type AgentRegistry } from './engine/blueprint/index.js';
export { FunctionRegistry, type DslFunction } from './engine/dsl/index.js';
export { buildVerdict, signVerdict, verifyVerdict, embedInAdpStep, Ed25519Signer, type VerifyResult } from './engine/verdict/index.js';
export { MemoryTrustDebtStore } from './engine/trust-debt/memory-store.js';
export { MemoryStateStore } from './engine/state/memory-state-store.js';
