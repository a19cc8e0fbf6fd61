/**
 * Shared HTTP plumbing for the LLM adapters: one undici Agent (a keep-alive connection pool per origin), a
 * timeout, and retryable classification (429/5xx/timeouts/network yes, other 4xx no).
 *
 * undici rather than node:http: measured per judge call against the stand-in server (bench/gate, docs/pipeline.md
 * "Gate stage"), node:http's ClientRequest/IncomingMessage streams and agent bookkeeping cost about half again as
 * much client CPU per call; fetch (undici under WHATWG streams) costs several times more. No pipelining: an LLM
 * answers in 0.2–30 s, and a call queued behind a slow one on the same connection would time out for nothing.
 */
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { StewardError } from '../../errors.js';
import type { LlmUsage } from '../../engine/types.js';

/** The most of a response body read (a judge answer is a few KB): a provider streaming without end must not exhaust memory. */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

// Timeouts are the caller's (timeoutMs, its AbortSignal): undici's own header/body timeouts (300 s) are off so a
// longer llm.timeout_ms is honoured. Idle connections are kept like node:http's keep-alive agent did.
const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

/** An adapter posts to one or two fixed URLs: parsed once. */
const targets = new Map<string, { origin: string; path: string }>();
function target(url: string): { origin: string; path: string } {
  let t = targets.get(url);
  if (!t) {
    const u = new URL(url);
    t = { origin: u.origin, path: `${u.pathname}${u.search}` };
    if (targets.size < 100) targets.set(url, t);
  }
  return t;
}

/** How postJson ends an exchange early (its timeout, the caller's signal): set by send() once it has a handle. */
interface Abortable {
  /** The reason once aborted (the exchange is ended as soon as it can be). */
  reason?: unknown;
  abort?: (reason: unknown) => void;
}

/**
 * One POST through the Agent's dispatch handler: the body is collected straight from the parser's chunks (no
 * Readable stream and async iterator per call, a measurable share of undici's request() at thousands of calls).
 */
function send(url: string, headers: Record<string, string>, body: string, stop: Abortable): Promise<{ status: number; text: string }> {
  const { origin, path } = target(url);
  return new Promise((resolve, reject) => {
    let ctl: Dispatcher.DispatchController | undefined;
    let status = 0;
    let size = 0;
    let settled = false;
    const chunks: Buffer[] = [];
    const settle = (err: unknown, v?: { status: number; text: string }) => {
      if (settled) return;
      settled = true;
      stop.abort = undefined;
      if (v) resolve(v);
      else reject(err);
    };
    stop.abort = (reason) => {
      if (ctl) ctl.abort(reason as Error);
      else settle(reason);
    };
    if (stop.reason !== undefined) return settle(stop.reason);
    agent.dispatch(
      { origin, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body },
      {
        onRequestStart(c) {
          ctl = c;
          if (stop.reason !== undefined) c.abort(stop.reason as Error);
        },
        onResponseStart(_c, statusCode) {
          status = statusCode;
        },
        onResponseData(c, chunk) {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            c.abort(new StewardError('STEWARD_LLM_RESPONSE', `LLM response larger than ${MAX_RESPONSE_BYTES} bytes: not read`, { retryable: false }));
            return;
          }
          chunks.push(chunk);
        },
        onResponseEnd() {
          settle(undefined, { status, text: chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8') });
        },
        onResponseError(_c, err) {
          settle(err);
        },
      },
    );
  });
}

export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<unknown> {
  // The timeout and the caller's signal end the exchange through one handle: no AbortController of its own per call
  // (AbortSignal creation was ~2 % of the gate stage's CPU profile, the gate's judge makes one already).
  const stop: Abortable = {};
  const abort = (reason: unknown) => {
    if (stop.reason !== undefined) return;
    stop.reason = reason ?? new Error('aborted');
    stop.abort?.(stop.reason);
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort(new StewardError('STEWARD_LLM_TIMEOUT', `LLM call timed out after ${timeoutMs} ms`, { retryable: true }));
  }, timeoutMs);
  const onAbort = () => abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  let res: { status: number; text: string };
  try {
    res = await send(url, headers, JSON.stringify(body), stop);
  } catch (e) {
    if (timedOut) throw new StewardError('STEWARD_LLM_TIMEOUT', `LLM call timed out after ${timeoutMs} ms`, { retryable: true, cause: e });
    if (signal?.aborted) throw new StewardError('STEWARD_LLM_TIMEOUT', 'LLM call aborted', { retryable: false, cause: e });
    if (e instanceof StewardError) throw e;
    const why = e instanceof undiciErrors.UndiciError && (e as Error & { cause?: Error }).cause ? `${(e as Error).message} (${(e as Error & { cause?: Error }).cause!.message})` : (e as Error).message;
    throw new StewardError('STEWARD_LLM_HTTP', `LLM request failed: ${why}`, { retryable: true, cause: e });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
  if (res.status < 200 || res.status >= 300) {
    const retryable = res.status === 429 || res.status >= 500;
    throw new StewardError('STEWARD_LLM_HTTP', `LLM HTTP ${res.status}: ${res.text.slice(0, 200)}`, { retryable, details: { status: res.status } });
  }
  try {
    return JSON.parse(res.text);
  } catch (e) {
    throw new StewardError('STEWARD_LLM_RESPONSE', `LLM returned a non-JSON body: ${res.text.slice(0, 80)}`, { cause: e });
  }
}

export function trimSlash(u: string): string {
  return u.replace(/\/+$/, '');
}

const tokens = (x: unknown): number | undefined => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : undefined);

/**
 * A response's token usage from its wire fields (input, output, then further input counts such as Anthropic's
 * cached prompt tokens, added to the input). Undefined unless both input and output are whole non-negative
 * numbers: a provider that reports no usage (or garbage) gives no token count rather than a wrong one.
 */
export function usageOf(input: unknown, output: unknown, ...moreInput: unknown[]): LlmUsage | undefined {
  const i = tokens(input);
  const o = tokens(output);
  if (i === undefined || o === undefined) return undefined;
  return { inputTokens: moreInput.reduce<number>((n, x) => n + (tokens(x) ?? 0), i), outputTokens: o };
}
