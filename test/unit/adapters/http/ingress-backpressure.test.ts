// The ingress's in-flight byte budget (http.limits.max_in_flight_bytes, docs/http.md "Backpressure") is returned by
// every request that took from it — a stream, a client that hangs up mid-request, a timed-out upload — and is held
// by a batch until its send ends, also past the 503 of the send timeout. And a revoked key's open stream ends.
// The server is real (listening on a port, real sockets); its sends and registry are the test's.
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { AgentInfo } from '../../../../src/engine/types.js';

const MAX_BODY = 10_000;
const agent = (keys: string[]): AgentInfo => ({ id: 'bp-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: keys.map(apiKeyHash), registered: true });

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

/** An ingress whose budget holds one gzipped batch (a gzip body reserves max_body_bytes) and whose sends the test holds. */
async function start(o: { sendTimeoutMs?: number } = {}) {
  let registry = createAgentRegistry([agent(['bp-key'])]);
  const held: (() => void)[] = [];
  let hold = false;
  let sent = 0;
  let finalizeMs = 0;
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: MAX_BODY, maxInFlightBytes: MAX_BODY, ratePerSecond: 10_000, clientTimeoutMs: 400, sendTimeoutMs: o.sendTimeoutMs },
    {
      registry: () => registry,
      publish: async () => undefined,
      publishBatch: async (items) => {
        if (hold) await new Promise<void>((r) => held.push(r));
        sent += items.length;
      },
      stream: { head: async () => '0-0', read: async () => [] },
      finalize: async (t) => {
        await new Promise((r) => setTimeout(r, finalizeMs));
        return { trace_id: t.trace_id, action: 'finalize' };
      },
    },
  );
  await ingress.ready();
  const port = await ingress.listen();
  let n = 0;
  const post = (signal?: AbortSignal) =>
    fetch(`http://127.0.0.1:${port}/v1/ingest/traces/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-api-key': 'bp-key' },
      body: gzipSync(JSON.stringify({ batch_id: `b${++n}`, event_count: 1, events: [{ trace_id: `t${n}`, reasoning_text: 'r' }] })),
      // A hang fails here, not at the test's timeout.
      signal: signal ?? AbortSignal.timeout(5000),
    });
  return {
    port,
    post,
    holdSends: (on: boolean) => (hold = on),
    release: () => held.splice(0).forEach((r) => r()),
    heldCount: () => held.length,
    sent: () => sent,
    revoke: () => (registry = createAgentRegistry([agent(['other-key'])])),
    finalizeTakes: (ms: number) => (finalizeMs = ms),
  };
}

/** Awaits p, failing with the step's name after 5 s (a hang names its step, not the test's timeout). */
const step = <T>(name: string, p: Promise<T>): Promise<T> =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`step hung: ${name}`)), 5000).unref())]);

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** Opens the agent's stream, reads its first event, returns it with a way to hang up. */
async function openStream(port: number) {
  const ac = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}/v1/stream/traces`, { headers: { 'x-api-key': 'bp-key' }, signal: ac.signal });
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  return { status: res.status, first, reader, abort: () => ac.abort() };
}

describe('HTTP ingress backpressure budget', () => {
  it('streams hold none of it; hung-up streams, aborted requests and a timed-out upload return what they took', async () => {
    const s = await start();
    // Three streams open (GETs reserve nothing): a batch still fits the one-batch budget.
    const streams = await step('open streams', Promise.all([0, 1, 2].map(() => openStream(s.port))));
    expect(streams.map((x) => x.status)).toEqual([200, 200, 200]);
    expect((await s.post()).status).toBe(200);
    for (const x of streams) x.abort();
    // A client that hangs up while its batch's send is held: the budget stays taken until the send ends…
    s.holdSends(true);
    const ac = new AbortController();
    const gone = s.post(ac.signal).catch(() => undefined);
    await until(() => s.heldCount() === 1);
    ac.abort();
    await step('aborted post', gone);
    const busy = await s.post();
    expect(busy.status).toBe(503);
    expect(((await busy.json()) as { error: string }).error).toBe('STEWARD_HTTP_BUSY');
    // …and is returned once it has.
    s.holdSends(false);
    s.release();
    await until(() => s.sent() === 2);
    await new Promise((r) => setTimeout(r, 20));
    expect((await s.post()).status).toBe(200);
    // An upload that stops half-way is closed by the client timeout (400 ms) and returns its bytes.
    const sock = connect(s.port, '127.0.0.1');
    await step('connect', new Promise<void>((r) => sock.once('connect', () => r())));
    sock.write(`POST /v1/ingest/traces/batch HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-api-key: bp-key\r\ncontent-length: ${MAX_BODY}\r\n\r\n{"events": [`);
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.on('error', () => undefined);
    // Reading (a 'data' listener) is what lets this socket see the server's close: a paused socket never reads the EOF.
    let got = '';
    sock.on('data', (d: Buffer) => (got += d.toString()));
    await step('upload closed', closed);
    expect(got).toContain('408 Request Timeout');
    await new Promise((r) => setTimeout(r, 20));
    expect((await s.post()).status).toBe(200);
  });

  it('a batch answered 503 on the send timeout keeps its bytes until the send ends', async () => {
    const s = await start({ sendTimeoutMs: 150 });
    s.holdSends(true);
    const first = await s.post();
    expect(first.status).toBe(503);
    expect(((await first.json()) as { error: string }).error).toBe('STEWARD_KAFKA');
    // The producer still holds the records: no room for another batch.
    const second = await s.post();
    expect(((await second.json()) as { error: string }).error).toBe('STEWARD_HTTP_BUSY');
    s.holdSends(false);
    s.release();
    await until(() => s.sent() === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect((await s.post()).status).toBe(200);
  });
});

describe('HTTP ingress: the client timeout is for clients, not for the server\'s own waits', () => {
  it('a finalize and a batch the server holds longer than client_timeout_ms (400 ms) are answered, not cut off', async () => {
    const s = await start();
    s.finalizeTakes(1200);
    const r = await fetch(`http://127.0.0.1:${s.port}/v1/finalize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'bp-key' },
      body: JSON.stringify({ trace_id: 'f-1', final_output: 'done', steward: { job_id: 'j-1' } }),
      signal: AbortSignal.timeout(5000),
    });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ trace_id: 'f-1', action: 'finalize' });
    s.holdSends(true);
    const held = s.post();
    await until(() => s.heldCount() === 1);
    await new Promise((res) => setTimeout(res, 900));
    s.holdSends(false);
    s.release();
    expect((await held).status).toBe(200);
  });

  it('a GET with a body (a stream) reserves nothing', async () => {
    const s = await start();
    const sock = connect(s.port, '127.0.0.1');
    await step('connect', new Promise<void>((r) => sock.once('connect', () => r())));
    let got = '';
    sock.on('data', (d: Buffer) => (got += d.toString()));
    sock.on('error', () => undefined);
    sock.write(`GET /v1/stream/traces HTTP/1.1\r\nhost: x\r\nx-api-key: bp-key\r\ncontent-length: ${MAX_BODY}\r\n\r\n${'x'.repeat(MAX_BODY)}`);
    await until(() => got.includes('event: connected'));
    // The stream is open; a batch still finds the whole budget.
    expect((await s.post()).status).toBe(200);
    sock.destroy();
  });
});

describe('HTTP ingress stream and key revocation', () => {
  it('a key revoked by a registry reload ends its open stream with an error event; a reconnect gets 401', async () => {
    const s = await start();
    const st = await openStream(s.port);
    expect(st.first).toContain('event: connected');
    s.revoke();
    let text = '';
    for (;;) {
      const { value, done } = await st.reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('event: error');
    expect(text).toContain('STEWARD_HTTP_UNAUTHORIZED');
    const again = await fetch(`http://127.0.0.1:${s.port}/v1/stream/traces`, { headers: { 'x-api-key': 'bp-key' } });
    expect(again.status).toBe(401);
  });
});
