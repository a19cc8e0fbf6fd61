/** OpenAI-compatible `POST {base}/v1/chat/completions` (vLLM, llama.cpp, Ollama, OpenAI, ...). */
import { StewardError } from '../../errors.js';
import type { LlmClient, LlmRequest, LlmResponse } from '../../engine/types.js';
import { postJson, trimSlash, usageOf } from './http.js';

export interface OpenAiClientOptions {
  baseUrl: string;
  apiKey?: string;
  model?: string;
}

export class OpenAiCompatibleClient implements LlmClient {
  private readonly url: string;
  constructor(private readonly o: OpenAiClientOptions) {
    const base = trimSlash(o.baseUrl);
    // Accept both `http://host` and `http://host/v1` as the base.
    this.url = base.endsWith('/v1') ? `${base}/chat/completions` : `${base}/v1/chat/completions`;
  }

  async complete(req: LlmRequest, signal?: AbortSignal): Promise<LlmResponse> {
    const t0 = performance.now();
    const model = req.model ?? this.o.model ?? 'gpt-4o-mini';
    const messages = [...(req.system ? [{ role: 'system', content: req.system }] : []), { role: 'user', content: req.prompt }];
    const body = { model, messages, temperature: req.temperature, max_tokens: req.maxTokens };
    const headers: Record<string, string> = this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {};
    const json = (await postJson(this.url, headers, body, req.timeoutMs, signal)) as {
      model?: string;
      choices?: { message?: { content?: unknown } }[];
      usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
    };
    const content = json?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new StewardError('STEWARD_LLM_RESPONSE', 'chat completion has no choices[0].message.content');
    const usage = usageOf(json.usage?.prompt_tokens, json.usage?.completion_tokens);
    return { text: content, model: json.model ?? model, latencyMs: performance.now() - t0, ...(usage && { usage }) };
  }
}
