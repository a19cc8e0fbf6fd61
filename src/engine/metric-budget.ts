/**
 * A metric's time budget that stands still while a part of the metric waits in a queue (ScorerContext.queued):
 * time spent waiting for an LLM slot is load, not a slow scorer. A hard limit of QUEUE_FACTOR budgets of wall
 * time still ends it: a provider that never answers would otherwise hold every queued metric (and its
 * partition, whose chunk heartbeats) for as long as the queue takes to drain.
 */
const QUEUE_FACTOR = 3;
/** setTimeout fires at once for a delay over 2^31 - 1 ms (a huge llm.timeout_ms): longer budgets wait this long. */
const MAX_TIMER_MS = 2 ** 31 - 1;
export class MetricBudget {
  private paused = 0;
  private remaining: number;
  private since = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly hard: ReturnType<typeof setTimeout>;
  private done = false;

  constructor(ms: number, private readonly onExpire: () => void) {
    this.remaining = ms;
    this.hard = setTimeout(() => this.expire(), Math.min(MAX_TIMER_MS, ms * QUEUE_FACTOR));
    this.start();
  }

  private expire(): void {
    if (this.done) return;
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    clearTimeout(this.hard);
    this.onExpire();
  }

  private start(): void {
    this.since = performance.now();
    this.timer = setTimeout(() => this.expire(), Math.min(MAX_TIMER_MS, Math.max(0, this.remaining)));
  }

  pause(): void {
    if (this.done || this.paused++ > 0 || this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.remaining -= performance.now() - this.since;
  }

  resume(): void {
    if (this.paused === 0 || --this.paused > 0 || this.done) return;
    this.start();
  }

  clear(): void {
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    clearTimeout(this.hard);
  }
}
