/**
 * Request/reply routing for synchronous decisions. A client instance owns one partition of the shared
 * replies topic (chosen at random, or configured) and puts it in the trace's headers; the tripwire stage
 * answers there (and the scorer sends the verdict there too). Each client reads only its partition, so
 * reply traffic per client is total/partitions, not total: size `reply_partitions` to the client count.
 */
import type { InMessage, OutMessage } from './client.js';
import { headerText } from './client.js';
import type { ReplyRoute } from '../../contracts/messages.js';

export const REPLY_HEADERS = {
  topic: 'x-steward-reply-topic',
  partition: 'x-steward-reply-partition',
  correlation: 'x-steward-correlation-id',
  kind: 'x-steward-reply-kind',
} as const;

export type ReplyKind = 'decision' | 'verdict' | 'gate';

export function replyHeaders(route: ReplyRoute): Record<string, string> {
  return { [REPLY_HEADERS.topic]: route.topic, [REPLY_HEADERS.partition]: String(route.partition), [REPLY_HEADERS.correlation]: route.correlation_id };
}

/** Where replies may go: the configured replies topic and its partition count (read from the broker). */
export interface ReplyTarget {
  topic: string;
  partitions: number;
}

const MAX_CORRELATION_LENGTH = 256;

/**
 * The route a trace asked for, or undefined: fire-and-forget trace, malformed routing headers, or a route
 * outside `allowed`. Headers come from the agent, so they are never trusted to name a topic: a foreign
 * topic would let an agent inject records into internal topics (acgp.reviews, acgp.ledger), and an
 * unknown one or a partition past the end would fail the stage's send and stall its partition.
 */
export function replyRoute(m: InMessage, allowed: ReplyTarget): ReplyRoute | undefined {
  const topic = headerText(m, REPLY_HEADERS.topic);
  const p = headerText(m, REPLY_HEADERS.partition);
  const correlation = headerText(m, REPLY_HEADERS.correlation);
  if (!topic || p === undefined || !correlation) return undefined;
  if (topic !== allowed.topic || correlation.length > MAX_CORRELATION_LENGTH || !/^\d{1,9}$/.test(p)) return undefined;
  const partition = Number(p);
  if (partition >= allowed.partitions) return undefined;
  return { topic, partition, correlation_id: correlation };
}

/**
 * A reply record. `afterCommit`: a stage whose outputs go out in Kafka transactions sends it on its own once the
 * transaction committed. Inside one it would hold back every later record of the replies partition (other stages'
 * answers too) from read_committed clients until the commit, and for up to the transaction timeout should the
 * process die mid-commit.
 */
export function replyMessage(route: ReplyRoute, kind: ReplyKind, key: string, value: string): { topic: string; message: OutMessage; afterCommit: true } {
  return {
    afterCommit: true,
    topic: route.topic,
    message: { key, value, partition: route.partition, headers: { [REPLY_HEADERS.correlation]: route.correlation_id, [REPLY_HEADERS.kind]: kind } },
  };
}

/**
 * The reply route a stage message (acgp.scoring, acgp.finalize) carries, when it is one the tripwire stage
 * could have written: the deployment's replies topic, a partition number, a bounded correlation id. Anything
 * else is dropped: a route the producer refuses would fail the chunk's send again on every retry and stall
 * the partition.
 */
export function carriedReplyRoute(v: unknown, repliesTopic: string | undefined): ReplyRoute | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const r = v as Record<string, unknown>;
  if (repliesTopic === undefined || r.topic !== repliesTopic) return undefined;
  if (typeof r.partition !== 'number' || !Number.isInteger(r.partition) || r.partition < 0 || r.partition > 1_000_000) return undefined;
  if (typeof r.correlation_id !== 'string' || r.correlation_id.length === 0 || r.correlation_id.length > MAX_CORRELATION_LENGTH) return undefined;
  return { topic: r.topic, partition: r.partition, correlation_id: r.correlation_id };
}
