/**
 * The ingress's in-flight budgets (docs/http.md "Backpressure"): the request bytes held at once, process-wide and per
 * API key, and each key's open SSE streams. Without a per-key count one key could spend the whole process-wide
 * budget — 64 gzip uploads that never send their body locked every other agent out of every POST route for the
 * client timeout (audit #24 r4, finding 2).
 */

/** What each key holds. Entries exist only while a key holds something, so revoked or rotated keys leave nothing. */
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

/** Request bytes: `max` in all, `maxPerKey` for one key. */
export class InFlightBudget {
  private total = 0;
  readonly perKey = new KeyShare();

  constructor(
    readonly max: number,
    readonly maxPerKey: number,
  ) {}

  get held(): number {
    return this.total;
  }

  /**
   * Reserves `bytes` for `key`: 'busy' when the whole budget would be passed, 'key' when the key's share would be —
   * except that a key holding nothing may always take one request (a share below max_body_bytes must not lock a key
   * out) — else the function that frees them (once).
   */
  take(key: string, bytes: number): 'busy' | 'key' | (() => void) {
    if (this.total + bytes > this.max) return 'busy';
    const keyHeld = this.perKey.get(key);
    if (keyHeld > 0 && keyHeld + bytes > this.maxPerKey) return 'key';
    this.total += bytes;
    const release = this.perKey.take(key, bytes);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.total -= bytes;
      release();
    };
  }
}
