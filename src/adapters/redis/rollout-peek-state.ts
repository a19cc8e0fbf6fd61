/**
 * The read-only state view of shadow evaluation (docs/rollout.md "Shadow evaluation"): storage reads go to the
 * live store; a rate hit is answered as the live script would count it with this hit added (hits in
 * (now - window, +inf], plus one unless this hitId is already there) and nothing is written. After the active
 * decision recorded the trace's hit, a candidate rule on the same window counts exactly what the active one did.
 */
import type { StateStore } from '../../engine/types.js';
import type { RedisClient } from './client.js';
import type { RedisStateStore } from './state-store.js';
import { stateUnavailable } from './state-rounds.js';

export class PeekStateStore implements StateStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly live: Pick<RedisStateStore, 'get' | 'rateKey'>,
  ) {}

  get(namespace: string, key: string): Promise<unknown> {
    return this.live.get(namespace, key);
  }

  async hit(namespace: string, key: string, windowMs: number, nowMs: number, hitId: string): Promise<number> {
    const k = this.live.rateKey(namespace, key);
    const now = Math.floor(nowMs);
    let res: [Error | null, unknown][] | null;
    try {
      res = await this.redis.pipeline().zcount(k, `(${now - Math.ceil(windowMs)}`, '+inf').zscore(k, hitId).exec();
    } catch (e) {
      throw stateUnavailable(e);
    }
    const [[e1, n], [e2, score]] = res ?? [[new Error('no reply'), 0], [null, null]];
    if (e1 || e2) throw stateUnavailable(e1 ?? e2);
    return Number(n) + (score === null ? 1 : 0);
  }
}
