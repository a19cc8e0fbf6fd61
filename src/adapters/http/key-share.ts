/**
 * What one API key holds of the ingress's shared budgets (docs/http.md "Backpressure"): its reserved request bytes
 * and its open SSE streams. Without a per-key count one key could spend the whole process-wide budget — 64 gzip
 * uploads that never send their body locked every other agent out of every POST route for the client timeout
 * (audit #24 r4, finding 2). Entries exist only while a key holds something, so revoked or rotated keys leave nothing.
 */
export class KeyShare {
  private readonly held = new Map<string, number>();

  get(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Counts `n` for `key`; the returned function gives it back (once; later calls do nothing). */
  take(key: string, n: number): () => void {
    this.held.set(key, this.get(key) + n);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = this.get(key) - n;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }

  /** Keys holding something now (tests: nothing is left behind). */
  get size(): number {
    return this.held.size;
  }
}
