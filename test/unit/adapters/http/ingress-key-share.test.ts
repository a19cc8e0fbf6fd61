// One API key's share of the ingress's shared budgets (docs/http.md "Backpressure"): its reserved request bytes and
// its open SSE streams. Before audit #24 r4 (finding 2) one key's gzip uploads that never sent a body took the whole
// in-flight budget (every other agent got 503 on every POST route) and one key could open streams without bound.
// The server is real (listening on a port, raw sockets for the stalled uploads); its sends and registry are the test's.
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { AgentInfo } from '../../../../src/engine/types.js';

const MAX_BODY = 10_000;
const agent = (id: string, key: string): AgentInfo => ({ id, tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash(key)], registered: true });

let ingress: HttpIngress | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  sockets.splice(0).forEach((s) => s.destroy());
  await ingress?.close();
  ingress = undefined;
});

async function start(o: { perKey?: number; streams?: number } = {}) {
  const registry = createAgentRegistry([agent('hog', 'hog-key'), agent('other', 'other-key')]);
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: MAX_BODY, maxInFlightBytes: 8 * MAX_BODY, maxInFlightBytesPerKey: o.perKey, maxStreamsPerKey: o.streams, ratePerSecond: 10_000, clientTimeoutMs: 10_000 },
    {
      registry: () => registry,
      publish: async () => undefined,
      publishBatch: async () => undefined,
      // head() takes a while: streams opened together are all inside the handler at once.
      stream: { head: () => new Promise((r) => setTimeout(() => r('0-0'), 50)), read: async () => [] },
    },
  );
  await ingress.ready();
  return ingress.listen();
}

/** A gzipped batch whose headers arrive and whose body never does; resolves with what the server answered, if anything, after `waitMs`. */
async function stalledUpload(port: number, key: string, waitMs = 300): Promise<string> {
  const sock = connect(port, '127.0.0.1');
  sockets.push(sock);
  sock.on('error', () => undefined);
  let got = '';
  sock.on('data', (d: Buffer) => (got += d.toString()));
  await new Promise<void>((r) => sock.once('connect', () => r()));
  sock.write(`POST /v1/ingest/traces/batch HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\nx-api-key: ${key}\r\n\r\n`);
  await new Promise((r) => setTimeout(r, waitMs));
  return got;
}

const post = (port: number, key: string) =>
  fetch(`http://127.0.0.1:${port}/v1/ingest/traces/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-api-key': key },
    body: gzipSync(JSON.stringify({ batch_id: 'b1', events: [{ trace_id: 't1', reasoning_text: 'r' }] })),
    signal: AbortSignal.timeout(5000),
  });

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('HTTP ingress: one key\'s share of the in-flight bytes', () => {
  it('stalled gzip uploads of one key take its share (an eighth by default), not the budget: another key is still served', async () => {
    const port = await start();
    const answers = await Promise.all(Array.from({ length: 8 }, () => stalledUpload(port, 'hog-key')));
    // Before: the eight held the whole budget and this was 503 STEWARD_HTTP_BUSY for the client timeout.
    const r = await post(port, 'other-key');
    expect(r.status).toBe(200);
    // The first is admitted (a gzip body reserves max_body_bytes = the default share); the rest are refused at once.
    expect(answers.filter((a) => a === '')).toHaveLength(1);
    const refused = answers.filter((a) => a !== '');
    expect(refused).toHaveLength(7);
    for (const a of refused) {
      expect(a).toMatch(/^HTTP\/1\.1 429/);
      expect(a.toLowerCase()).toContain('retry-after: 1');
      expect(a).toContain('STEWARD_HTTP_KEY_BUSY');
    }
    // The hog's uploads gone, nothing of its share is left behind.
    sockets.splice(0).forEach((s) => s.destroy());
    await until(() => ingress!.budget.perKey.size === 0);
    expect((await post(port, 'hog-key')).status).toBe(200);
  });

  it('http.limits.max_in_flight_bytes_per_key sets the share', async () => {
    const port = await start({ perKey: 3 * MAX_BODY });
    const answers = await Promise.all(Array.from({ length: 6 }, () => stalledUpload(port, 'hog-key')));
    expect(answers.filter((a) => a === '')).toHaveLength(3);
    expect(answers.filter((a) => a.includes('STEWARD_HTTP_KEY_BUSY'))).toHaveLength(3);
    expect(ingress!.budget.perKey.get('hog-key')).toBe(3 * MAX_BODY);
  });
});

describe('HTTP ingress: one key\'s open streams', () => {
  const open = async (port: number, key: string) => {
    const ac = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/v1/stream/traces`, { headers: { 'x-api-key': key }, signal: ac.signal });
    const first = new TextDecoder().decode((await res.body!.getReader().read()).value);
    return { status: res.status, first, retryAfter: res.headers.get('retry-after'), abort: () => ac.abort() };
  };

  it('beyond http.limits.max_streams_per_key a key gets 429, also for streams opened together; other keys are not affected', async () => {
    const port = await start({ streams: 2 });
    const all = await Promise.all(Array.from({ length: 5 }, () => open(port, 'hog-key')));
    const ok = all.filter((s) => s.status === 200);
    expect(ok).toHaveLength(2);
    const refused = all.filter((s) => s.status !== 200);
    expect(refused.map((s) => s.status)).toEqual([429, 429, 429]);
    expect(refused[0]!.first).toContain('STEWARD_HTTP_KEY_STREAMS');
    expect(refused[0]!.retryAfter).not.toBeNull();
    const other = await open(port, 'other-key');
    expect(other.status).toBe(200);
    // A stream closed gives its place back.
    ok[0]!.abort();
    await until(() => ingress!.keyStreams.get('hog-key') === 1);
    const again = await open(port, 'hog-key');
    expect(again.status).toBe(200);
    for (const s of [ok[1]!, other, again]) s.abort();
    await until(() => ingress!.keyStreams.size === 0);
  });
});
