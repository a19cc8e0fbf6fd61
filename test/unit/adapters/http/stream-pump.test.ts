// GET /v1/stream/traces's loop (src/adapters/http/stream-pump.ts, docs/http.md "Stream" and "Slow clients"), audit
// 24-r2 findings 1 and 6: a client that hangs up while the route awaits the feed's head leaves no loop behind (before,
// it polled the feed for ever, outliving ingress.close()); a heartbeat the socket does not take ends the stream; an
// idle healthy stream outlives a client timeout under 15 s (before, the fixed 15 s heartbeat let the socket's idle
// timeout cut it). A real server on a real port and real sockets; the feed is the test's.
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { heartbeatMs, pumpStream } from '../../../../src/adapters/http/stream-pump.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { AgentInfo } from '../../../../src/engine/types.js';

const agent: AgentInfo = { id: 'sp-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('sp-key')], registered: true };
const registry = createAgentRegistry([agent]);

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (cond: () => boolean, ms = 5000, what = 'condition') => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms`);
    await sleep(10);
  }
};

/** An ingress whose feed's head() takes `headMs` and whose reads are counted (no events). */
async function start(o: { headMs?: number; clientTimeoutMs?: number } = {}) {
  const state = { reads: 0 };
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 10_000, ratePerSecond: 10_000, clientTimeoutMs: o.clientTimeoutMs ?? 30_000 },
    {
      registry: () => registry,
      publish: async () => undefined,
      stream: {
        head: () => new Promise((r) => setTimeout(() => r('0-0'), o.headMs ?? 0)),
        read: async () => {
          state.reads++;
          return [];
        },
      },
    },
  );
  await ingress.ready();
  return { port: await ingress.listen(), state, ingress };
}

describe('stream loop: clients gone before it began', () => {
  it('clients that reset while head() is awaited leave no loop; reads stop', async () => {
    const s = await start({ headMs: 300 });
    // Ten clients send their GET and reset at once (any authenticated client can do this).
    await Promise.all(
      Array.from({ length: 10 }, () => new Promise<void>((resolve) => {
        const sock = connect(s.port, '127.0.0.1', () =>
          sock.write('GET /v1/stream/traces HTTP/1.1\r\nhost: x\r\nx-api-key: sp-key\r\naccept: text/event-stream\r\n\r\n', () => {
            sock.resetAndDestroy();
            resolve();
          }),
        );
        sock.on('error', () => undefined);
      })),
    );
    // head() answers after 300 ms; whatever began then must have ended by 1.5 s.
    await sleep(1500);
    expect(s.ingress.openStreams).toBe(0);
    const reads = s.state.reads;
    await sleep(600);
    expect(s.state.reads).toBe(reads);
  });

  it('a client aborting its fetch during head() leaves no loop', async () => {
    const s = await start({ headMs: 500 });
    const ac = new AbortController();
    const p = fetch(`http://127.0.0.1:${s.port}/v1/stream/traces`, { headers: { 'x-api-key': 'sp-key' }, signal: ac.signal }).catch(() => undefined);
    setTimeout(() => ac.abort(), 100);
    await p;
    await sleep(1200);
    expect(s.ingress.openStreams).toBe(0);
  });

  it('close() ends every stream loop, also those of live clients', async () => {
    const s = await start();
    const ac = new AbortController();
    const res = await fetch(`http://127.0.0.1:${s.port}/v1/stream/traces`, { headers: { 'x-api-key': 'sp-key' }, signal: ac.signal });
    await res.body!.getReader().read();
    await until(() => s.ingress.openStreams === 1, 2000, 'stream open');
    await s.ingress.close();
    ingress = undefined;
    expect(s.ingress.openStreams).toBe(0);
    const reads = s.state.reads;
    await sleep(500);
    expect(s.state.reads).toBe(reads);
    ac.abort();
  });
});

describe('stream loop: the ingress closing', () => {
  it('an aborted signal (ingress.close()) ends a loop whose socket never reports a close', async () => {
    const res = new Writable({ write: (_c, _e, cb) => cb() }) as unknown as ServerResponse;
    const raw = new EventEmitter() as unknown as IncomingMessage;
    const ac = new AbortController();
    let reads = 0;
    const loop = pumpStream(raw, res, { feed: { read: async () => (reads++, []) }, agent: 'sp-agent', key: 'sp-key', last: '0-0', registry: () => registry, clientTimeoutMs: 30_000, signal: ac.signal });
    await sleep(300);
    ac.abort();
    const ended = await Promise.race([loop.then(() => true), sleep(1000).then(() => false)]);
    (raw as unknown as EventEmitter).emit('close');
    await loop;
    expect(ended).toBe(true);
    expect(reads).toBeGreaterThan(0);
  });
});

describe('stream loop: heartbeats', () => {
  it('the heartbeat period stays under the client timeout (at most 15 s)', () => {
    expect(heartbeatMs(30_000)).toBe(15_000);
    expect(heartbeatMs(60_000)).toBe(15_000);
    expect(heartbeatMs(5_000)).toBe(2_500);
    expect(heartbeatMs(1_000)).toBe(500);
  });

  it('an idle healthy stream outlives a client timeout of 1 s, with heartbeats', async () => {
    const s = await start({ clientTimeoutMs: 1000 });
    const ac = new AbortController();
    const res = await fetch(`http://127.0.0.1:${s.port}/v1/stream/traces`, { headers: { 'x-api-key': 'sp-key' }, signal: ac.signal });
    const reader = res.body!.getReader();
    let text = '';
    const t0 = Date.now();
    try {
      while (Date.now() - t0 < 3500) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
    } catch (e) {
      throw new Error(`stream broken after ${Date.now() - t0} ms: ${(e as Error).message}`);
    }
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3500);
    expect((text.match(/event: heartbeat/g) ?? []).length).toBeGreaterThanOrEqual(4);
    expect(s.ingress.openStreams).toBe(1);
    ac.abort();
  });

  it('a heartbeat the socket does not take ends the loop within the client timeout', async () => {
    // A response whose writes are never taken (a reader that stopped reading, its socket's buffers full) and that
    // never reports a close.
    const res = new Writable({ highWaterMark: 1, write: () => undefined }) as unknown as ServerResponse;
    const raw = new EventEmitter() as unknown as IncomingMessage;
    let reads = 0;
    const t0 = Date.now();
    const loop = pumpStream(raw, res, {
      feed: { read: async () => (reads++, []) },
      agent: 'sp-agent',
      key: 'sp-key',
      last: '0-0',
      registry: () => registry,
      clientTimeoutMs: 400,
    });
    const ended = await Promise.race([loop.then(() => true), sleep(3000).then(() => false)]);
    // End a loop that did not (the tree before: it wrote heartbeats into the void for ever).
    (raw as unknown as EventEmitter).emit('close');
    await loop;
    expect(ended).toBe(true);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(res.destroyed).toBe(true);
    expect(reads).toBeGreaterThan(0);
  });
});
