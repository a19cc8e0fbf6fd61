/**
 * The HTTP ingress (docs/http.md): the routes the public `acgp` Python client speaks, served by Fastify so
 * that every body is checked by the route's JSON Schema before a handler sees it, and the OpenAPI document
 * (GET /v1/openapi.json) is generated from those same schemas. An adapter: it receives its settings and its
 * collaborators through the constructor and knows nothing of the process that starts it.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { AddressInfo } from 'node:net';
import { createGunzip } from 'node:zlib';
import { setMaxListeners } from 'node:events';
import type { Readable } from 'node:stream';
import { StewardError } from '../../errors.js';
import type { AgentInfo, Trace } from '../../engine/types.js';
import { validateTrace } from '../kafka/serde.js';
import { acgpEventToTrace, type AcgpEvent } from './acgp-mapping.js';
import { Reservation } from './reservation.js';
import { InFlightBudget, KeyShare } from './in-flight-budget.js';
import { registerStreamRoute, type StreamFeed } from './stream-route.js';
import { batchIngest, INGEST_SEND_TIMEOUT_MS, sizedTraceJson, type BatchIngest, type BatchIngestDeps } from './ingest-batch.js';
import { agentForKey, KeyRateLimiter, type KeyedRegistry } from './ingress-auth.js';
import { errorSchema, eventSchema, healthSchema, ingestResponse } from './ingress-schemas.js';
import { registerQueryRoutes, type QueryFn } from './query-routes.js';
import { registerAgentApprovalRoute, registerApprovalRoutes, type ApprovalRouteDeps, type ApprovalStatusFn } from './approval-routes.js';

export interface HttpIngressOptions {
  host: string;
  port: number;
  /** PEM text; both set: HTTPS. */
  tls?: { cert: string; key: string };
  /** Largest request body in bytes; larger gets 413 (Fastify's bodyLimit). */
  maxBodyBytes: number;
  /** Fastify logs through this (a pino logger), or not at all. */
  logger?: unknown;
  /** Most events in one batch; more gets 413. */
  maxBatchEvents?: number;
  /** Requests per second per API key (burst twice that); over gets 429 + Retry-After. */
  ratePerSecond?: number;
  /** Request bytes being handled at once; beyond, 503 + Retry-After (backpressure, never unbounded memory). */
  maxInFlightBytes?: number;
  /** One API key's most of those bytes (default an eighth of them); beyond, 429 STEWARD_HTTP_KEY_BUSY + Retry-After. */
  maxInFlightBytesPerKey?: number;
  /** One API key's most open SSE streams (default 8); beyond, 429 STEWARD_HTTP_KEY_STREAMS. */
  maxStreamsPerKey?: number;
  /** Larger traces (as JSON) are refused like the stage dead-letters them (STEWARD_TRACE_TOO_LARGE). */
  maxTraceBytes?: number;
  /** Under agents.require_signature every agent must sign: none may send over HTTP (D24). */
  requireSignature?: boolean;
  /**
   * Slow clients (http.limits.client_timeout_ms, default 30 000): a request whose headers and body have not
   * all arrived by then, and a connection without progress for that long — an SSE reader that stopped
   * reading included — are closed, so no client holds a socket, a stream loop or buffered events for ever.
   */
  clientTimeoutMs?: number;
  /** A batch's send not acknowledged by then is answered 503; it goes on and settles its claims (ingest-batch INGEST_SEND_TIMEOUT_MS). */
  sendTimeoutMs?: number;
  /** How long a batch waits for keys pending under another request before answering 503 (default ingest-batch PENDING_WAIT_MS; tests). */
  pendingWaitMs?: number;
}

/** What the ingress routes need; without it only /v1/health and the OpenAPI document are served. */
export interface IngressDeps extends BatchIngestDeps {
  /** The current agent registry (hot-reloaded). */
  registry(): KeyedRegistry;
  /** The tripwire decision on the same request (StewardClient.decide: contract timeout and fallback). */
  decide?(trace: Trace, agent: AgentInfo, timeoutMs?: number): Promise<unknown>;
  /** The finalization gate's answer (StewardClient.finalize). */
  finalize?(trace: Trace, agent: AgentInfo, timeoutMs?: number): Promise<unknown>;
  /** The agent's event feed (decisions, verdicts, gate results) by resumable id (docs/http.md "Stream"). */
  stream?: StreamFeed;
  /** What the pipeline stored about one of the agent's traces (ClickHouse, read-only); undefined: not (yet) stored. */
  query?: QueryFn;
  /** Approvers answering pending approvals (docs/approvals.md), authenticated by their own API keys. */
  approvals?: ApprovalRouteDeps;
  /** An agent's own approvals (GET /v1/approvals/{id}): request and status from the approval store. */
  approvalStatus?: ApprovalStatusFn;
  now?: () => Date;
}

declare module 'fastify' {
  interface FastifyRequest {
    agent?: AgentInfo;
  }
}

/** How long close() waits for the stream loops to end (each ends within its feed read in progress). */
const STREAM_CLOSE_WAIT_MS = 5_000;

/** Where the OpenAPI document is served (docs/http.md). */
export const OPENAPI_PATH = '/v1/openapi.json';

/** An X-Idempotency-Key header that names a key: an empty one names none, so a batch's `batch_id` keys it instead. */
const headerKey = (h: string | string[] | undefined): string | undefined => (typeof h === 'string' && h !== '' ? h : undefined);

export class HttpIngress {
  readonly app: FastifyInstance;
  private listening = false;

  /** Request bytes held, in all and per API key; and each key's open streams. */
  readonly budget: InFlightBudget;
  readonly keyStreams = new KeyShare();
  private readonly limiter: KeyRateLimiter;
  /** Approvers' requests, by approver id (authenticated first): apart from the agents' buckets. */
  private readonly approverLimiter: KeyRateLimiter;
  /** The stream loops running now, one per open stream; close() aborts them and waits for them to end. */
  private readonly loops = new Set<Promise<void>>();
  private readonly closing = new AbortController();
  /** The batch routes' ingest: close() waits for the sends and claim settlements it began. */
  private ingestBatch?: BatchIngest;

  /** SSE streams being served now. */
  get openStreams(): number {
    return this.loops.size;
  }

  private get clientTimeoutMs(): number {
    return this.opts.clientTimeoutMs ?? 30_000;
  }

  constructor(
    private readonly opts: HttpIngressOptions,
    private readonly deps?: IngressDeps,
  ) {
    // Every open stream listens on it: no cap (the default warns past 10).
    setMaxListeners(0, this.closing.signal);
    this.limiter = new KeyRateLimiter(opts.ratePerSecond ?? 50);
    this.approverLimiter = new KeyRateLimiter(opts.ratePerSecond ?? 50);
    const maxInFlight = opts.maxInFlightBytes ?? 64 * 1024 * 1024;
    this.budget = new InFlightBudget(maxInFlight, opts.maxInFlightBytesPerKey ?? Math.floor(maxInFlight / 8));
    const timeout = this.clientTimeoutMs;
    // Node checks requestTimeout only every connectionsCheckingInterval (default 30 s): at a quarter of the
    // timeout, a trickling request is closed within 1.25 × the timeout.
    const checking = { connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(timeout / 4))) };
    this.app = Fastify({
      bodyLimit: opts.maxBodyBytes,
      ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key, ...checking } } : { http: checking }),
      ...(opts.logger ? { loggerInstance: opts.logger as never } : { logger: false }),
      // A client that trickles its request must not hold a socket for ever (requestTimeout: the whole request;
      // connectionTimeout: the socket's idle time, which also ends an SSE stream its reader stopped reading).
      requestTimeout: timeout,
      connectionTimeout: timeout,
      ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    }) as unknown as FastifyInstance;
  }

  /** Registers the routes; call once before listen() (or before app.inject in tests). */
  async ready(): Promise<void> {
    await this.app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: 'ACGP Governance Steward HTTP ingress', version: '1', description: 'The acgp client protocol (docs/http.md)' },
        components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
        security: [{ apiKey: [] }],
      },
    });
    this.app.setErrorHandler((err: Error & { statusCode?: number; code?: string; validation?: unknown }, _req, reply) => {
      const status = err.validation ? 400 : err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 413 : /^Z_/.test(err.code ?? '') ? 400 : (err.statusCode ?? 500);
      const error = err.validation ? 'STEWARD_HTTP_BAD_REQUEST' : status === 413 ? 'STEWARD_HTTP_BODY_TOO_LARGE' : status === 415 ? 'STEWARD_HTTP_ENCODING' : status < 500 ? 'STEWARD_HTTP_BAD_REQUEST' : 'STEWARD_HTTP_INTERNAL';
      const message = status === 413 ? `body over http.limits.max_body_bytes ${this.opts.maxBodyBytes} (after decoding)` : status < 500 ? err.message : 'internal error';
      return reply.code(status).send({ error, message });
    });
    // Node's requestTimeout ends with the header block; a body trickled a byte at a time keeps the socket busy
    // (no idle timeout) and the handler waiting. The whole request must be in within the client timeout.
    this.app.addHook('onRequest', (req, _reply, done) => {
      const raw = req.raw;
      if (raw.complete) return done();
      const timer = setTimeout(() => {
        if (raw.complete || raw.socket.destroyed) return;
        raw.socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        raw.socket.destroySoon();
      }, this.clientTimeoutMs);
      timer.unref();
      const clear = () => clearTimeout(timer);
      raw.once('end', clear);
      raw.once('close', clear);
      done();
    });
    this.app.get('/v1/health', { schema: { ...healthSchema, security: [] } }, async () => ({ status: 'ok' as const }));
    this.app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => this.app.swagger());
    if (this.deps?.approvals) registerApprovalRoutes(this.app, this.deps.approvals, (id) => this.approverLimiter.take(id));
    if (this.deps) await this.app.register(async (scoped) => this.routes(scoped, this.deps!));
    await this.app.ready();
  }

  /** The authenticated routes: identity, rate limit, gzip and backpressure hooks, then the handlers. */
  private routes(app: FastifyInstance, deps: IngressDeps): void {
    const maxBody = this.opts.maxBodyBytes;
    app.addHook('onRequest', async (req, reply) => {
      const key = req.headers['x-api-key'];
      const agent = typeof key === 'string' && key !== '' ? agentForKey(deps.registry(), key) : undefined;
      if (!agent) return reply.code(401).send({ error: 'STEWARD_HTTP_UNAUTHORIZED', message: 'unknown or revoked API key (X-API-Key)' });
      // D24: the acgp client cannot sign, and the ingress does not sign for an agent.
      if ((agent.publicKeys?.length ?? 0) > 0 || this.opts.requireSignature) {
        return reply.code(403).send({ error: 'STEWARD_AGENT_SIGNATURE', message: `agent '${agent.id}' must sign its traces: send them over Kafka (docs/security.md)` });
      }
      const wait = this.limiter.take(String(key));
      if (wait > 0) return reply.code(429).header('retry-after', String(wait)).send({ error: 'STEWARD_HTTP_RATE', message: `over ${this.opts.ratePerSecond ?? 50} requests per second for this key` });
      req.agent = agent;
    });
    app.addHook('preParsing', async (req, reply, payload) => {
      // Backpressure: the bytes a request may hold are reserved before its body is read — only a request that has a
      // body (a GET, an SSE stream among them, holds none). The reservation ends once, when the response is closed
      // (finished, or its client gone: 'close' fires either way, also for a hijacked stream or a timed-out upload)
      // and whatever the request began that still holds its bytes has settled (a batch's send: the producer keeps
      // its records until then).
      // A GET's body is never read (a stream's would otherwise hold its reservation for the stream's life).
      if (req.method === 'GET' || req.method === 'HEAD') return payload;
      const declared = Number(req.headers['content-length'] ?? NaN);
      const hasBody = (Number.isFinite(declared) && declared > 0) || req.headers['transfer-encoding'] !== undefined;
      if (!hasBody) return payload;
      const reserve = Number.isFinite(declared) && req.headers['content-encoding'] !== 'gzip' ? Math.min(declared, maxBody) : maxBody;
      const taken = this.budget.take(String(req.headers['x-api-key']), reserve);
      if (taken === 'busy') {
        reply.code(503).header('retry-after', '1').send({ error: 'STEWARD_HTTP_BUSY', message: 'the ingress is at its in-flight limit; retry' });
        return payload;
      }
      if (taken === 'key') {
        reply.code(429).header('retry-after', '1').send({ error: 'STEWARD_HTTP_KEY_BUSY', message: `this key's requests in hand hold its share of the in-flight limit (http.limits.max_in_flight_bytes_per_key ${this.budget.maxPerKey}); retry` });
        return payload;
      }
      const reservation = new Reservation(taken);
      (req as unknown as { reservation: Reservation }).reservation = reservation;
      reply.raw.once('close', () => reservation.close());
      const enc = req.headers['content-encoding'];
      if (enc === undefined || enc === 'identity') return payload;
      if (enc !== 'gzip') throw Object.assign(new Error(`unsupported Content-Encoding '${enc}'`), { statusCode: 415 });
      // Fastify's bodyLimit counts the decoded bytes read from this stream: a gzip bomb stops at max_body_bytes.
      const gunzip = createGunzip() as ReturnType<typeof createGunzip> & { receivedEncodedLength?: number };
      // Fastify checks Content-Length against the encoded bytes through this property.
      gunzip.receivedEncodedLength = 0;
      (payload as Readable).on('data', (c: Buffer) => (gunzip.receivedEncodedLength! += c.length));
      (payload as Readable).pipe(gunzip);
      return gunzip;
    });
    const maxStreams = this.opts.maxStreamsPerKey ?? 8;
    const maxEvents = this.opts.maxBatchEvents ?? 500;
    const maxTraceBytes = this.opts.maxTraceBytes ?? 900_000;
    const now = deps.now ?? (() => new Date());
    const ingestBatch = batchIngest(deps, { maxTraceBytes, now, sendTimeoutMs: this.opts.sendTimeoutMs, pendingWaitMs: this.opts.pendingWaitMs });
    this.ingestBatch = ingestBatch;
    // While the server itself holds a request whose body is in (a batch's send and pending wait, a decide, a
    // finalize waiting out the judge: each bounded by its own timeout), the socket's idle timeout — the client
    // timeout, meant for clients that stall — is off; it is back once the answer is written.
    const serverHolds = (reply: import('fastify').FastifyReply) => {
      const socket = reply.request.raw.socket as import('node:net').Socket | undefined;
      // app.inject's requests have no real socket.
      if (typeof socket?.setTimeout !== 'function') return;
      socket.setTimeout(0);
      reply.raw.once('finish', () => {
        if (!socket.destroyed) socket.setTimeout(this.clientTimeoutMs);
      });
    };
    // The request's reservation held for work it begins (undefined: none taken, a body-less request), or false: it
    // was freed because the client left before the handler ran — nothing may begin then, since the work's bytes
    // would be counted by nobody (audit #24 r2, finding 4: gzipped batches reset by their clients piled up
    // uncounted sends while Kafka was slow).
    const holdReservation = (reply: import('fastify').FastifyReply): (() => void) | undefined | false => {
      const r = (reply.request as unknown as { reservation?: Reservation }).reservation;
      return r ? (r.hold() ?? false) : undefined;
    };
    // Never read (the client is gone); it says nothing was done, as a 503 BUSY does, for the access log.
    const clientGone = (reply: import('fastify').FastifyReply) =>
      reply.code(503).header('retry-after', '1').send({ error: 'STEWARD_HTTP_BUSY', message: 'the client left before its request was handled: nothing was done' });
    const ingest = async (events: AcgpEvent[], agent: AgentInfo, batchKey: string | undefined, reply: import('fastify').FastifyReply) => {
      const release = holdReservation(reply);
      // Nothing is claimed or sent: the client's retry sends the batch.
      if (release === false) return clientGone(reply);
      serverHolds(reply);
      const answer = ingestBatch(events, agent, batchKey);
      // The batch's bytes stay reserved until its sends end, also past a 503 on the send timeout or a client gone.
      if (release) answer.then((x) => x.sent).then(release, release);
      const a = await answer;
      if (a.retryAfter) reply.header('retry-after', a.retryAfter);
      return reply.code(a.status).send(a.body);
    };
    const common = { security: [{ apiKey: [] }] };
    // The batch key's header, on both ingest routes (it is an idempotency key: bounded like one).
    const idempotencyHeaders = { type: 'object', properties: { 'x-idempotency-key': { type: 'string', maxLength: 256 } } } as const;
    app.post(
      '/v1/ingest/traces/batch',
      {
        schema: {
          ...common,
          summary: 'Ingest a batch of acgp events (the acgp client batch sender)',
          headers: idempotencyHeaders,
          body: { type: 'object', required: ['events'], properties: { batch_id: { type: 'string', maxLength: 256 }, event_count: { type: 'integer' }, events: { type: 'array', items: eventSchema } } },
          response: { 200: ingestResponse, '4xx': errorSchema, '5xx': errorSchema },
        },
      },
      async (req, reply) => {
        const body = req.body as { batch_id?: string; events: AcgpEvent[]; event_count?: number };
        if (body.events.length > maxEvents) return reply.code(413).send({ error: 'STEWARD_HTTP_BATCH_TOO_LARGE', message: `${body.events.length} events, over http.limits.max_batch_events ${maxEvents}` });
        if (body.event_count !== undefined && body.event_count !== body.events.length) return reply.code(400).send({ error: 'STEWARD_HTTP_BAD_REQUEST', message: `event_count ${body.event_count} but ${body.events.length} events` });
        const batchKey = headerKey(req.headers['x-idempotency-key']) ?? body.batch_id;
        return ingest(body.events, req.agent!, batchKey, reply);
      },
    );
    // Synchronous routes: one acgp event, plus `steward` — contracts C1 fields the acgp event has no place
    // for (hook, tool, args, job_id, draft_answer, ...) — merged over the mapped trace; never agent_id.
    const syncBody = {
      ...eventSchema,
      properties: {
        ...eventSchema.properties,
        timeout_ms: { type: 'integer', minimum: 0, maximum: 60_000 },
        steward: { type: 'object', additionalProperties: true, properties: { hook: { type: 'string', minLength: 1 }, tool: { type: 'string' }, args: { type: 'object' }, job_id: { type: 'string' } } },
      },
    } as const;
    const sync = (kind: 'decide' | 'finalize') => async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
      const fn = kind === 'decide' ? deps.decide : deps.finalize;
      if (!fn) return reply.code(404).send({ error: 'STEWARD_HTTP_NOT_FOUND', message: `${kind} is not served by this process` });
      const { steward, timeout_ms, ...ev } = req.body as AcgpEvent & { steward?: Record<string, unknown>; timeout_ms?: number };
      const { agent_id: _ignored, ...extra } = steward ?? {};
      const hook = kind === 'finalize' ? 'final_answer' : typeof extra.hook === 'string' ? extra.hook : 'tool_call';
      // The gate answers these, never with a decision: /v1/decide would wait out its timeout and answer the fallback (D49).
      if (kind === 'decide' && (hook === 'final_answer' || hook === 'user_feedback')) return reply.code(422).send({ error: 'STEWARD_USAGE', message: `/v1/decide answers tool calls; a ${hook} is the finalization gate's: ${hook === 'final_answer' ? 'POST /v1/finalize' : 'nothing answers feedback (StewardClient.publish sends it)'} (spec-decisions D49)` });
      let trace: Trace;
      try {
        // The gate's goal (contracts C5, a string on final_answer only) is the acgp event's own `goal`; a
        // `steward.goal` wins. Without this the judge read GOAL "(not given)" (audit #24 r2, finding 7).
        const goal = kind === 'finalize' && typeof ev.goal === 'string' && ev.goal !== '' ? { goal: ev.goal } : undefined;
        trace = validateTrace({ ...acgpEventToTrace(ev, req.agent!.id, now, hook), ...goal, ...extra, hook, agent_id: req.agent!.id });
        sizedTraceJson(trace, maxTraceBytes);
      } catch (e) {
        const err = e as StewardError;
        return reply.code(422).send({ error: err.code ?? 'STEWARD_TRACE_SCHEMA', message: err.message });
      }
      // A decide or finalize whose client left before it began is not made (no answer could reach it; its retry asks
      // again); one begun holds the body's bytes until it ends, client or not.
      const release = holdReservation(reply);
      if (release === false) return clientGone(reply);
      serverHolds(reply);
      try {
        return reply.code(200).send(await fn(trace, req.agent!, timeout_ms));
      } finally {
        release?.();
      }
    };
    const syncResponse = { 200: { type: 'object', additionalProperties: true }, '4xx': errorSchema, '5xx': errorSchema };
    app.post('/v1/decide', { schema: { ...common, summary: 'The tripwire decision for one trace, on this request (StewardClient.decide: the governance contract\'s timeout and fallback)', body: syncBody, response: syncResponse } }, sync('decide'));
    app.post('/v1/finalize', { schema: { ...common, summary: 'The finalization gate\'s answer for a final_answer (StewardClient.finalize)', body: syncBody, response: syncResponse } }, sync('finalize'));
    registerStreamRoute(app, deps.stream, () => deps.registry(), common, { keyStreams: this.keyStreams, loops: this.loops, signal: this.closing.signal, clientTimeoutMs: this.clientTimeoutMs, maxStreams });
    if (deps.approvalStatus) registerAgentApprovalRoute(app, deps.approvalStatus);
    registerQueryRoutes(app, deps.query?.bind(deps), common);
    app.post(
      '/v1/ingest/traces',
      { schema: { ...common, summary: 'Ingest one acgp event', headers: idempotencyHeaders, body: eventSchema, response: { 200: ingestResponse, '4xx': errorSchema, '5xx': errorSchema } } },
      async (req, reply) => ingest([req.body as AcgpEvent], req.agent!, headerKey(req.headers['x-idempotency-key']), reply),
    );
  }

  async listen(): Promise<number> {
    await this.app.listen({ host: this.opts.host, port: this.opts.port });
    this.listening = true;
    return (this.app.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    // Every stream loop ends, also one whose socket is gone already (before, such a loop outlived the ingress).
    // Bounded: a loop waits at most for its feed read in progress.
    this.closing.abort();
    await Promise.race([Promise.allSettled([...this.loops]), new Promise((r) => setTimeout(r, STREAM_CLOSE_WAIT_MS).unref())]);
    if (!this.listening && !this.app.server.listening) {
      await this.app.close();
    } else {
      this.listening = false;
      this.app.server.closeAllConnections?.();
      await this.app.close();
    }
    // Produced keys left pending would answer 503 to retries until the stale bound, then be produced again.
    await this.ingestBatch?.idle(this.opts.sendTimeoutMs ?? INGEST_SEND_TIMEOUT_MS);
  }
}
