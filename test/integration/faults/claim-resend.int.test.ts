// Issue #24 review (F1): ioredis re-sends a command left unanswered by a dropped connection
// (autoResendUnfulfilledCommands), so a batch's claim script can run twice. A TCP proxy in front of the real Redis
// passes the claim to Redis but drops the connection instead of passing its reply; the client reconnects and
// re-sends it. The second run must count the first run's entries as this claim's ('claimed', not 'pending' — that
// answered every retry 503 STEWARD_HTTP_PENDING until the 40 s stale bound), and a release by the claim's id must
// free them. The claims connection is the ingress's (src/process/http-ingress.ts): no auto-pipelining, one retry.
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../../src/adapters/redis/client.js';
import { redisIdempotencyClaims } from '../../../src/adapters/redis/idempotency-claims.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix } from '../setup/helpers.js';

/** Forwards bytes both ways; drops the connection in place of the first successful reply to a request naming `marker`. */
async function dropOneReply(target: URL, marker: string) {
  const state = { armed: true, requestsSeen: 0, dropped: 0 };
  const open = new Set<net.Socket>();
  const server = net.createServer((c) => {
    const s = net.connect(Number(target.port), target.hostname);
    open.add(c).add(s);
    let waiting = false;
    c.on('data', (d: Buffer) => {
      if (d.includes(marker)) {
        state.requestsSeen++;
        waiting = state.armed;
      }
      s.write(d);
    });
    s.on('data', (d: Buffer) => {
      // An error reply (NOSCRIPT to the first EVALSHA: the script did not run) passes; the script's answer does not.
      if (waiting && d[0] !== 0x2d) {
        state.armed = false;
        waiting = false;
        state.dropped++;
        c.destroy();
        s.destroy();
        return;
      }
      c.write(d);
    });
    for (const x of [c, s]) {
      x.on('error', () => undefined);
      x.on('close', () => (open.delete(x), (x === c ? s : c).destroy()));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const close = () => new Promise<void>((r) => (open.forEach((x) => x.destroy()), server.close(() => r())));
  return { state, port, close };
}

describe('a claim whose reply is lost and which ioredis re-sends', () => {
  const prefix = uniqueRedisPrefix('idem-resend');
  const direct = redisClient();
  afterAll(async () => {
    await deleteRedisPrefix(direct, prefix).catch(() => 0);
    direct.disconnect();
  });

  it('runs twice in Redis, answers claimed, and a release by its id frees the keys', async () => {
    const target = new URL(services().redisUrl);
    const agent = 'agent-resend';
    const pendingKey = `${prefix}http:idem:{${agent}}:pending`;
    const proxy = await dropOneReply(target, pendingKey);
    const r = createRedis(`redis://127.0.0.1:${proxy.port}`, { maxRetriesPerRequest: 1, enableAutoPipelining: false });
    try {
      const claims = redisIdempotencyClaims(r, { prefix, windowSeconds: 86_400 });
      const got = await claims.claim(agent, ['k1', 'k2', 'k1']);
      // The first run's reply was dropped and the call was re-sent: the script ran twice.
      expect(proxy.state.dropped).toBe(1);
      expect(proxy.state.requestsSeen).toBeGreaterThanOrEqual(2);
      expect(await direct.zcard(pendingKey)).toBe(2);
      // Before the fix: ['pending', 'pending', 'done'] — the second run met the first run's entries.
      expect(got.states).toEqual(['claimed', 'claimed', 'done']);
      // Another request's claim still meets them pending.
      const other = redisIdempotencyClaims(direct, { prefix, windowSeconds: 86_400 });
      expect((await other.claim(agent, ['k1', 'k2'])).states).toEqual(['pending', 'pending']);
      // The request's send failed (or never happened): its release by the id hands both keys back.
      await claims.release(agent, ['k1', 'k2'], got.id);
      expect(await direct.zcard(pendingKey)).toBe(0);
      expect(await direct.exists(`${prefix}http:idem:{${agent}}:claims`)).toBe(0);
      const retry = await other.claim(agent, ['k1', 'k2']);
      expect(retry.states).toEqual(['claimed', 'claimed']);
      await other.finalise(agent, ['k1', 'k2'], retry.id);
      expect((await other.claim(agent, ['k1', 'k2'])).states).toEqual(['done', 'done']);
    } finally {
      r.disconnect();
      await proxy.close();
    }
  });
});
