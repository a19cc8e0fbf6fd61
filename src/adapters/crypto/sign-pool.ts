/**
 * Ed25519 signing on worker threads, for the ledger's per-entry signatures (ACM §11). One signature costs
 * ~50 µs of CPU here (OpenSSL through node:crypto), more than everything else the sink does for a
 * decision together: on the main thread it capped the sink stage (bench:sink, full-stage line). The hash
 * chain stays on the caller's thread (it is sequential per agent); only the signatures, which nothing else
 * depends on, are computed here, in order, in slices spread over the threads.
 *
 * The worker is a constant script evaluated by the Worker constructor (`eval: true`) so it runs the same
 * under tsx, from dist/ and in tests; it never sees policy or trace text, only hex hashes and the key.
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { StewardError } from '../../errors.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createPrivateKey, sign } = require('node:crypto');
const key = createPrivateKey({ key: Buffer.from(workerData.key), format: 'der', type: 'pkcs8' });
parentPort.on('message', ({ id, hashes }) => {
  try {
    const out = new Array(hashes.length);
    for (let i = 0; i < hashes.length; i++) out[i] = sign(null, Buffer.from(hashes[i], 'hex'), key).toString('base64');
    parentPort.postMessage({ id, sigs: out });
  } catch (e) {
    parentPort.postMessage({ id, error: String(e && e.message || e) });
  }
});
`;

export interface SignPool {
  /** Signatures (base64) of the given hex hashes, in order. */
  signMany(hashesHex: readonly string[]): Promise<string[]>;
  close(): Promise<void>;
}

interface Pending {
  resolve: (sigs: string[]) => void;
  reject: (e: unknown) => void;
  /** The worker slot the request went to: only its requests fail when it dies. */
  slot: number;
}

/** Hashes per message to a worker: big enough to amortise the round trip, small enough to spread a batch over threads. */
const SLICE = 256;

/** Default thread count: the cores left besides the main thread, at least 1, at most 4. */
export function defaultSignThreads(): number {
  return Math.min(4, Math.max(1, availableParallelism() - 1));
}

export function createSignPool(privateKey: KeyObject | string, threads = defaultSignThreads(), hooks: { onSpawn?: (w: Worker, slot: number) => void } = {}): SignPool {
  const key = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  if (key.asymmetricKeyType !== 'ed25519') throw new StewardError('STEWARD_CONFIG', 'ledger signing key must be Ed25519');
  const der = key.export({ format: 'der', type: 'pkcs8' });
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let closed = false;
  const n = Math.max(1, threads);
  const workers: (Worker | undefined)[] = new Array(n);
  const backoff: number[] = new Array(n).fill(100);
  const spawn = (i: number): void => {
    if (closed) return;
    let w: Worker;
    try {
      w = new Worker(WORKER_SOURCE, { eval: true, workerData: { key: der } });
    } catch {
      setTimeout(() => spawn(i), backoff[i]).unref();
      backoff[i] = Math.min(5000, backoff[i]! * 2);
      return;
    }
    // The pool must not keep a finished process alive; pending work holds its own promises.
    w.unref();
    let dead = false;
    w.on('message', (m: { id: number; sigs?: string[]; error?: string }) => {
      backoff[i] = 100;
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.sigs) p.resolve(m.sigs);
      else p.reject(new StewardError('STEWARD_LEDGER_CHAIN', `signing failed: ${m.error}`));
    });
    const fail = (why: string) => {
      if (closed || dead) return;
      dead = true;
      workers[i] = undefined;
      // Its requests fail as retryable (the caller retries the whole append); it is replaced after a backoff
      // that grows while replacements keep dying.
      const err = new StewardError('STEWARD_LEDGER_CHAIN', `ledger signing thread ${why}`, { retryable: true });
      for (const [id, p] of pending) {
        if (p.slot !== i) continue;
        pending.delete(id);
        p.reject(err);
      }
      setTimeout(() => spawn(i), backoff[i]).unref();
      backoff[i] = Math.min(5000, backoff[i]! * 2);
    };
    w.on('error', (e) => fail(`failed: ${e.message}`));
    w.on('exit', (code) => fail(`exited (code ${code})`));
    workers[i] = w;
    hooks.onSpawn?.(w, i);
  };
  for (let i = 0; i < n; i++) spawn(i);
  let rr = 0;
  const send = (hashes: string[]): Promise<string[]> =>
    new Promise<string[]>((resolve, reject) => {
      // The next live thread; none while every one is being replaced.
      let slot = -1;
      for (let k = 0; k < n; k++) {
        const i = (rr + k) % n;
        if (workers[i]) {
          slot = i;
          break;
        }
      }
      if (slot >= 0) rr = slot + 1;
      if (slot < 0) return reject(new StewardError('STEWARD_LEDGER_CHAIN', 'no ledger signing thread is running (restarting)', { retryable: true }));
      const id = nextId++;
      pending.set(id, { resolve, reject, slot });
      workers[slot]!.postMessage({ id, hashes });
    });
  return {
    async signMany(hashesHex) {
      if (closed) throw new StewardError('STEWARD_LEDGER_CHAIN', 'signing pool is closed');
      if (hashesHex.length === 0) return [];
      const parts: Promise<string[]>[] = [];
      for (let i = 0; i < hashesHex.length; i += SLICE) parts.push(send(hashesHex.slice(i, i + SLICE)));
      return (await Promise.all(parts)).flat();
    },
    async close() {
      closed = true;
      for (const p of pending.values()) p.reject(new StewardError('STEWARD_LEDGER_CHAIN', 'signing pool closed'));
      pending.clear();
      await Promise.all(workers.map((w) => w?.terminate()));
    },
  };
}
