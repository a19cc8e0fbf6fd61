/**
 * Which scoring record a trace's verdict came from (`<prefix>scored:<event id>` → `topic:partition:offset`, plus
 * `#<correlation id>` when it asked for a reply), so the scorer can tell an upstream duplicate from a
 * redelivery. The scorer's own redeliveries are covered by its
 * transactions (consumer.exactly_once), but the tripwire stage is at-least-once: after a crash it decides its
 * uncommitted tail again and writes a second scoring record for those traces, further down the same partition
 * (same key). Scoring that one too would publish a second verdict, which an LLM judge need not make agree with
 * the first.
 *
 * The mark is written while the first record is processed, before its transaction commits, and names that
 * record: if the transaction aborts, the record itself comes back (same offset) and is scored again, while its
 * duplicate, later in the partition, is skipped either way. A mark on another topic or partition (the scoring
 * topic was re-partitioned) proves nothing and is overwritten; so is one that expired.
 */
import { redisAdapterError, type RedisClient } from './client.js';

/** What to do with a scoring record: score it, skip it, or answer only its own client (see ScoredMarks). */
export type ScoringTurn = 'first' | 'duplicate' | 'reply-only';

export interface ScoredMarks {
  /**
   * 'first' when this record is the one to score for `eventId`; 'duplicate' for a later copy of the scored record;
   * 'reply-only' for a later copy that asks for a reply the scored record did not (another request: a client that
   * published the same trace again): its client gets a verdict, the verdicts topic does not get a second one.
   */
  turn(eventId: string, record: { topic: string; partition: number; offset: string }, correlationId?: string): Promise<ScoringTurn>;
}

export class RedisScoredMarks implements ScoredMarks {
  constructor(
    private readonly redis: RedisClient,
    private readonly o: { prefix: string; ttlSeconds: number },
  ) {}

  async turn(eventId: string, r: { topic: string; partition: number; offset: string }, correlationId?: string): Promise<ScoringTurn> {
    const key = `${this.o.prefix}scored:${eventId}`;
    const mine = `${r.topic}:${r.partition}:${r.offset}${correlationId === undefined ? '' : `#${correlationId}`}`;
    try {
      if ((await this.redis.set(key, mine, 'EX', this.o.ttlSeconds, 'NX')) === 'OK') return 'first';
      const cur = await this.redis.get(key);
      if (cur !== null) {
        const hash = cur.indexOf('#');
        const [record, correlation] = hash < 0 ? [cur, undefined] : [cur.slice(0, hash), cur.slice(hash + 1)];
        if (earlierInPartition(record, r.topic, r.partition, r.offset)) return correlationId === undefined || correlationId === correlation ? 'duplicate' : 'reply-only';
      }
      if (cur !== mine) await this.redis.set(key, mine, 'EX', this.o.ttlSeconds);
      return 'first';
    } catch (e) {
      throw redisAdapterError(e, 'scored marks');
    }
  }
}

/** `mark` names a record before `offset` in the same topic partition. */
export function earlierInPartition(mark: string, topic: string, partition: number, offset: string): boolean {
  const at = mark.lastIndexOf(':');
  const pAt = mark.lastIndexOf(':', at - 1);
  if (at < 0 || pAt < 0 || mark.slice(0, pAt) !== topic || mark.slice(pAt + 1, at) !== String(partition)) return false;
  try {
    return BigInt(mark.slice(at + 1)) < BigInt(offset);
  } catch {
    return false;
  }
}
