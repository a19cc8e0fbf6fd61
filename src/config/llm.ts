/** The LLM client of the configuration (settings llm.*; their variables STEWARD_LLM_*). */
import { createLlmClient } from '../adapters/llm/index.js';
import type { LlmClient } from '../engine/types.js';
import { SETTINGS } from './settings.js';
import type { StewardConfig } from './steward-config.js';

/** No base URL = no LLM: undefined, and llm metrics are skipped (docs/spec-decisions.md). */
export function llmClientFor(llm: Pick<NonNullable<StewardConfig['llm']>, 'baseUrl' | 'apiKey' | 'model'> & { provider?: string; thread?: boolean } | undefined): LlmClient | undefined {
  return llm ? createLlmClient(llm) : undefined;
}

/** The offline commands' LLM, from the environment alone (STEWARD_LLM_BASE_URL, _API_KEY, _MODEL, _PROVIDER). */
export function llmClientFromEnv(env: NodeJS.ProcessEnv = process.env): LlmClient | undefined {
  const text = (path: keyof typeof SETTINGS): string | undefined => {
    const name = SETTINGS[path].env;
    const v = name ? env[name]?.trim() : undefined;
    return v ? v : undefined;
  };
  const baseUrl = text('llm.base_url');
  if (!baseUrl) return undefined;
  return createLlmClient({ provider: text('llm.provider'), baseUrl, apiKey: text('llm.api_key'), model: text('llm.model') });
}
