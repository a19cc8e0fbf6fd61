/**
 * steward_consumer_lag of partitions no chunk reported on lately, read from the broker: the high watermark minus
 * the group's committed offset (the low watermark when none). A partition stalled behind a retry, or a chunk
 * that runs long, would otherwise keep the last value a chunk set, or have no series at all.
 */
import type { KafkaAdapter, StewardAdmin } from '../adapters/kafka/client.js';
import type { StewardMetrics } from '../observability/metrics.js';

export interface LagRefresherOptions {
  adapter: KafkaAdapter;
  groupId: string;
  stage: string;
  metrics: StewardMetrics;
  everyMs: number;
}

export class LagRefresher {
  private assignment: Record<string, number[]> = {};
  /** When a chunk last set a partition's lag (`topic\0partition` → performance.now()). */
  private readonly reportedAt = new Map<string, number>();
  private timer?: ReturnType<typeof setInterval>;
  /** The tick in progress: a slow broker must not stack ticks (nor admin connections) behind each other. */
  private running?: Promise<void>;
  private admin?: Promise<StewardAdmin>;

  constructor(private readonly o: LagRefresherOptions) {}

  assigned(assignment: Record<string, number[]>): void {
    this.assignment = assignment;
  }

  /** A chunk just set this partition's lag. */
  reported(topic: string, partition: number): void {
    this.reportedAt.set(`${topic}\u0000${partition}`, performance.now());
  }

  start(): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.refresh()
        .catch(() => this.dropAdmin())
        .finally(() => (this.running = undefined));
    }, this.o.everyMs).unref();
  }

  /**
   * Stops the timer and closes the admin connection without waiting for a tick in progress (against a broker
   * that does not answer, one can take its retries' full time): that tick fails on the closed connection.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.dropAdmin();
  }

  private async dropAdmin(): Promise<void> {
    const a = this.admin;
    this.admin = undefined;
    await a?.then((x) => x.disconnect()).catch(() => undefined);
  }

  private stale(topic: string, p: number, now: number): boolean {
    return now - (this.reportedAt.get(`${topic}\u0000${p}`) ?? -Infinity) >= this.o.everyMs;
  }

  async refresh(): Promise<void> {
    const now = performance.now();
    const stale = Object.entries(this.assignment)
      .map(([topic, ps]) => [topic, ps.filter((p) => this.stale(topic, p, now))] as const)
      .filter(([, ps]) => ps.length > 0);
    if (stale.length === 0) return;
    // One connection for the runner's life (reopened after a failure), not one per tick.
    this.admin ??= this.o.adapter.admin();
    const admin = await this.admin;
    for (const [topic, ps] of stale) {
      const [ends, committed] = await Promise.all([admin.topicOffsets(topic), admin.groupOffsets(this.o.groupId, topic)]);
      const done = new Map(committed.map((c) => [c.partition, BigInt(c.offset)]));
      for (const e of ends) {
        // Still assigned, and no chunk reported since the tick began: neither a rebalance nor a fresher value
        // set meanwhile is overwritten.
        if (!ps.includes(e.partition) || !(this.assignment[topic] ?? []).includes(e.partition)) continue;
        if ((this.reportedAt.get(`${topic}\u0000${e.partition}`) ?? -Infinity) > now) continue;
        const low = BigInt(e.low);
        const c = done.get(e.partition) ?? -1n;
        const lag = BigInt(e.high) - (c > low ? c : low);
        this.o.metrics.setLag(this.o.stage, topic, e.partition, Number(lag > 0n ? lag : 0n));
      }
    }
  }
}
