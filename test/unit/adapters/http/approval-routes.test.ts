/**
 * The approvers' route authenticates before it rate-limits, and limits by approver id in a limiter of its own
 * (review finding 7 of issue #25): unknown keys never get a bucket (nor a 429: before, the third request with
 * the same made-up key was refused with 429, and 100 000 made-up keys cleared every agent's bucket), and two keys
 * of one approver share one bucket.
 */
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
