// The OpenAPI document (GET /v1/openapi.json, docs/http.md) lists every route the ingress serves — compared with the
// routes Fastify registered, collected by an onRoute hook — each with the schemas its handler is checked against:
// bodies, path and header parameters, responses, and the X-API-Key requirement. The approval routes appear only
// when their deps are given (docs/approvals.md).
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress, OPENAPI_PATH, type IngressDeps } from '../../../../src/adapters/http/ingress-server.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

const base: IngressDeps = {
  registry: () => createAgentRegistry([]),
  publish: async () => undefined,
  decide: async () => ({}),
  finalize: async () => ({}),
  stream: { head: async () => '0-0', read: async () => [] },
  query: async () => undefined,
};
const withApprovals: IngressDeps = {
  ...base,
  approvalStatus: async () => undefined,
  approvals: { approverOf: () => undefined, answer: async () => ({ status: 200, body: {} }) },
};

/** Starts an ingress with `deps`; returns its OpenAPI document and the routes Fastify serves ("METHOD /path{param}"). */
async function openapi(deps: IngressDeps | undefined) {
  ingress = new HttpIngress({ host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 }, deps);
  const served: string[] = [];
  ingress.app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) if (m !== 'HEAD' && r.url !== OPENAPI_PATH) served.push(`${m} ${r.url.replace(/:(\w+)/g, '{$1}')}`);
  });
  await ingress.ready();
  const res = await ingress.app.inject({ method: 'GET', url: OPENAPI_PATH });
  expect(res.statusCode).toBe(200);
  const doc = res.json() as { paths: Record<string, Record<string, any>> };
  const listed = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
  return { doc, paths: doc.paths, served: served.sort(), listed: listed.sort() };
}

const ROUTES = [
  'GET /v1/health',
  'GET /v1/query/feedback/{trace_id}',
  'GET /v1/query/oversight/{trace_id}',
  'GET /v1/query/scores/{trace_id}',
  'GET /v1/stream/traces',
  'POST /v1/decide',
  'POST /v1/finalize',
  'POST /v1/ingest/traces',
  'POST /v1/ingest/traces/batch',
];
const APPROVAL_ROUTES = ['GET /v1/approvals/{approval_id}', 'POST /v1/approvals/{approval_id}/approve', 'POST /v1/approvals/{approval_id}/deny'];

const bodySchema = (op: any) => op.requestBody.content['application/json'].schema;
const param = (op: any, where: string, name: string) => (op.parameters ?? []).find((p: any) => p.in === where && p.name === name);

describe('OpenAPI document: every served route, with its schemas', () => {
  it('with the routes\' deps: health, both ingest routes, decide, finalize, the three queries and the stream — nothing served unlisted', async () => {
    const { paths, served, listed } = await openapi(base);
    expect(served).toEqual(ROUTES);
    expect(listed).toEqual(served);

    expect(paths['/v1/health'].get.responses['200'].content['application/json'].schema).toMatchObject({ required: ['status'], properties: { status: { enum: ['ok'] } } });
    expect(paths['/v1/health'].get.security).toEqual([]);

    const batch = paths['/v1/ingest/traces/batch'].post;
    expect(bodySchema(batch)).toMatchObject({ required: ['events'], properties: { batch_id: { type: 'string' }, event_count: { type: 'integer' }, events: { type: 'array', items: { required: ['trace_id'] } } } });
    expect(param(batch, 'header', 'x-idempotency-key')).toMatchObject({ schema: { type: 'string', maxLength: 256 } });
    expect(batch.responses['200'].content['application/json'].schema.properties).toMatchObject({ accepted: { type: 'integer' }, duplicates: { type: 'integer' } });
    for (const code of ['4XX', '5XX']) expect(batch.responses[code].content['application/json'].schema.properties).toMatchObject({ error: { type: 'string' }, message: { type: 'string' } });

    const one = paths['/v1/ingest/traces'].post;
    expect(bodySchema(one)).toMatchObject({ required: ['trace_id'], properties: { trace_id: { minLength: 1 }, final_output: {}, documents_used: {} } });
    expect(one.responses['200'].content['application/json'].schema.properties).toHaveProperty('accepted');
    // Its batch key is the same idempotency header, bounded the same (audit #24 r4, finding 5).
    expect(param(one, 'header', 'x-idempotency-key')).toMatchObject({ schema: { type: 'string', maxLength: 256 } });

    for (const route of ['/v1/decide', '/v1/finalize']) {
      const op = paths[route].post;
      expect(bodySchema(op), route).toMatchObject({ required: ['trace_id'], properties: { timeout_ms: { type: 'integer', maximum: 60_000 }, steward: { type: 'object', properties: { hook: {}, tool: {}, args: {}, job_id: {} } } } });
      expect(op.responses['200'], route).toBeDefined();
    }
    for (const kind of ['scores', 'feedback', 'oversight']) {
      const op = paths[`/v1/query/${kind}/{trace_id}`].get;
      expect(param(op, 'path', 'trace_id'), kind).toMatchObject({ required: true, schema: { type: 'string', maxLength: 256 } });
      expect(op.responses['404'] ?? op.responses['4XX'], kind).toBeDefined();
    }
    expect(param(paths['/v1/stream/traces'].get, 'header', 'last-event-id')).toMatchObject({ schema: { type: 'string', maxLength: 64 } });
    // Every route but health carries the X-API-Key requirement.
    for (const r of ROUTES.filter((x) => x !== 'GET /v1/health')) {
      const [m, p] = r.split(' ');
      expect(paths[p][m.toLowerCase()].security, r).toEqual([{ apiKey: [] }]);
    }
  });

  it('with approvals configured: the agent\'s status route and the approvers\' approve/deny are served and listed too', async () => {
    const { paths, served, listed } = await openapi(withApprovals);
    expect(served).toEqual([...ROUTES, ...APPROVAL_ROUTES].sort());
    expect(listed).toEqual(served);
    expect(param(paths['/v1/approvals/{approval_id}'].get, 'path', 'approval_id')).toMatchObject({ required: true, schema: { maxLength: 64 } });
    for (const d of ['approve', 'deny']) {
      const op = paths[`/v1/approvals/{approval_id}/${d}`].post;
      expect(bodySchema(op), d).toMatchObject({ properties: { reason: { type: 'string', maxLength: 2000 } }, additionalProperties: false });
      expect(op.responses['409'], d).toBeDefined();
    }
  });

  it('without deps only health is served and listed', async () => {
    const { served, listed } = await openapi(undefined);
    expect(served).toEqual(['GET /v1/health']);
    expect(listed).toEqual(served);
  });
});
