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

  hold(p: Promise<unknown>): void {
    this.holds++;
    const drop = () => {
      this.holds--;
      this.settle();
    };
    p.then(drop, drop);
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
