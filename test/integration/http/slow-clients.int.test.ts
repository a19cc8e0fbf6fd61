// #24 slow clients: a client that sends its headers or body a byte at a time, or reads its SSE stream not at
// all, must not hold the ingress: it is closed after http.limits.client_timeout_ms (here 1 s) while other
// clients are served meanwhile. Before, the timeouts were fixed at 30 s and Node checked them every 30 s, and a
// stalled SSE reader held its stream loop until the socket's idle timeout. Real Kafka and Redis.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const PY = resolve('.venv-acgp/bin/python');
/** Opens the stream with a 4 KiB receive buffer, reads its first bytes, says so, then reads no more. */
const STALLED_READER = `
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /v1/stream/traces HTTP/1.1\\r\\nHost: x\\r\\nX-API-Key: slow-key\\r\\nLast-Event-ID: 0-0\\r\\nAccept: text/event-stream\\r\\n\\r\\n")
s.recv(64)
print("open", flush=True)
time.sleep(60)
`;

/** A raw connection that records what it receives and when it was closed. */
function rawClient(port: number) {
  const s = net.connect(port, '127.0.0.1');
  const state = { received: '', closed: false, socket: s };
  s.on('data', (c: Buffer) => (state.received += c.toString('latin1')));
  s.on('error', () => undefined);
  s.on('close', () => (state.closed = true));
  return state;
}

/** Writes `text` one byte every `ms` until the socket closes. */
function trickle(s: net.Socket, text: string, ms: number): NodeJS.Timeout {
  let at = 0;
  const t = setInterval(() => {
    if (s.destroyed || at >= text.length) return clearInterval(t);
    s.write(text[at++]);
  }, ms);
  return t;
}

describe('slow clients (http.limits.client_timeout_ms)', () => {
  it('a trickled request body or header block is closed after the timeout; a stalled SSE reader is dropped; others are served meanwhile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-slow-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: slow-agent\n    api_keys: ["${apiKeyHash('slow-key')}"]\n`);
    const redisPrefix = uniqueRedisPrefix('slow');
    await withPipelineEnv('http-slow', async ({ cfg: base }) => {
      const cfg = pipelineConfig(base.topics.prefix, {
        blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false },
        redis: { key_prefix: redisPrefix },
        http: { enabled: true, port: 0, limits: { client_timeout_ms: 1000 } },
      });
      const ing = await startHttpIngress(cfg, quietLogger());
      const redis = redisClient();
      const timers: NodeJS.Timeout[] = [];
      let reader: ChildProcess | undefined;
      try {
        const url = `http://127.0.0.1:${ing.port}`;
        const body = JSON.stringify({ batch_id: 'b1', event_count: 1, events: [{ trace_id: 'slow-1', final_output: 'x'.repeat(2000) }] });
        // 1. The body a byte every 100 ms (it would take > 200 s).
        const slowBody = rawClient(ing.port);
        slowBody.socket.write(`POST /v1/ingest/traces/batch HTTP/1.1\r\nHost: x\r\nX-API-Key: slow-key\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
        timers.push(trickle(slowBody.socket, body, 100));
        // 2. The headers a byte every 100 ms (slowloris).
        const slowHeaders = rawClient(ing.port);
        timers.push(trickle(slowHeaders.socket, `GET /v1/health HTTP/1.1\r\nHost: x\r\n${'X-Pad: y\r\n'.repeat(50)}\r\n`, 100));
        // Meanwhile other clients are answered.
        const health = await fetch(`${url}/v1/health`);
        expect(health.status).toBe(200);
        await waitFor(() => slowBody.closed && slowHeaders.closed, { timeoutMs: 10_000, message: 'trickling clients closed' });
        expect(slowBody.received).toMatch(/^HTTP\/1\.1 408/);
        expect(slowBody.received).not.toMatch(/"accepted"/);

        // 3. An SSE reader that never reads while 6 MB of events wait for it.
        const key = `${cfg.redis.keyPrefix}http:stream:slow-agent`;
        const big = JSON.stringify({ trace_id: 'big', agent_id: 'slow-agent', pad: 'p'.repeat(64 * 1024) });
        const pipe = redis.pipeline();
        for (let i = 0; i < 100; i++) pipe.xadd(key, '*', 'event', 'trace_processed', 'data', big);
        await pipe.exec();
        // The reader's receive buffer is set small (Node cannot): loopback buffers here grow to tens of MB and would
        // take all 6 MB, after which the heartbeat (every half client timeout, so that an idle healthy stream is not
        // cut) keeps the socket busy. Before the heartbeat followed the timeout, the socket's idle timeout dropped
        // this reader; now its waiting events must fail to drain.
        reader = spawn(PY, ['-c', STALLED_READER, String(ing.port)], { stdio: ['ignore', 'pipe', 'inherit'] });
        let said = '';
        reader.stdout!.on('data', (c: Buffer) => (said += c.toString()));
        await waitFor(() => ing.ingress.openStreams === 1 && said.includes('open'), { timeoutMs: 10_000, message: 'stream open' });
        // The socket's buffers fill, the stream's write does not drain, and the stream is given up.
        await waitFor(() => ing.ingress.openStreams === 0, { timeoutMs: 15_000, message: 'stalled stream dropped' });
        expect((await fetch(`${url}/v1/health`)).status).toBe(200);
        // A reader that reads gets the events (resuming from the start).
        const ctl = new AbortController();
        const res = await fetch(`${url}/v1/stream/traces`, { headers: { 'X-API-Key': 'slow-key', 'Last-Event-ID': '0-0' }, signal: ctl.signal });
        const rd = res.body!.getReader();
        let got = 0;
        while (got < 100) {
          const { value, done } = await rd.read();
          if (done) break;
          got += (Buffer.from(value).toString('latin1').match(/event: trace_processed/g) ?? []).length;
        }
        ctl.abort();
        expect(got).toBeGreaterThanOrEqual(100);
      } finally {
        for (const t of timers) clearInterval(t);
        reader?.kill();
        await ing.close();
        await deleteRedisPrefix(redis, redisPrefix).catch(() => undefined);
        redis.disconnect();
      }
    });
  }, 90_000);
});
