// Refusals of the ingest routes before anything is produced (docs/http.md "Errors"): a Content-Encoding other than
// gzip is 415 STEWARD_HTTP_ENCODING, a body that does not gunzip is 400, and a batch whose event_count is not the
// number of its events is 400 — each with the {error, message} body and nothing sent. The server is the real
// Fastify app (app.inject); its registry and sends are the test's.
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { AgentInfo } from '../../../../src/engine/types.js';

const agent: AgentInfo = { id: 'ref-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('ref-key')], registered: true };

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

async function start() {
  const sent: string[] = [];
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 64 * 1024, ratePerSecond: 10_000 },
    {
      registry: () => createAgentRegistry([agent]),
      publish: async (t) => void sent.push(t.trace_id),
      publishBatch: async (items) => void sent.push(...items.map((x) => x.trace.trace_id)),
    },
  );
  await ingress.ready();
  const post = (url: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
    ingress!.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-api-key': 'ref-key', ...headers }, payload });
  return { sent, post };
}

const batch = (n: number, eventCount: number) => JSON.stringify({ batch_id: 'b1', event_count: eventCount, events: Array.from({ length: n }, (_, i) => ({ trace_id: `r-${i}`, reasoning_text: 'r' })) });

describe('ingest refusals (docs/http.md "Errors")', () => {
  it('a Content-Encoding other than gzip is 415 STEWARD_HTTP_ENCODING; nothing is sent', async () => {
    const { sent, post } = await start();
    for (const enc of ['br', 'deflate', 'x-unknown']) {
      for (const url of ['/v1/ingest/traces/batch', '/v1/ingest/traces']) {
        const body = url.endsWith('batch') ? batch(1, 1) : JSON.stringify({ trace_id: 'r-1' });
        const r = await post(url, body, { 'content-encoding': enc });
        expect(r.statusCode, `${enc} ${url}`).toBe(415);
        expect(r.json()).toEqual({ error: 'STEWARD_HTTP_ENCODING', message: `unsupported Content-Encoding '${enc}'` });
      }
    }
    // The same body, plain and gzipped, is taken (the refusals are about the encoding, not the body).
    expect((await post('/v1/ingest/traces/batch', batch(1, 1))).statusCode).toBe(200);
    expect((await post('/v1/ingest/traces/batch', gzipSync(batch(1, 1)), { 'content-encoding': 'gzip', 'x-idempotency-key': 'b2' })).statusCode).toBe(200);
    expect(sent).toEqual(['r-0', 'r-0']);
  });

  it('a gzip body that does not decode (not gzip, corrupt, truncated) is 400 STEWARD_HTTP_BAD_REQUEST; nothing is sent', async () => {
    const { sent, post } = await start();
    const good = gzipSync(batch(2, 2));
    const corrupt = Buffer.from(good);
    corrupt.fill(0x55, 10, 30);
    const cases: [string, Buffer][] = [
      ['plain JSON labelled gzip', Buffer.from(batch(2, 2))],
      ['corrupt deflate data', corrupt],
      ['truncated', good.subarray(0, good.length - 12)],
    ];
    for (const [name, body] of cases) {
      const r = await post('/v1/ingest/traces/batch', body, { 'content-encoding': 'gzip' });
      expect(r.statusCode, name).toBe(400);
      const b = r.json();
      expect(b.error, name).toBe('STEWARD_HTTP_BAD_REQUEST');
      expect(typeof b.message, name).toBe('string');
    }
    expect(sent).toEqual([]);
  });

  it('event_count not matching events.length is 400 naming both; a matching or absent event_count is taken', async () => {
    const { sent, post } = await start();
    for (const [n, count] of [[2, 3], [2, 1], [0, 1], [1, 0]]) {
      const r = await post('/v1/ingest/traces/batch', batch(n, count));
      expect(r.statusCode, `${count} for ${n}`).toBe(400);
      expect(r.json()).toEqual({ error: 'STEWARD_HTTP_BAD_REQUEST', message: `event_count ${count} but ${n} events` });
    }
    // Checked after decoding, the same for a gzipped batch.
    const z = await post('/v1/ingest/traces/batch', gzipSync(batch(2, 5)), { 'content-encoding': 'gzip' });
    expect(z.statusCode).toBe(400);
    expect(z.json().message).toBe('event_count 5 but 2 events');
    expect(sent).toEqual([]);
    expect((await post('/v1/ingest/traces/batch', batch(2, 2))).json()).toMatchObject({ accepted: 2 });
    const noCount = await post('/v1/ingest/traces/batch', JSON.stringify({ batch_id: 'b3', events: [{ trace_id: 'n-1' }] }));
    expect(noCount.json()).toMatchObject({ accepted: 1 });
    expect(sent).toEqual(['r-0', 'r-1', 'n-1']);
  });

  it('an X-Idempotency-Key over 256 characters is 400 on both ingest routes; nothing is sent', async () => {
    const { sent, post } = await start();
    const long = 'k'.repeat(257);
    const one = await post('/v1/ingest/traces', JSON.stringify({ trace_id: 'i-1', reasoning_text: 'r' }), { 'x-idempotency-key': long });
    expect(one.statusCode).toBe(400);
    expect(one.json()).toMatchObject({ error: 'STEWARD_HTTP_BAD_REQUEST' });
    expect((await post('/v1/ingest/traces/batch', batch(1, 1), { 'x-idempotency-key': long })).statusCode).toBe(400);
    expect(sent).toEqual([]);
    expect((await post('/v1/ingest/traces', JSON.stringify({ trace_id: 'i-1', reasoning_text: 'r' }), { 'x-idempotency-key': 'k'.repeat(256) })).statusCode).toBe(200);
  });
});
