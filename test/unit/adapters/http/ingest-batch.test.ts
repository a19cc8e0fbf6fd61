// The batch route's send path (docs/http.md "Idempotency", "Benchmark"): claims in one claim call, the fresh
// traces in one publishBatch call carrying the JSON that was size-checked, duplicates not sent again, and a
// failed send answered 503 with every claim of it released (so the client's retry sends them).
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { Trace } from '../../../../src/engine/types.js';
import { compileEventCheck } from '../../../../src/adapters/http/event-check.js';

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

function setup() {
  const claimed = new Set<string>();
  const calls = { claimMany: 0, publish: 0, batches: [] as { trace: Trace; json: string }[][], released: [] as string[] };
  let failNext = false;
  const registry = createAgentRegistry([{ id: 'a1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('k1')], registered: true }]);
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, ratePerSecond: 1000 },
    {
      registry: () => registry,
      publish: async () => void calls.publish++,
      publishBatch: async (items) => {
        if (failNext) {
          failNext = false;
          throw new Error('broker down');
        }
        calls.batches.push([...items]);
      },
      idempotency: {
        claim: async (agent, keys) => (calls.claimMany++, keys.map((k) => k === '' || (!claimed.has(`${agent}:${k}`) && !!claimed.add(`${agent}:${k}`)))),
        release: async (agent, keys) => void keys.forEach((k) => (claimed.delete(`${agent}:${k}`), calls.released.push(`${agent}:${k}`))),
      },
    },
  );
  return { calls, failOnce: () => (failNext = true) };
}

const batch = (ids: string[]) => ({ batch_id: 'b1', event_count: ids.length, events: ids.map((id) => ({ trace_id: id, final_output: `out ${id}`, idempotency_key: `b1_${id}` })) });
const post = (body: unknown) => ingress!.app.inject({ method: 'POST', url: '/v1/ingest/traces/batch', headers: { 'x-api-key': 'k1', 'content-type': 'application/json' }, payload: JSON.stringify(body) });

describe('batch ingest send path', () => {
  it('claims in one call and sends the fresh traces in one batch whose values are their JSON', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const r = await post(batch(['t1', 't2', 't3']));
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(calls).toMatchObject({ claimMany: 1, publish: 0 });
    expect(calls.batches).toHaveLength(1);
    expect(calls.batches[0].map((x) => x.trace.trace_id)).toEqual(['t1', 't2', 't3']);
    for (const x of calls.batches[0]) expect(JSON.parse(x.json)).toEqual(x.trace);
    expect(calls.batches[0][0].trace).toMatchObject({ agent_id: 'a1', content: 'out t1' });
    // The retry: t1..t3 are duplicates, t4 is new; only t4 is sent.
    const again = await post(batch(['t1', 't2', 't3', 't4']));
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: 3 });
    expect(calls.batches[1].map((x) => x.trace.trace_id)).toEqual(['t4']);
    // All duplicates: nothing is sent.
    await post(batch(['t1', 't4']));
    expect(calls.batches).toHaveLength(2);
  });

  it('a failed send is a 503 and releases every claim of the batch, so the retry sends them', async () => {
    const { calls, failOnce } = setup();
    await ingress!.ready();
    failOnce();
    const r = await post(batch(['u1', 'u2']));
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('2');
    expect(calls.released.sort()).toEqual(['a1:b1_u1', 'a1:b1_u2']);
    const retry = await post(batch(['u1', 'u2']));
    expect(retry.json()).toMatchObject({ accepted: 2, duplicates: 0 });
    expect(calls.batches.at(-1)!.map((x) => x.trace.trace_id)).toEqual(['u1', 'u2']);
  });

  it('a batch refused for a bad event (422) sends nothing and releases what its claim took, so the corrected retry sends every event', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const bad = batch(['v1', 'v2', 'v3']);
    bad.events[1] = { ...bad.events[1], timestamp: 'yesterday' } as (typeof bad.events)[number];
    const r = await post(bad);
    expect(r.statusCode).toBe(422);
    expect(r.json()).toMatchObject({ error: 'STEWARD_TRACE_SCHEMA', index: 1 });
    expect(r.json().message).toMatch(/\/timestamp/);
    expect(calls.batches).toHaveLength(0);
    // The claim went out with the mapping (one call) and was undone.
    expect(calls.claimMany).toBe(1);
    expect(calls.released.sort()).toEqual(['a1:b1_v1', 'a1:b1_v2', 'a1:b1_v3']);
    const retry = await post(batch(['v1', 'v2', 'v3']));
    expect(retry.json()).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(calls.batches.at(-1)!.map((x) => x.trace.trace_id)).toEqual(['v1', 'v2', 'v3']);
  });

  it('a 422 releases only the keys this request claimed, not those an earlier batch holds', async () => {
    const { calls } = setup();
    await ingress!.ready();
    await post(batch(['w1']));
    const bad = batch(['w1', 'w2']);
    bad.events[1] = { ...bad.events[1], timestamp: 'yesterday' } as (typeof bad.events)[number];
    expect((await post(bad)).statusCode).toBe(422);
    expect(calls.released).toEqual(['a1:b1_w2']);
    // w1 is still a duplicate.
    expect((await post(batch(['w1']))).json()).toMatchObject({ accepted: 0, duplicates: 1 });
  });

  it('checks each event against the documented event schema in its one pass: the same 400 answers Ajv gives, before any 422, claims released', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const bads: unknown[] = [
      null, 1, 'x', [], {}, { goal: 1 }, { trace_id: 1 }, { trace_id: 1, goal: 1 }, { trace_id: '' }, { trace_id: 'x'.repeat(257) }, { trace_id: 't', agent_type: 1 },
      { trace_id: 't', goal: null }, { trace_id: 't', user_query: [] }, { trace_id: 't', reasoning_text: 1 }, { trace_id: 't', final_output: {} },
      { trace_id: 't', context_information: [] }, { trace_id: 't', context_information: 'x' }, { trace_id: 't', documents_used: 'x' },
      { trace_id: 't', documents_used: ['a', 1] }, { trace_id: 't', timestamp: 5 }, { trace_id: 't', idempotency_key: 5 }, { trace_id: 't', idempotency_key: ['a', 'b'] },
      { trace_id: 't', idempotency_key: 'k'.repeat(513) },
    ];
    for (const bad of bads) {
      // The single-event route still has Fastify (Ajv) validate its body against the event schema: the reference.
      const single = await ingress!.app.inject({ method: 'POST', url: '/v1/ingest/traces', headers: { 'x-api-key': 'k1', 'content-type': 'application/json' }, payload: JSON.stringify(bad) });
      expect(single.statusCode, JSON.stringify(bad)).toBe(400);
      const r = await post({ events: [{ trace_id: 'ok', idempotency_key: 'ok-1' }, bad] });
      expect(r.statusCode, JSON.stringify(bad)).toBe(400);
      expect(r.json()).toEqual({ error: 'STEWARD_HTTP_BAD_REQUEST', message: single.json().message.replace(/^body/, 'body/events/1') });
    }
    // Code points, as Ajv counts: 200 emoji are 400 UTF-16 units but 200 characters (maxLength 256).
    expect((await post({ events: [{ trace_id: '\u{1F600}'.repeat(200) }] })).statusCode).toBe(200);
    // A schema error answers 400 even after an earlier event that would be a 422; nothing is sent, claims handed back.
    const sent = calls.batches.length;
    const r = await post({ events: [{ trace_id: 'y1', idempotency_key: 'y1' }, { trace_id: 'y2', timestamp: 'yesterday' }, { trace_id: 7 }] });
    expect(r.json()).toEqual({ error: 'STEWARD_HTTP_BAD_REQUEST', message: 'body/events/2/trace_id must be string' });
    expect(calls.batches).toHaveLength(sent);
    expect(calls.released).toContain('a1:y1');
    expect((await post({ events: [{ trace_id: 'y1', idempotency_key: 'y1' }] })).json()).toMatchObject({ accepted: 1 });
    // The OpenAPI document still shows the event schema as the batch's items.
    const doc = (await ingress!.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const items = doc.paths['/v1/ingest/traces/batch'].post.requestBody.content['application/json'].schema.properties.events.items;
    expect(items.required).toEqual(['trace_id']);
    expect(items.properties.trace_id).toMatchObject({ type: 'string', maxLength: 256 });
  });

  it('refuses an event schema keyword the check does not know, rather than skip it', () => {
    expect(() => compileEventCheck({ type: 'object', properties: { a: { type: 'string', pattern: '^x' } } })).toThrow(/pattern/);
  });
});
