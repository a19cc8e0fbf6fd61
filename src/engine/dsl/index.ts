/**
 * Condition DSL (ACGP-1004 §9.4): parse → compile → evaluate. `compileCondition` accepts both written
 * forms and returns every problem it can find with a path and an offset; the result evaluates
 * synchronously unless a stateful function is used.
 */
export type { DslLimits, DslProblem } from './ast.js';
export { DEFAULT_DSL_LIMITS } from './ast.js';
export { FunctionRegistry, BUILTIN_FUNCTIONS, STATEFUL_FUNCTIONS, type DslFunction, type DslParam, type DslType } from './functions.js';
export { compileWhen } from './when.js';
export { ENTITY_TYPES, ENTITY_DETECTORS, type EntityType } from './entities.js';
export { BUILTIN_PATTERNS } from './patterns.js';
export { createNetworkMatcher, type NetworkMatcher } from './network.js';
export { parseDuration } from './literals.js';
export { renderCondition } from './structured.js';
export { compileCondition, dslOptionsFromConfig, type CompileConditionResult, type DslCompileOptions } from './condition.js';
export { compileGuard, guardContext, type CompiledGuard, type GuardFacts, type GuardProblem, type GuardProblemCode, type GuardRef, type GuardScope } from './guard.js';
