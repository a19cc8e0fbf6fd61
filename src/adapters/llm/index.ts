import { StewardError } from '../../errors.js';
import type { LlmClient } from '../../engine/types.js';
import { AnthropicClient } from './anthropic.js';
import { OpenAiCompatibleClient } from './openai.js';

export { AnthropicClient, type AnthropicClientOptions } from './anthropic.js';
export { OpenAiCompatibleClient, type OpenAiClientOptions } from './openai.js';

/**
 * STEWARD_LLM_BASE_URL / _API_KEY / _MODEL / _PROVIDER (openai | anthropic). No base URL = no LLM:
 * returns undefined and llm metrics are skipped (DESIGN §5.13).
 */
export function llmClientFromEnv(env: NodeJS.ProcessEnv = process.env): LlmClient | undefined {
  const baseUrl = env.STEWARD_LLM_BASE_URL?.trim();
  if (!baseUrl) return undefined;
  const provider = (env.STEWARD_LLM_PROVIDER ?? 'openai').trim().toLowerCase();
  const opts = { baseUrl, apiKey: env.STEWARD_LLM_API_KEY || undefined, model: env.STEWARD_LLM_MODEL || undefined };
  if (provider === 'openai') return new OpenAiCompatibleClient(opts);
  if (provider === 'anthropic') return new AnthropicClient(opts);
  throw new StewardError('STEWARD_CONFIG', `STEWARD_LLM_PROVIDER must be openai or anthropic, got '${provider}'`);
}
