// Audit #24 r2, finding 4: a gzipped body is decoded on the thread pool, so a client that resets right after sending
// it can be gone — its reservation of the in-flight byte budget freed — before the handler runs. The handler then
// sent the batch (or made the decide/finalize) with its bytes counted by nobody: with Kafka slow, any number of
// such sends piled up past http.limits.max_in_flight_bytes. Now work is begun only under a live reservation, so
// with a budget of one gzipped body at most one send (or finalize) is ever in flight, whatever the clients do.
// The server is real (listening, real sockets); its sends, finalize and registry are the test's.
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { AgentInfo } from '../../../../src/engine/types.js';

const MAX_BODY = 10_000;
const agent: AgentInfo = { id: 'cg-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('cg-key')], registered: true };

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

/** An ingress whose budget is one gzipped body (a gzip body reserves max_body_bytes); its sends and finalizes wait for the test. */
async function start() {
  const registry = createAgentRegistry([agent]);
  const held: (() => void)[] = [];
  let sent = 0;
  let finalizes = 0;
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: MAX_BODY, maxInFlightBytes: MAX_BODY, ratePerSecond: 10_000, clientTimeoutMs: 5000 },
    {
      registry: () => registry,
      publish: async () => undefined,
      publishBatch: async (items) => {
        await new Promise<void>((r) => held.push(r));
        sent += items.length;
      },
      finalize: async (t) => {
        finalizes++;
        await new Promise<void>((r) => held.push(r));
        return { trace_id: t.trace_id, action: 'finalize' };
      },
    },
  );
  await ingress.ready();
  const port = await ingress.listen();
  /** Writes a whole gzipped request on a raw socket and resets the connection at once. */
  const sendAndHangUp = (path: string, body: unknown) =>
    new Promise<void>((resolve) => {
      const b = gzipSync(JSON.stringify(body));
      const s = connect(port, '127.0.0.1', () => {
        s.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\nx-api-key: cg-key\r\ncontent-length: ${b.length}\r\n\r\n`);
        s.write(b, () => {
          s.resetAndDestroy();
          resolve();
        });
      });
      s.on('error', () => undefined);
    });
  const post = (path: string, body: unknown) =>
    fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-api-key': 'cg-key' }, body: gzipSync(JSON.stringify(body)), signal: AbortSignal.timeout(5000) });
  return { sendAndHangUp, post, heldCount: () => held.length, release: () => held.splice(0).forEach((r) => r()), sent: () => sent, finalizes: () => finalizes };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('HTTP ingress: a client gone before its handler ran', () => {
  it('gzipped batches reset by their clients never send more than the budget holds; a later batch is answered', async () => {
    const s = await start();
    for (let i = 0; i < 10; i++) await s.sendAndHangUp('/v1/ingest/traces/batch', { batch_id: `g${i}`, event_count: 1, events: [{ trace_id: `g${i}`, reasoning_text: 'r'.repeat(500) }] });
    await settle(500);
    // Before the fix: all ten sends in flight (each freed its bytes at the reset, then sent anyway).
    expect(s.heldCount()).toBeLessThanOrEqual(1);
    // Whatever was sent was counted: once it ends the budget is whole again, and a batch from a client that stays is sent.
    s.release();
    await settle(50);
    const answer = s.post('/v1/ingest/traces/batch', { batch_id: 'stays', event_count: 1, events: [{ trace_id: 'stays', reasoning_text: 'r' }] });
    await expect.poll(() => s.heldCount(), { timeout: 5000 }).toBe(1);
    s.release();
    expect((await answer).status).toBe(200);
  });

  it('gzipped finalize requests reset by their clients: at most one finalize at a time, held until it ends', async () => {
    const s = await start();
    for (let i = 0; i < 10; i++) await s.sendAndHangUp('/v1/finalize', { trace_id: `f${i}`, final_output: 'done', steward: { job_id: 'j' } });
    await settle(500);
    // Before the fix: ten finalizes begun, none holding the budget (a decide or finalize never held its bytes).
    expect(s.finalizes()).toBeLessThanOrEqual(1);
    s.release();
    await settle(50);
    const answer = s.post('/v1/finalize', { trace_id: 'f-stays', final_output: 'done', steward: { job_id: 'j' } });
    await expect.poll(() => s.heldCount(), { timeout: 5000 }).toBe(1);
    s.release();
    const r = await answer;
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ trace_id: 'f-stays', action: 'finalize' });
  });
});
