/**
 * The LLM thread's side (see threaded.ts): owns the process's real LLM client (undici, the OpenAI or Anthropic
 * protocol) and answers the main thread's calls. Messages in: `{ calls?: [id, LlmRequest][], cancels?: id[] }`;
 * out: `{ done: ThreadAnswer[] }`, the answers of one event-loop turn in one message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { LlmRequest } from '../../engine/types.js';
import { StewardError } from '../../errors.js';
import { createDirectLlmClient, type LlmSettings } from './direct.js';
import type { ThreadAnswer, ThreadIn } from './threaded.js';

const port = parentPort;
if (!port) throw new Error('llm-thread.ts runs as a worker thread only');
const client = createDirectLlmClient(workerData as LlmSettings);
const inFlight = new Map<number, AbortController>();
let out: ThreadAnswer[] = [];

function answer(a: ThreadAnswer): void {
  inFlight.delete(a.id);
  // Every answer of this turn goes in one message: a message per answer would cost the main thread more.
  if (out.length === 0) setImmediate(flush);
  out.push(a);
}

function flush(): void {
  const done = out;
  out = [];
  port!.postMessage({ done });
}

function call(id: number, req: LlmRequest): void {
  const ac = new AbortController();
  inFlight.set(id, ac);
  client.complete(req, ac.signal).then(
    (res) => answer({ id, text: res.text, ...(res.model !== undefined && { model: res.model }), ...(res.usage && { usage: res.usage }) }),
    (e: unknown) => {
      const err = e instanceof StewardError ? e : new StewardError('STEWARD_LLM_HTTP', `LLM request failed: ${(e as Error)?.message ?? String(e)}`, { retryable: true });
      answer({ id, error: { code: err.code, message: err.message, retryable: err.retryable, ...(err.details && { details: err.details }) } });
    },
  );
}

port.on('message', (m: ThreadIn) => {
  if (m.ping) port.postMessage({ ready: true });
  // The main thread has already answered its caller for a cancelled call: the abort only ends the exchange.
  for (const id of m.cancels ?? []) inFlight.get(id)?.abort(new StewardError('STEWARD_LLM_TIMEOUT', 'LLM call aborted', { retryable: false }));
  for (const [id, req] of m.calls ?? []) call(id, req);
});
