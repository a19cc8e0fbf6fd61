// Blueprints: authored files in, a compiled, selectable set out (compile-set.ts runs the stages).
export { BASELINE_REF, BUILTIN_BASELINE_FILE, compileBlueprintSet, type CompileOptions, type CompileResult } from './compile-set.js';
export type { AuthoredBlueprint } from './authored.js';
export type { BlueprintSet } from './select.js';
export { createBlueprintSet, precedence, scopeMatches } from './select.js';
export { effectiveThresholds, riskToIntervention } from './thresholds.js';
export { parseAgentRegistry, createAgentRegistry, type AgentRegistry } from './registry.js';
export { PROFILES, type CtqProfile } from './profiles.js';
export { BASELINE_YAML, BLUEPRINT_SCHEMA } from './embedded.js';
export { parseSource, type SourceDoc } from './source.js';
export { parseRef, resolveVersion, splitId } from './versions.js';
export { diffBlueprints, actualBump, type Change, type ChangeClass, type Bump, type DiffResult } from './diff.js';
