/** The provider clients on the calling thread (the LLM thread uses these too: src/adapters/llm/llm-thread.ts). */
import { StewardError } from '../../errors.js';
import type { LlmClient } from '../../engine/types.js';
import { AnthropicClient } from './anthropic.js';
import { OpenAiCompatibleClient } from './openai.js';

export interface LlmSettings {
  provider?: string;
  baseUrl: string;
  apiKey?: string;
  model?: string;
}

/** `openai` (the default) or `anthropic`, checked: anything else is a configuration error. */
export function llmProvider(o: Pick<LlmSettings, 'provider'>): 'openai' | 'anthropic' {
  const provider = (o.provider ?? 'openai').trim().toLowerCase();
  if (provider === 'openai' || provider === 'anthropic') return provider;
  throw new StewardError('STEWARD_CONFIG', `llm.provider (STEWARD_LLM_PROVIDER) must be openai or anthropic, got '${provider}'`);
}

/** The client of a provider: `openai` (OpenAI-compatible /v1/chat/completions) or `anthropic`, on this thread. */
export function createDirectLlmClient(o: LlmSettings): LlmClient {
  const opts = { baseUrl: o.baseUrl, apiKey: o.apiKey || undefined, model: o.model || undefined };
  return llmProvider(o) === 'openai' ? new OpenAiCompatibleClient(opts) : new AnthropicClient(opts);
}
