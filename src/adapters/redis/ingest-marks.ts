/**
 * Which trace record first carried an agent's idempotency key (field `<key>` of `<prefix>ingest:{<agent>}:<bucket>`
 * → `topic:partition:offset`): the tripwire stage's half of http.idempotency.dedupe 'pipeline' (docs/spec-decisions.md
 * D52). The HTTP ingress then claims nothing on the request path; every event is produced with its key in the
 * INGEST_KEY_HEADER header (adapters/kafka/headers.ts), a retried batch reaches acgp.traces again, and the stage decides only the record a key
 * names first.
 *
 * A mark names the record that took it, so a redelivery of that record (the stage is at-least-once: after a crash
 * its uncommitted tail comes again, same offsets) is decided again as it must be, while a later copy in the same
 * partition (same agent key: same partition) is dropped. A mark on another topic or partition (the topic was
 * re-partitioned) or one that expired proves nothing and is taken over. The check and the take-over are one script
 * per agent and chunk (marks in one hash per agent and time bucket, as the claims' buckets of D39), so two copies
 * looked up in one round cannot both take an old mark, and a chunk costs one round trip however many keys it has
 * (a script call per key cost the stage ~15 µs of CPU and Redis ~8 µs a trace: bench/ingress/marks.ts).
 */
import type { RedisClient } from './client.js';
import { redisAdapterError } from './client.js';

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

// KEYS: the agent's mark hashes of buckets b-1 and b (written), and b-2 (unlinked: freed off Redis' main thread
// before it would expire). Buckets are the stage's clock: replicas whose clocks differ by seconds disagree only for
// those seconds after a bucket turns (a copy then may be decided again), not worth a third lookup per key. ARGV[1] the hash expiry,
// ARGV[2] "topic:partition:", then key, offset pairs in offset order. Answers one character per pair: '1' first.
// Offsets compare as decimal strings (length first): exact at any size, unlike Lua's doubles past 2^53.
const MARK_SCRIPT = `
local p = ARGV[2]
local out = {}
local seen = {}
local wrote = false
for i = 3, #ARGV, 2 do
  local k, off = ARGV[i], ARGV[i + 1]
  local first = '1'
  if seen[k] then first = '0' else
    seen[k] = true
    local mine = p .. off
    local cur = redis.call('HGET', KEYS[2], k) or redis.call('HGET', KEYS[1], k)
    if cur and cur ~= mine and string.sub(cur, 1, #p) == p then
      local o = string.sub(cur, #p + 1)
      if #o < #off or (#o == #off and o < off) then first = '0' end
    end
    if first == '1' and cur ~= mine then
      redis.call('HSET', KEYS[2], k, mine)
      wrote = true
    end
  end
  out[#out + 1] = first
end
if wrote then
  redis.call('EXPIRE', KEYS[2], ARGV[1])
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('UNLINK', KEYS[3]) end
end
return table.concat(out)`;

interface MarkCommand {
  stewardIngestMarks(k1: string, k2: string, k3: string, ...args: (string | number)[]): Promise<string>;
}

export class RedisIngestMarks implements IngestMarks {
  private readonly redis: MarkCommand;

  /**
   * `ttlSeconds`: how long a mark is remembered at least (http.idempotency.window_seconds; the bucket length: a mark
   * lives one to two of them). `nowMs`: the bucket clock (tests turn buckets with it).
   */
  constructor(
    redis: RedisClient,
    private readonly o: { prefix: string; ttlSeconds: number; nowMs?: () => number },
  ) {
    if (typeof (redis as unknown as Partial<MarkCommand>).stewardIngestMarks !== 'function') redis.defineCommand('stewardIngestMarks', { numberOfKeys: 3, lua: MARK_SCRIPT });
    this.redis = redis as unknown as MarkCommand;
  }

  async firsts(records: readonly IngestRecord[]): Promise<boolean[]> {
    // One script call per agent and partition (a chunk is one partition: usually a call per agent in it), all sent
    // together; the agent's marks share its hash tag, so a call names one Cluster slot.
    const out = new Array<boolean>(records.length);
    const groups = new Map<string, number[]>();
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      const g = `${r.agentId}\u0000${r.topic}\u0000${r.partition}`;
      const list = groups.get(g);
      if (list) list.push(i);
      else groups.set(g, [i]);
    }
    const w = this.o.ttlSeconds;
    const b = Math.floor((this.o.nowMs ?? Date.now)() / 1000 / w);
    const calls: Promise<void>[] = [];
    for (const idx of groups.values()) {
      const r0 = records[idx[0]];
      const base = `${this.o.prefix}ingest:{${encodeURIComponent(r0.agentId)}}:`;
      const args: (string | number)[] = [base + (b - 1), base + b, base + (b - 2), 3 * w, `${r0.topic}:${r0.partition}:`];
      for (const i of idx) args.push(records[i].key, records[i].offset);
      calls.push(
        this.redis.stewardIngestMarks(...(args as [string, string, string, ...(string | number)[]])).then((got) => {
          for (let j = 0; j < idx.length; j++) out[idx[j]] = got.charCodeAt(j) === 49; // '1'
        }),
      );
    }
    try {
      await Promise.all(calls);
    } catch (e) {
      throw redisAdapterError(e, 'ingest marks');
    }
    return out;
  }
}
