import type { LlmClient } from '../../engine/types.js';
import { createDirectLlmClient, type LlmSettings } from './direct.js';
import { ThreadedLlmClient } from './threaded.js';

export { AnthropicClient, type AnthropicClientOptions } from './anthropic.js';
export { OpenAiCompatibleClient, type OpenAiClientOptions } from './openai.js';
export { createDirectLlmClient, type LlmSettings } from './direct.js';
export { ThreadedLlmClient } from './threaded.js';

/**
 * The client of a provider: `openai` (OpenAI-compatible /v1/chat/completions, the default) or `anthropic`.
 * `thread: true` (llm.thread): the HTTP exchanges run on a worker thread of their own (docs/pipeline.md "Gate stage").
 */
export function createLlmClient(o: LlmSettings & { thread?: boolean }): LlmClient {
  return o.thread ? new ThreadedLlmClient(o) : createDirectLlmClient(o);
}
