/**
 * The loop of GET /v1/stream/traces (docs/http.md "Stream"): the agent's events from the feed as server-sent
 * events, resumable by id, with heartbeats; a slow reader is waited for (never buffered for) and dropped after the
 * client timeout; a key revoked by a registry reload ends the stream. Split from ingress-server.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { agentForKey, type KeyedRegistry } from './ingress-auth.js';

export interface StreamPump {
  feed: { read(agentId: string, lastId: string): Promise<{ id: string; event: string; data: string }[]> };
  agent: string;
  /** The request's API key: checked again on every pass. */
  key: string;
  /** The id after which to start. */
  last: string;
  registry(): KeyedRegistry;
  clientTimeoutMs: number;
}

/** Writes the agent's events to `res` until the client goes, the reader stalls or the key is revoked; then ends it. */
export async function pumpStream(raw: IncomingMessage, res: ServerResponse, o: StreamPump): Promise<void> {
  let open = true;
  raw.on('close', () => (open = false));
  res.on('close', () => (open = false));
  let beat = Date.now();
  let last = o.last;
  while (open) {
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
      // A slow reader: stop writing until the socket drains rather than buffering without bound, and give up on
      // one that does not drain within the client timeout (it resumes with Last-Event-ID).
      const ok = res.write(`id: ${e.id}\nevent: ${e.event}\ndata: ${e.data.replace(/\n/g, ' ')}\n\n`);
      last = e.id;
      if (!ok && !(await drained(res, o.clientTimeoutMs))) {
        res.destroy();
        open = false;
        break;
      }
    }
    if (open && Date.now() - beat > 15_000) {
      res.write(`event: heartbeat\ndata: {}\n\n`);
      beat = Date.now();
    }
    if (events.length === 0) await new Promise((r) => setTimeout(r, 200));
  }
  res.end();
}

/** Resolves true once `res` drains, false when it closes or `ms` pass first. */
function drained(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const done = (v: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(v);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

