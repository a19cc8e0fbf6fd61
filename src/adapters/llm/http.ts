/**
 * Shared HTTP plumbing for the LLM adapters: node:http(s) with keep-alive agents (measurably less
 * per-call overhead than fetch when hundreds of judge calls are in flight, see bench/scoring), a
 * timeout via AbortSignal, and retryable classification (429/5xx/timeouts/network yes, other 4xx no).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StewardError } from '../../errors.js';

const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: Infinity });
/** The most of a response body read (a judge answer is a few KB): a provider streaming without end must not exhaust memory. */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: Infinity });

function send(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === 'https:';
    const req = (https ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        agent: https ? httpsAgent : httpAgent,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
        signal,
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) {
            req.destroy(new StewardError('STEWARD_LLM_RESPONSE', `LLM response larger than ${MAX_RESPONSE_BYTES} bytes: not read`, { retryable: false }));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: { status: number; text: string };
  try {
    res = await send(new URL(url), headers, JSON.stringify(body), combined);
  } catch (e) {
    if (e instanceof StewardError) throw e;
    if (timeout.aborted) throw new StewardError('STEWARD_LLM_TIMEOUT', `LLM call timed out after ${timeoutMs} ms`, { retryable: true, cause: e });
    if (signal?.aborted) throw new StewardError('STEWARD_LLM_TIMEOUT', 'LLM call aborted', { retryable: false, cause: e });
    throw new StewardError('STEWARD_LLM_HTTP', `LLM request failed: ${(e as Error).message}`, { retryable: true, cause: e });
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
