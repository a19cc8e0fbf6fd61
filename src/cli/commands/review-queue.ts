/**
 * `steward review queue list|take|resolve` (PVS-1 §5.3; docs/rollout.md "Review queue"), delegated from
 * review.ts. The queue's live state is in Redis (shared by every instance and reviewer); each change is
 * published on acgp.review-queue for the review_queue table. An approval is published on acgp.reviews as
 * `review_approved` with event id `review:<trace_id>`: the trust-debt stage grants successful_review_credit
 * exactly as for `steward review approve --trace` (once per trace, whichever path came first).
 *
 *   steward review queue list [--tenant T] [--json]
 *   steward review queue take ID --reviewer R
 *   steward review queue resolve ID --reviewer R --outcome approved|denied [--note TEXT] [--credit C]
 * ID is the review id (rq:<trace_id>) or the trace id. Common: [--config FILE] [--redis URL] [--prefix P]
 * [--topic-prefix P] [--no-publish].
 */
import { parseArgs } from 'node:util';
import { KafkaAdapter } from '../../adapters/kafka/client.js';
import { topicNames } from '../../adapters/kafka/topics.js';
import { createRedisClient } from '../../adapters/redis/client.js';
import { RedisReviewQueue } from '../../adapters/redis/rollout-review-queue.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import type { ReviewMessage } from '../../contracts/messages.js';
import { reviewIdOf, type ReviewItem } from '../../engine/rollout/review-queue.js';
import { StewardError } from '../../errors.js';

export const QUEUE_USAGE = [
  '       steward review queue list [--tenant T] [--json]',
  '       steward review queue take ID --reviewer R',
  '       steward review queue resolve ID --reviewer R --outcome approved|denied [--note TEXT] [--credit C]',
].join('\n');

const usage = (msg: string) => new StewardError('STEWARD_USAGE', `${msg}\nusage: steward review queue list|take|resolve ...\n${QUEUE_USAGE}`);
const print = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');

type V = { config?: string; redis?: string; prefix?: string; 'topic-prefix'?: string; 'no-publish'?: boolean };

async function publish(v: V, item: ReviewItem, review?: ReviewMessage): Promise<void> {
  if (v['no-publish']) return;
  const cfg = loadStewardConfig(v.config);
  const topics = topicNames(v['topic-prefix'] ?? cfg.topics.prefix);
  const producer = await new KafkaAdapter(cfg.kafka).producer();
  try {
    const batches = [{ topic: topics.reviewQueue, messages: [{ key: item.agent_id, value: JSON.stringify(item) }] }];
    if (review) batches.push({ topic: topics.reviews, messages: [{ key: review.agent_id, value: JSON.stringify(review) }] });
    await producer.send(batches);
  } catch (e) {
    throw new StewardError('STEWARD_KAFKA', `review ${item.review_id} is ${item.status} (Redis) but was not published: ${(e as Error).message}`, { cause: e, retryable: true });
  } finally {
    await producer.disconnect();
  }
}

const age = (ms: number) => (ms < 3_600_000 ? `${Math.round(ms / 60_000)}m` : `${(ms / 3_600_000).toFixed(1)}h`);

export async function runQueue(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: 'string' }, json: { type: 'boolean' }, reviewer: { type: 'string' }, outcome: { type: 'string' }, note: { type: 'string' }, credit: { type: 'string' },
      config: { type: 'string' }, redis: { type: 'string' }, prefix: { type: 'string' }, 'topic-prefix': { type: 'string' }, 'no-publish': { type: 'boolean' },
    },
  });
  const [action, idArg, ...extra] = positionals;
  if (extra.length > 0 || !['list', 'take', 'resolve'].includes(action ?? '')) throw usage('expected list, take or resolve');
  const cfg = loadStewardConfig(v.config);
  // A Cluster client when redis.cluster_nodes is set (the {rq} slot may live on any master); --redis names one server.
  const redis = createRedisClient(v.redis ?? cfg.redis.url, v.redis ? [] : cfg.redis.clusterNodes, { maxRetriesPerRequest: 1 });
  const queue = new RedisReviewQueue(redis, v.prefix ?? cfg.redis.keyPrefix);
  const now = Date.now();
  try {
    if (action === 'list') {
      if (idArg !== undefined) throw usage('list takes no ID');
      const items = (await queue.list(100_000)).filter((i) => v.tenant === undefined || i.tenant === v.tenant);
      if (v.json) for (const i of items) print({ ...i, age_ms: now - i.enqueued_at_ms, overdue: now > i.sla_due_ms });
      else if (items.length === 0) process.stdout.write('review queue is empty\n');
      else
        for (const i of items)
          process.stdout.write(`${i.review_id}  ${i.tenant}/${i.agent_id}  ${i.intervention}  confidence ${i.confidence.toFixed(3)}  ${i.status}${i.reviewer ? ` (${i.reviewer})` : ''}  age ${age(now - i.enqueued_at_ms)}${now > i.sla_due_ms ? '  OVERDUE' : ''}\n`);
      return 0;
    }
    if (!idArg) throw usage(`${action} needs an ID`);
    if (!v.reviewer) throw usage(`${action} needs --reviewer`);
    const id = idArg.startsWith('rq:') ? idArg : reviewIdOf(idArg);
    if (action === 'take') {
      const item = await queue.take(id, v.reviewer, now);
      print(item);
      await publish(v, item);
      return 0;
    }
    if (v.outcome !== 'approved' && v.outcome !== 'denied') throw usage('resolve needs --outcome approved|denied');
    let credit: number | undefined;
    if (v.credit !== undefined) {
      credit = Number(v.credit);
      if (!Number.isFinite(credit) || Math.abs(credit) > 1) throw usage(`--credit must be a number in [-1, 1]: ${v.credit}`);
      credit = -Math.abs(credit);
    }
    const item = await queue.resolve(id, v.reviewer, v.outcome, v.note ?? '', now);
    // §10.4.1 credits approvals only; a denied escalation's debt already moved with its intervention.
    const review: ReviewMessage | undefined =
      v.outcome === 'approved'
        ? { event_id: `review:${item.trace_id}`, agent_id: item.agent_id, tenant: item.tenant, kind: 'review_approved', trace_id: item.trace_id, reviewer: v.reviewer, timestamp: now, ...(credit !== undefined ? { credit } : {}) }
        : undefined;
    print({ ...item, review: review ?? null });
    await publish(v, item, review);
    return 0;
  } finally {
    redis.disconnect();
  }
}
