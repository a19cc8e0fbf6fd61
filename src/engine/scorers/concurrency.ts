/** A counting semaphore: bounds LLM calls in flight so a burst of traces cannot overrun the provider. */
export class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  /** Resolves once a slot is held; every acquire must be followed by one release. */
  acquire(): Promise<void> {
    if (this.active >= this.limit) return new Promise<void>((res) => this.waiting.push(res));
    this.active++;
    return Promise.resolve();
  }

  /** Takes a free slot at once (true) or none (false): no promise when a slot is free. */
  tryAcquire(): boolean {
    if (this.active >= this.limit) return false;
    this.active++;
    return true;
  }

  release(): void {
    const next = this.waiting.shift();
    // Hand the slot straight to the next waiter; `active` stays the same.
    if (next) next();
    else this.active--;
  }

  get inFlight(): number {
    return this.active;
  }
}

/** Insertion-ordered LRU with a size bound. */
export class LruCache<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.map.get(k);
    if (v !== undefined) {
      this.map.delete(k);
      this.map.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
  get size(): number {
    return this.map.size;
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
