/**
 * GET /v1/stream/traces (docs/http.md "Stream"): server-sent events of the key's agent's decisions, verdicts and gate
 * results, resumable with Last-Event-ID, at most `maxStreams` open per API key. The loop itself is stream-pump.ts;
 * this is the route: the per-key count, the resume id, the hijacked response and the loops the ingress waits for
 * when it closes.
 */
import type { FastifyInstance } from 'fastify';
import type { KeyShare } from './in-flight-budget.js';
import type { KeyedRegistry } from './ingress-auth.js';
import { pumpStream } from './stream-pump.js';

/** The agent's event feed by resumable id (the ingress's `stream` dependency). */
export interface StreamFeed {
  head(agentId: string): Promise<string>;
  read(agentId: string, lastId: string): Promise<{ id: string; event: string; data: string }[]>;
}

/** What the route shares with the ingress: the per-key counts, and the loops close() waits for (one per open stream). */
export interface StreamRouteState {
  keyStreams: KeyShare;
  loops: Set<Promise<void>>;
  /** Aborted when the ingress closes: every loop ends, and no new one starts. */
  signal: AbortSignal;
  clientTimeoutMs: number;
  maxStreams: number;
}

export function registerStreamRoute(app: FastifyInstance, feed: StreamFeed | undefined, registry: () => KeyedRegistry, common: Record<string, unknown>, s: StreamRouteState): void {
  app.get(
    '/v1/stream/traces',
    { schema: { ...common, summary: "Server-sent events of the key's agent's decisions (trace_processed), verdicts (feedback_generated) and gate results (gate_result); resumable with Last-Event-ID", headers: { type: 'object', properties: { 'last-event-id': { type: 'string', maxLength: 64 } } } } },
    async (req, reply) => {
      if (!feed) return reply.code(404).send({ error: 'STEWARD_HTTP_NOT_FOUND', message: 'the stream is not served by this process' });
      // Counted from here (before head() is awaited), so streams opened together cannot all pass the check.
      const key = String(req.headers['x-api-key']);
      if (s.keyStreams.get(key) >= s.maxStreams) return reply.code(429).header('retry-after', '5').send({ error: 'STEWARD_HTTP_KEY_STREAMS', message: `this key has ${s.maxStreams} streams open (http.limits.max_streams_per_key)` });
      const releaseStream = s.keyStreams.take(key, 1);
      try {
        const agent = req.agent!.id;
        const asked = req.headers['last-event-id'];
        const last = typeof asked === 'string' && /^\d{1,20}-\d{1,20}$/.test(asked) ? asked : await feed.head(agent);
        reply.hijack();
        const res = reply.raw;
        // A client gone while head() was awaited (or the ingress closing meanwhile) gets no loop (audit 24-r2 finding 1).
        if (req.raw.destroyed || res.destroyed || s.signal.aborted) return void res.destroy();
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
        res.write(`event: connected\ndata: ${JSON.stringify({ agent_id: agent, last_event_id: last })}\n\n`);
        const loop = pumpStream(req.raw, res, { feed, agent, key, last, registry, clientTimeoutMs: s.clientTimeoutMs, signal: s.signal });
        s.loops.add(loop);
        try {
          await loop;
        } finally {
          s.loops.delete(loop);
        }
      } finally {
        releaseStream();
      }
    },
  );
}
