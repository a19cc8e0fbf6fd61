/** Anthropic `POST {base}/v1/messages`. */
import { StewardError } from '../../errors.js';
import type { LlmClient, LlmRequest, LlmResponse } from '../../engine/types.js';
import { postJson, trimSlash, usageOf } from './http.js';

export interface AnthropicClientOptions {
  baseUrl: string;
  apiKey?: string;
  model?: string;
  apiVersion?: string;
}

export class AnthropicClient implements LlmClient {
  private readonly url: string;
  constructor(private readonly o: AnthropicClientOptions) {
    const base = trimSlash(o.baseUrl);
    this.url = base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`;
  }

  async complete(req: LlmRequest, signal?: AbortSignal): Promise<LlmResponse> {
    const t0 = performance.now();
    const model = req.model ?? this.o.model ?? 'claude-3-5-haiku-latest';
    const body = {
      model,
      max_tokens: req.maxTokens,
      temperature: req.temperature,
      ...(req.system ? { system: req.system } : {}),
      messages: [{ role: 'user', content: req.prompt }],
    };
    const headers: Record<string, string> = { 'anthropic-version': this.o.apiVersion ?? '2023-06-01' };
    if (this.o.apiKey) headers['x-api-key'] = this.o.apiKey;
    const json = (await postJson(this.url, headers, body, req.timeoutMs, signal)) as {
      model?: string;
      content?: { type?: string; text?: unknown }[];
      usage?: { input_tokens?: unknown; output_tokens?: unknown; cache_creation_input_tokens?: unknown; cache_read_input_tokens?: unknown };
    };
    const parts = Array.isArray(json?.content) ? json.content.filter((c) => c?.type === 'text' && typeof c.text === 'string') : [];
    if (parts.length === 0) throw new StewardError('STEWARD_LLM_RESPONSE', 'messages response has no text content');
    // input_tokens counts only the prompt tokens after the last cache breakpoint: the cached ones are input too.
    const u = json.usage;
    const usage = usageOf(u?.input_tokens, u?.output_tokens, u?.cache_creation_input_tokens, u?.cache_read_input_tokens);
    return { text: parts.map((p) => p.text as string).join(''), model: json.model ?? model, latencyMs: performance.now() - t0, ...(usage && { usage }) };
  }
}
