// issue #22 item 10: an LLM response body is read up to a bound; a provider (or something posing as one)
// streaming without end gets a clear, non-retryable error instead of the process's memory.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESPONSE_BYTES, postJson } from '../../../../src/adapters/llm/http.js';

let url = '';
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url === '/big') {
      // valid JSON of 8 MiB, in 1 MiB chunks (unbounded reading would parse it and answer)
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      let sent = 0;
      res.write('{"x":"');
      const more = () => {
        while (sent < 8 && res.write(chunk)) sent++;
        if (sent >= 8) res.end('"}');
        else res.once('drain', more);
      };
      res.on('close', () => (sent = 8));
      more();
    } else res.end('{"ok":true}');
  });
});

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('LLM HTTP responses are bounded', () => {
  it(`reads a normal answer, refuses one over ${MAX_RESPONSE_BYTES} bytes`, async () => {
    expect(await postJson(`${url}/ok`, {}, {}, 5000)).toEqual({ ok: true });
    await expect(postJson(`${url}/big`, {}, {}, 20_000)).rejects.toMatchObject({ code: 'STEWARD_LLM_RESPONSE', retryable: false });
  });
});
