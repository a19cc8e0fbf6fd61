/**
 * The small interfaces through which state, clock and LLM come into the pure engine: adapters implement them,
 * tests pass in-memory ones.
 */

// ───────────────────────────── state and clock ─────────────────────────────

/** Per-agent/tenant state used by stateful DSL functions (exceeds_rate, storage.get). */
export interface StateStore {
  /** Reads a value previously stored under the agent/tenant namespace. */
  get(namespace: string, key: string): Promise<unknown>;
  set?(namespace: string, key: string, value: unknown): Promise<void>;
  /**
   * Sliding-window rate: records one hit identified by `hitId` (idempotent per id) at `nowMs`
   * and returns the number of hits within (nowMs - windowMs, nowMs]. Atomic across instances.
   */
  hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number>;
}

export interface Clock {
  nowMs(): number;
}

// ───────────────────────────── LLM ─────────────────────────────

export interface LlmRequest {
  model?: string;
  system?: string;
  prompt: string;
  temperature: number;
  maxTokens: number;
  timeoutMs: number;
}

export interface LlmResponse {
  text: string;
  model?: string;
  latencyMs: number;
  /** Tokens the provider reported for the call (its `usage`); absent when it reported none. */
  usage?: LlmUsage;
}

/** A call's token counts as the provider reported them: the prompt (input) and the completion (output). */
export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Implemented by adapters (OpenAI-compatible, Anthropic); the engine only sees this. */
export interface LlmClient {
  complete(req: LlmRequest, signal?: AbortSignal): Promise<LlmResponse>;
  /** Releases what the client holds beyond its calls (the LLM thread of llm.thread); absent = nothing to release. */
  close?(): Promise<void>;
}
