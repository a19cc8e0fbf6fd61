// bench:ingress leaves no Redis keys behind: each run claims an idempotency key per ingested trace (24 h TTL), and
// a few hundred thousand of them per run on the shared Redis slow every SCAN-based cleanup of the other suites.
import { createRedis } from '../../src/adapters/redis/client.js';

/** Unlinks every key matching `${prefix}*`; returns how many. */
export async function dropKeys(url: string, prefix: string): Promise<number> {
  const r = createRedis(url, { maxRetriesPerRequest: 1 });
  let n = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 10_000);
      cursor = next;
      for (let i = 0; i < keys.length; i += 1000) await r.unlink(...keys.slice(i, i + 1000));
      n += keys.length;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
  return n;
}
