/** Shared HTTP plumbing for the LLM adapters: timeout via AbortSignal, retryable classification. */
import { StewardError } from '../../errors.js';

export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: combined });
  } catch (e) {
    if (timeout.aborted) throw new StewardError('STEWARD_LLM_TIMEOUT', `LLM call timed out after ${timeoutMs} ms`, { retryable: true, cause: e });
    if (signal?.aborted) throw new StewardError('STEWARD_LLM_TIMEOUT', 'LLM call aborted', { retryable: false, cause: e });
    throw new StewardError('STEWARD_LLM_HTTP', `LLM request failed: ${(e as Error).message}`, { retryable: true, cause: e });
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    const code = timeout.aborted ? 'STEWARD_LLM_TIMEOUT' : 'STEWARD_LLM_HTTP';
    throw new StewardError(code, `LLM response body failed: ${(e as Error).message}`, { retryable: true, cause: e });
  }
  if (!res.ok) {
    // 429 and 5xx are transient; other 4xx (auth, bad request) will not improve on retry.
    const retryable = res.status === 429 || res.status >= 500;
    throw new StewardError('STEWARD_LLM_HTTP', `LLM HTTP ${res.status}: ${text.slice(0, 200)}`, { retryable, details: { status: res.status } });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new StewardError('STEWARD_LLM_RESPONSE', `LLM returned a non-JSON body: ${text.slice(0, 80)}`, { cause: e });
  }
}

export function trimSlash(u: string): string {
  return u.replace(/\/+$/, '');
}
