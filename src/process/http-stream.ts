/**
 * The feed of GET /v1/stream/traces (docs/http.md "Stream"): one consumer group per deployment reads the
 * decisions, verdicts and gate topics and appends each agent's events to a Redis stream (capped), so that a
 * client resumes with Last-Event-ID = the Redis stream id of the last event it saw, from any instance.
 * On Redis Cluster each agent's stream is one key on its own slot: the batch's XADDs go out one command each
 * (auto-pipelined per node), and a batch is done only when every one of them was written.
 */
import type { KafkaAdapter, StewardConsumer } from '../adapters/kafka/client.js';
import { redisAdapterError, type RedisClient } from '../adapters/redis/client.js';
import type { TopicNames } from '../adapters/kafka/topics.js';
import { avroSchemaId, type OutputDecoder } from '../adapters/kafka/output-decoder.js';
import { decisionFeedback, verdictFeedback } from '../adapters/http/acgp-feedback.js';
import { StewardError } from '../errors.js';

/** Events kept per agent for resumption. */
export const STREAM_MAXLEN = 10_000;
/** How long a failed start of the feed is answered from memory before the next start() tries again. */
export const FEED_RETRY_MS = 1_000;

export interface StreamEvent {
  id: string;
  event: 'trace_processed' | 'feedback_generated' | 'gate_result';
  data: string;
}

export class AgentEventFeed {
  private consumer?: StewardConsumer;
  constructor(
    private readonly adapter: KafkaAdapter,
    private readonly topics: TopicNames,
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly groupId: string,
    /** Decisions and verdicts written in Avro (topics.avro_outputs) are decoded through it and streamed as JSON; absent, they are skipped. */
    private readonly outputs?: OutputDecoder,
    /** Told of events skipped because their stream write fails the same way every time (e.g. WRONGTYPE). */
    private readonly onDropped?: (events: number, err: StewardError) => void,
    /** Told when the feed's consumer fails to start or crashes for good (it is started again by the next client). */
    private readonly onFailure?: (err: Error, when: 'start' | 'crash') => void,
  ) {}

  key(agentId: string): string {
    return `${this.keyPrefix}http:stream:${agentId}`;
  }

  private started?: Promise<void>;
  private stopped = false;

  /**
   * Started by the first stream client (a process whose clients never stream reads nothing), with or without
   * Last-Event-ID. A start that fails (Kafka unreachable) is forgotten after FEED_RETRY_MS and its consumer
   * disconnected, and so is a consumer kafkajs gives up on: the next client, or the next pass of an open stream,
   * after FEED_RETRY_MS, starts another. Before, the first failure was kept for the life of the process (every stream answered 500
   * once Kafka was back) and a crashed consumer stopped the feed silently (audit 24-r2 finding 3).
   */
  start(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.started) return this.started;
    const attempt: Promise<void> = this.run().catch(async (e: unknown) => {
      const err = e instanceof Error ? e : new Error(String(e));
      await this.drop();
      if (this.stopped) throw err;
      this.onFailure?.(err, 'start');
      setTimeout(() => {
        if (this.started === attempt) this.started = undefined;
      }, FEED_RETRY_MS).unref();
      throw err;
    });
    this.started = attempt;
    return attempt;
  }

  /** Disconnects the current consumer (failed or crashed), so that the next start() makes a new one. */
  private async drop(): Promise<void> {
    const c = this.consumer;
    this.consumer = undefined;
    await c?.disconnect().catch(() => undefined);
  }

  private async run(): Promise<void> {
    const c = this.adapter.consumer({ groupId: this.groupId, maxWaitTimeMs: 100 });
    this.consumer = c;
    // kafkajs restarts a consumer after most errors itself; one it gives up on (retries exhausted while a broker was
    // down) is replaced at the next start().
    // Held off like a failed start: replaced at once, each 200 ms pass of an open stream started another consumer,
    // and each joined (and rebalanced) the deployment-wide group.
    c.onCrash((err, willRestart) => {
      if (willRestart || this.consumer !== c || this.stopped) return;
      this.onFailure?.(err, 'crash');
      const crashed = this.started;
      setTimeout(() => {
        if (this.started === crashed) this.started = undefined;
      }, FEED_RETRY_MS).unref();
      void this.drop();
    });
    // From the beginning the first time the deployment's group exists (capped per agent), then from its offsets.
    await c.subscribe([this.topics.decisions, this.topics.verdicts, this.topics.gate], true);
    await c.runBatches(async (b, ctl) => {
      const writes: { key: string; event: StreamEvent['event']; text: string }[] = [];
      // Avro decisions and verdicts: their schemas looked up before the pass (a registry outage fails the batch: retried).
      const outputs = this.outputs;
      const schemas = outputs ? await outputs.schemasFor(b.messages.map((m) => (m.topic === this.topics.gate ? null : m.value))) : undefined;
      for (const m of b.messages) {
        if (!m.value) continue;
        let v: Record<string, unknown>;
        let text: string;
        try {
          if (avroSchemaId(m.value) !== undefined) {
            // Streamed as the JSON the record stands for; without a decoder (or unreadable) it is skipped.
            if (!schemas || m.topic === this.topics.gate) continue;
            v = schemas.decode(m.topic === this.topics.decisions ? 'decision' : 'verdict', m.value) as unknown as Record<string, unknown>;
            text = JSON.stringify(v);
          } else {
            text = m.value.toString('utf8');
            v = JSON.parse(text) as Record<string, unknown>;
          }
        } catch {
          continue;
        }
        const agent = typeof v.agent_id === 'string' ? v.agent_id : m.key?.toString('utf8');
        if (!agent) continue;
        const event = m.topic === this.topics.decisions ? 'trace_processed' : m.topic === this.topics.verdicts ? 'feedback_generated' : 'gate_result';
        // The acgp client hands a trace_processed event to on_feedback only when it has a `feedback` key (D43): a
        // block or a halt must reach the agent; verdicts carry one too, with the CTQ's oversight mode.
        if (event !== 'gate_result') text = JSON.stringify({ ...v, feedback: event === 'trace_processed' ? decisionFeedback(v) : verdictFeedback(v) });
        writes.push({ key: this.key(agent), event, text });
      }
      await this.append(writes);
      // Only now: kafkajs commits a batch's resolved offsets when its handler throws, so offsets resolved before the
      // writes lost the events of a failed write for good. Unresolved, the batch is fetched and written again.
      if (b.messages.length > 0) ctl.resolveOffset(b.messages[b.messages.length - 1]!.offset);
    });
  }

  /**
   * Appends the batch's events, one XADD each (issued together: auto-pipelining sends them in one write per node,
   * in order, so an agent's events keep their order). The one pipeline() of before reported a failed command (a
   * MOVED from the master redis.url names, an OOM, a WRONGTYPE) only in exec()'s results, which were not read: that
   * agent's events were dropped silently — on a 3-master cluster, the agents of two masters of every batch; and a
   * Cluster client refuses a pipeline across nodes whole, after the offsets were resolved, so the whole batch was
   * lost (test/integration/redis-cluster/http-stream.int.test.ts). Now a failure that may pass fails the batch
   * (retryable): the consumer fetches it again, so an event reaches its stream at least once (one written before
   * the failure is written again: a client may see it twice, with a new id); one that cannot pass is skipped.
   */
  private async append(writes: readonly { key: string; event: StreamEvent['event']; text: string }[]): Promise<void> {
    const res = await Promise.allSettled(writes.map((w) => this.redis.xadd(w.key, 'MAXLEN', '~', String(STREAM_MAXLEN), '*', 'event', w.event, 'data', w.text)));
    const failed = res.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => redisAdapterError(r.reason, `stream feed: a stream write failed`));
    if (failed.length === 0) return;
    // A failure that may pass (connection lost, a cluster move, out of memory) fails the batch: fetched and written
    // again. One that fails the same way every time (a key of another type) would stall the feed for every agent
    // for good (review of 055f524): its events are skipped and reported instead.
    const passing = failed.find((e) => e.retryable);
    if (passing) throw new StewardError(passing.code, `stream feed: ${failed.length} of ${writes.length} stream writes failed, batch retried: ${passing.message}`, { retryable: true, cause: passing });
    this.onDropped?.(failed.length, failed[0]!);
  }

  /** The id of the agent's newest event ('0-0' when none): a fresh client starts after it. */
  async head(agentId: string): Promise<string> {
    await this.start();
    const r = (await this.redis.xrevrange(this.key(agentId), '+', '-', 'COUNT', 1)) as [string, string[]][];
    return r[0]?.[0] ?? '0-0';
  }

  /**
   * Events after `lastId` (at most 100; no blocking, so SSE clients share one Redis connection). It starts the feed
   * too: a client resuming with Last-Event-ID never calls head(), and as the process's first stream client it got
   * no new events until a client without the header came (audit 24-r2 finding 2). Not awaited: what the stream
   * holds already is served meanwhile, and a start that fails (reported to onFailure) is tried again on a later
   * pass once FEED_RETRY_MS have passed.
   */
  async read(agentId: string, lastId: string): Promise<StreamEvent[]> {
    this.start().catch(() => undefined);
    const r = (await this.redis.xread('COUNT', 100, 'STREAMS', this.key(agentId), lastId)) as [string, [string, string[]][]][] | null;
    if (!r) return [];
    return r[0][1].map(([id, f]) => ({ id, event: f[1] as StreamEvent['event'], data: f[3] }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.consumer?.disconnect();
  }
}
