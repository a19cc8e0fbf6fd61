/**
 * A request's share of the ingress's in-flight byte budget (http.limits.max_in_flight_bytes, docs/http.md
 * "Backpressure"), freed exactly once: after its response closed (finished, or its client gone) and every hold on it
 * settled (a batch's send: the producer keeps the records until it ends, also past a 503 on the send timeout).
 */
export class Reservation {
  private holds = 0;
  private closed = false;
  private freed = false;
  constructor(private readonly free: () => void) {}

  /**
   * Keeps the bytes reserved until the returned function is called (once; later calls do nothing). Undefined when
   * the reservation is already freed — its client left before the handler ran (a gzipped body is decoded on the
   * thread pool, so the hang-up can come first) — and the caller must not begin the work: its bytes would be held
   * by nobody's count (audit #24 r2, finding 4).
   */
  hold(): (() => void) | undefined {
    if (this.freed) return undefined;
    this.holds++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.holds--;
      this.settle();
    };
  }

  close(): void {
    this.closed = true;
    this.settle();
  }

  private settle(): void {
    if (this.closed && this.holds === 0 && !this.freed) {
      this.freed = true;
      this.free();
    }
  }
}
