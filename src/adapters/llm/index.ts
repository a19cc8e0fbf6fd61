import { StewardError } from '../../errors.js';
import type { LlmClient } from '../../engine/types.js';
import { AnthropicClient } from './anthropic.js';
import { OpenAiCompatibleClient } from './openai.js';

export { AnthropicClient, type AnthropicClientOptions } from './anthropic.js';
export { OpenAiCompatibleClient, type OpenAiClientOptions } from './openai.js';

export interface LlmSettings {
  provider?: string;
  baseUrl: string;
  apiKey?: string;
  model?: string;
}

/** The client of a provider: `openai` (OpenAI-compatible /v1/chat/completions, the default) or `anthropic`. */
export function createLlmClient(o: LlmSettings): LlmClient {
  const provider = (o.provider ?? 'openai').trim().toLowerCase();
  const opts = { baseUrl: o.baseUrl, apiKey: o.apiKey || undefined, model: o.model || undefined };
  if (provider === 'openai') return new OpenAiCompatibleClient(opts);
  if (provider === 'anthropic') return new AnthropicClient(opts);
  throw new StewardError('STEWARD_CONFIG', `llm.provider (STEWARD_LLM_PROVIDER) must be openai or anthropic, got '${provider}'`);
}
