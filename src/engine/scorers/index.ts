export * from './types.js';
export { RuleBasedScorer } from './rule-based.js';
export { PatternMatchScorer, compilePatternParams } from './pattern-match.js';
export { SourceMatchScorer, splitClaims, isCited } from './source-match.js';
export { MapSourceRegistry, parseSourceRegistry } from './source-registry.js';
export { LlmJudgeScorer, parseJudgeAnswer, type LlmJudgeOptions } from './llm-judge.js';
export { HybridScorer } from './hybrid.js';
export { PROMPT_TEMPLATES, resolveTemplate, renderPrompt, MAX_PROMPT_FIELD_CHARS } from './prompts.js';
export { Semaphore, LruCache } from './concurrency.js';

import { HybridScorer } from './hybrid.js';
import { LlmJudgeScorer, type LlmJudgeOptions } from './llm-judge.js';
import { PatternMatchScorer } from './pattern-match.js';
import { RuleBasedScorer } from './rule-based.js';
import { SourceMatchScorer } from './source-match.js';
import { ScorerRegistry } from './types.js';

/** The five standard scorers (§7.2); `source_validator` tools map to source-match. Custom scorers register on the result. */
export function createDefaultScorerRegistry(llm: LlmJudgeOptions = {}): ScorerRegistry {
  return new ScorerRegistry()
    .register(new RuleBasedScorer())
    .register(new PatternMatchScorer())
    .register(new SourceMatchScorer())
    .register(new LlmJudgeScorer(llm))
    .register(new HybridScorer())
    .registerTool('source_validator', 'source-match')
    .registerTool('source_validator_api', 'source-match');
}
