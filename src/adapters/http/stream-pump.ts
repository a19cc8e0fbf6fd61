/**
 * The loop of GET /v1/stream/traces (docs/http.md "Stream"): the agent's events from the feed as server-sent
 * events, resumable by id, with heartbeats; a slow reader is waited for (never buffered for) and dropped after the
 * client timeout; a key revoked by a registry reload ends the stream. Split from ingress-server.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { agentForKey, type KeyedRegistry } from './ingress-auth.js';

/** The longest gap between two writes of an idle stream (proxies commonly cut a silent connection at 30-60 s). */
export const HEARTBEAT_MS = 15_000;
/** How long an idle stream waits before reading the feed again. */
const IDLE_POLL_MS = 200;

export interface StreamPump {
  feed: { read(agentId: string, lastId: string): Promise<{ id: string; event: string; data: string }[]> };
  agent: string;
  /** The request's API key: checked again on every pass. */
  key: string;
  /** The id after which to start. */
  last: string;
  registry(): KeyedRegistry;
  clientTimeoutMs: number;
  /** Aborted when the ingress closes: the loop ends at once (its socket may be gone already). */
  signal?: AbortSignal;
}

/**
 * The heartbeat period: under the client timeout, which is also the socket's idle timeout (ingress-server.ts
 * connectionTimeout), so an idle healthy stream is never cut by it — at a fixed 15 s a client_timeout_ms of 5 s cut
 * every idle stream after 5 s (audit 24-r2 finding 6).
 */
export function heartbeatMs(clientTimeoutMs: number): number {
  return Math.max(50, Math.min(HEARTBEAT_MS, Math.floor(clientTimeoutMs / 2)));
}

/** Writes the agent's events to `res` until the client goes, the reader stalls or the key is revoked; then ends it. */
export async function pumpStream(raw: IncomingMessage, res: ServerResponse, o: StreamPump): Promise<void> {
  // The client may have gone before the loop began (while the route awaited the feed's head): its 'close' has fired
  // already and will not again, so the state is read here, not only listened for. Before, such a loop polled the
  // feed for ever (audit 24-r2 finding 1).
  const closed = () => raw.destroyed || res.destroyed || res.writableEnded || (res.socket?.destroyed ?? false);
  const gone = () => closed() || (o.signal?.aborted ?? false);
  let open = !gone();
  const stop = () => (open = false);
  raw.on('close', stop);
  res.on('close', stop);
  o.signal?.addEventListener('abort', stop, { once: true });
  const every = heartbeatMs(o.clientTimeoutMs);
  let beat = Date.now();
  let last = o.last;
  try {
    while (open && !gone()) {
      // A key revoked (or moved to another agent) by a registry reload ends its open streams too, not only its next
      // requests: the reader is told why, and a reconnect gets the 401.
      if (agentForKey(o.registry(), o.key)?.id !== o.agent) {
        res.write(`event: error\ndata: ${JSON.stringify({ error: 'STEWARD_HTTP_UNAUTHORIZED', message: 'the API key was revoked' })}\n\n`);
        break;
      }
      let events: { id: string; event: string; data: string }[] = [];
      try {
        events = await o.feed.read(o.agent, last);
      } catch {
        events = [];
      }
      for (const e of events) {
        if (!open) break;
        if (!(await send(res, `id: ${e.id}\nevent: ${e.event}\ndata: ${e.data.replace(/\n/g, ' ')}\n\n`, o.clientTimeoutMs, o.signal))) {
          open = false;
          break;
        }
        last = e.id;
        beat = Date.now();
      }
      if (open && Date.now() - beat >= every) {
        // A heartbeat the socket does not take (gone, or a reader that stopped reading) ends the stream like an event.
        if (!(await send(res, `event: heartbeat\ndata: {}\n\n`, o.clientTimeoutMs, o.signal))) break;
        beat = Date.now();
      }
      if (open && events.length === 0) await idle(Math.min(IDLE_POLL_MS, every), o.signal);
    }
  } finally {
    raw.off('close', stop);
    res.off('close', stop);
    o.signal?.removeEventListener('abort', stop);
    if (closed()) res.destroy();
    else res.end();
  }
}

/**
 * Writes `text`; a slow reader is waited for (until the socket drains) rather than buffered for without bound, and
 * one that does not drain within the client timeout is given up on (it resumes with Last-Event-ID). False: the
 * stream is over (closed, or the reader stalled: its response is destroyed).
 */
async function send(res: ServerResponse, text: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(text)) return true;
  if (await drained(res, timeoutMs, signal)) return true;
  res.destroy();
  return false;
}

/** Resolves true once `res` drains, false when it closes (or is closed already), `signal` aborts or `ms` pass first. */
function drained(res: ServerResponse, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (res.destroyed || signal?.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const done = (v: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      signal?.removeEventListener('abort', onClose);
      resolve(v);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    res.once('drain', onDrain);
    res.once('close', onClose);
    signal?.addEventListener('abort', onClose, { once: true });
  });
}

/** Waits `ms`, or less when `signal` aborts. */
function idle(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
