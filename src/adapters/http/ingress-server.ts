/**
 * The HTTP ingress (docs/http.md): the routes the public `acgp` Python client speaks, served by Fastify so
 * that every body is checked by the route's JSON Schema before a handler sees it, and the OpenAPI document
 * (GET /v1/openapi.json) is generated from those same schemas. An adapter: it receives its settings and its
 * collaborators through the constructor and knows nothing of the process that starts it.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { AddressInfo } from 'node:net';

export interface HttpIngressOptions {
  host: string;
  port: number;
  /** PEM text; both set: HTTPS. */
  tls?: { cert: string; key: string };
  /** Largest request body in bytes; larger gets 413 (Fastify's bodyLimit). */
  maxBodyBytes: number;
  /** Fastify logs through this (a pino logger), or not at all. */
  logger?: unknown;
}

/** Where the OpenAPI document is served (docs/http.md). */
export const OPENAPI_PATH = '/v1/openapi.json';

const healthSchema = {
  summary: 'The ingress is up',
  response: { 200: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } },
} as const;

export class HttpIngress {
  readonly app: FastifyInstance;
  private listening = false;

  constructor(private readonly opts: HttpIngressOptions) {
    this.app = Fastify({
      bodyLimit: opts.maxBodyBytes,
      ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key } } : {}),
      ...(opts.logger ? { loggerInstance: opts.logger as never } : { logger: false }),
      // A client that trickles its request must not hold a socket for ever (slow clients).
      requestTimeout: 30_000,
      connectionTimeout: 30_000,
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
    this.app.get('/v1/health', { schema: { ...healthSchema, security: [] } }, async () => ({ status: 'ok' as const }));
    this.app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => this.app.swagger());
    await this.app.ready();
  }

  async listen(): Promise<number> {
    await this.app.listen({ host: this.opts.host, port: this.opts.port });
    this.listening = true;
    return (this.app.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (!this.listening && !this.app.server.listening) {
      await this.app.close();
      return;
    }
    this.listening = false;
    this.app.server.closeAllConnections?.();
    await this.app.close();
  }
}
