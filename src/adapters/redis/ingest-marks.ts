/**
 * Which trace record first carried an agent's idempotency key (`<prefix>ingest:<agent>:<key>` →
 * `topic:partition:offset`): the tripwire stage's half of http.idempotency.dedupe 'pipeline' (docs/spec-decisions.md
 * D52). The HTTP ingress then claims nothing on the request path; every event is produced with its key in the
 * INGEST_KEY_HEADER header, a retried batch reaches acgp.traces again, and the stage decides only the record a key
 * names first.
 *
 * A mark names the record that took it, so a redelivery of that record (the stage is at-least-once: after a crash
 * its uncommitted tail comes again, same offsets) is decided again as it must be, while a later copy in the same
 * partition (same agent key: same partition) is dropped. A mark on another topic or partition (the topic was
 * re-partitioned) or one that expired proves nothing and is taken over. The check and the take-over are one script,
 * so two copies looked up in one round cannot both take an old mark.
 */
import type { RedisClient } from './client.js';
import { redisAdapterError } from './client.js';

/** The record header the ingress writes an event's idempotency key into ('pipeline' mode; D52). */
export const INGEST_KEY_HEADER = 'x-steward-idempotency-key';

export interface IngestRecord {
  agentId: string;
  key: string;
  topic: string;
  partition: number;
  offset: string;
}

export interface IngestMarks {
  /**
   * Per record, true when it is the one to decide for its agent's key (the first, or a redelivery of the first).
   * The records of one partition come in offset order. Rejects (retryable) when Redis cannot be asked.
   */
  firsts(records: readonly IngestRecord[]): Promise<boolean[]>;
}

// KEYS[1] mark; ARGV: mine ("topic:partition:offset"), its prefix "topic:partition:", the offset, ttl.
// Offsets compare as decimal strings (length first): exact at any size, unlike Lua's doubles past 2^53.
const MARK_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] and string.sub(cur, 1, #ARGV[2]) == ARGV[2] then
  local o = string.sub(cur, #ARGV[2] + 1)
  if #o < #ARGV[3] or (#o == #ARGV[3] and o < ARGV[3]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[4])
return 1`;

interface MarkCommand {
  stewardIngestMark(key: string, mine: string, prefix: string, offset: string, ttl: number): Promise<number>;
}

export class RedisIngestMarks implements IngestMarks {
  private readonly redis: MarkCommand;

  constructor(
    redis: RedisClient,
    private readonly o: { prefix: string; ttlSeconds: number },
  ) {
    if (typeof (redis as unknown as Partial<MarkCommand>).stewardIngestMark !== 'function') redis.defineCommand('stewardIngestMark', { numberOfKeys: 1, lua: MARK_SCRIPT });
    this.redis = redis as unknown as MarkCommand;
  }

  async firsts(records: readonly IngestRecord[]): Promise<boolean[]> {
    // One script call per distinct key, all sent together (auto-pipelined); later copies of a key in the same
    // round are duplicates of the earlier one without asking (the round's records are in offset order per partition).
    const out = new Array<boolean>(records.length).fill(false);
    const seen = new Set<string>();
    const calls: Promise<void>[] = [];
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      const key = `${this.o.prefix}ingest:${encodeURIComponent(r.agentId)}:${encodeURIComponent(r.key)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const at = `${r.topic}:${r.partition}:`;
      calls.push(this.redis.stewardIngestMark(key, at + r.offset, at, r.offset, this.o.ttlSeconds).then((v) => void (out[i] = v === 1)));
    }
    try {
      await Promise.all(calls);
    } catch (e) {
      throw redisAdapterError(e, 'ingest marks');
    }
    return out;
  }
}
