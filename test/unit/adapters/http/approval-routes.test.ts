/**
 * The approvers' route authenticates before it rate-limits, and limits by approver id in a limiter of its own
 * (review finding 7 of issue #25): unknown keys never get a bucket (nor a 429: before, the third request with
 * the same made-up key was refused with 429, and 100 000 made-up keys cleared every agent's bucket), and two keys
 * of one approver share one bucket.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

const KEYS: Record<string, string> = { 'alice-key-1': 'alice', 'alice-key-2': 'alice', 'bob-key': 'bob' };

async function start(answered: string[]) {
  // 1 request per second, burst 2: the third within a second is refused
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 65536, ratePerSecond: 1 },
    {
      registry: () => createAgentRegistry([], 'ACL-2'),
      publish: async () => undefined,
      approvals: {
        approverOf: (key) => KEYS[key],
        answer: async (key, id) => (answered.push(`${KEYS[key]}:${id}`), { status: 200, body: { approval_id: id } }),
      },
    },
  );
  await ingress.ready();
  return (key: string, id = 'ap-1') => ingress!.app.inject({ method: 'POST', url: `/v1/approvals/${id}/approve`, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: '{}' });
}

describe('approval route: authenticate, then limit per approver', () => {
  it('unknown keys are 401 every time, never rate-limited (no bucket is made for them)', async () => {
    const answered: string[] = [];
    const post = await start(answered);
    for (let i = 0; i < 5; i++) expect((await post('guess')).statusCode).toBe(401);
    for (let i = 0; i < 5; i++) expect((await post(`random-${i}`)).statusCode).toBe(401);
    expect(answered).toEqual([]);
  });

  it('a known approver is limited by its id: its two keys share one bucket; another approver has its own', async () => {
    const answered: string[] = [];
    const post = await start(answered);
    expect((await post('alice-key-1')).statusCode).toBe(200);
    expect((await post('alice-key-2')).statusCode).toBe(200);
    const third = await post('alice-key-1');
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ error: 'STEWARD_HTTP_RATE' });
    expect((await post('bob-key')).statusCode).toBe(200);
    expect(answered).toEqual(['alice:ap-1', 'alice:ap-1', 'bob:ap-1']);
  });
});

describe('approval route: nothing is read before the key is known, and bodies are small', () => {
  it('an anonymous upload is answered 401 before its body arrives; an approver\'s body over 16 KiB is 413', async () => {
    const answered: string[] = [];
    const post = await start(answered);
    const port = await ingress!.listen();
    // Declares 1 MB, sends a few bytes and stalls: before, the handler (and its key check) ran only once the whole
    // body was in, so the connection held its buffers until the client timeout, outside the byte budget.
    const head = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1', () => sock.write('POST /v1/approvals/ap-1/approve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"reason":"'));
      const timer = setTimeout(() => (sock.destroy(), reject(new Error('no answer within 2 s'))), 2000);
      sock.once('data', (b) => (clearTimeout(timer), sock.destroy(), resolve(b.toString())));
      sock.once('error', reject);
    });
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    const big = await ingress!.app.inject({ method: 'POST', url: '/v1/approvals/ap-1/approve', headers: { 'x-api-key': 'bob-key', 'content-type': 'application/json' }, payload: JSON.stringify({ reason: 'x'.repeat(20_000) }) });
    expect(big.statusCode).toBe(413);
    expect((await post('bob-key')).statusCode).toBe(200);
    expect(answered).toEqual(['bob:ap-1']);
  });
});
