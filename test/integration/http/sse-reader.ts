// A minimal server-sent-events reader over fetch for the ingress's GET /v1/stream/traces (the acgp client never
// sends Last-Event-ID; tests that resume pass it in `headers`).
import { expect } from 'vitest';

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export async function sseReader(url: string, headers: Record<string, string>) {
  const ctl = new AbortController();
  const res = await fetch(url, { headers, signal: ctl.signal });
  expect(res.status, `stream ${url}`).toBe(200);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const next = async (timeoutMs = 20_000): Promise<SseEvent> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = buf.indexOf('\n\n');
      if (i >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: Record<string, string> = {};
        for (const line of block.split('\n')) {
          const k = line.indexOf(':');
          if (k > 0) f[line.slice(0, k)] = line.slice(k + 1).trimStart();
        }
        return { id: f.id, event: f.event ?? 'message', data: f.data ?? '' };
      }
      if (Date.now() > deadline) throw new Error(`no event within ${timeoutMs} ms`);
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended');
      buf += dec.decode(value, { stream: true });
    }
  };
  return {
    next,
    /** The trace ids of the next `n` trace_processed events (within 20 s: heartbeats do not extend it). */
    async traces(n: number): Promise<string[]> {
      const deadline = Date.now() + 20_000;
      const ids: string[] = [];
      while (ids.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`${ids.length} of ${n} trace_processed events within 20 s: ${ids.join(', ')}`);
        const e = await next(left);
        if (e.event === 'trace_processed') ids.push((JSON.parse(e.data) as { trace_id: string }).trace_id);
      }
      return ids;
    },
    close: () => ctl.abort(),
  };
}
