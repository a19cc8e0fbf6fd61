/**
 * An LlmClient whose HTTP exchanges run on a worker thread of their own (llm.thread; docs/pipeline.md "Gate
 * stage"): the thread owns the undici client (llm-thread.ts), the calling thread pays a structured-clone
 * message instead of an HTTP exchange (request encoding, writev, response parsing, undici bookkeeping). The
 * calls of one event-loop turn go in one message, and the thread answers those of one turn in one message.
 *
 * Behaviour is the direct client's: the same provider code runs the call with the same timeout, status and
 * error classification (codes and retryable flag cross the thread as data); a caller's abort answers at once
 * with the direct client's error and cancels the exchange. A thread that dies fails its calls in flight as
 * retryable (STEWARD_LLM_HTTP) and a new one is started for the next calls.
 */
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { LlmClient, LlmRequest, LlmResponse, LlmUsage } from '../../engine/types.js';
import { StewardError, type StewardErrorCode } from '../../errors.js';
import { llmProvider, type LlmSettings } from './direct.js';

/** Main → thread. */
export interface ThreadIn {
  calls?: [number, LlmRequest][];
  cancels?: number[];
  /** Answered with `{ ready: true }` (ThreadedLlmClient.ready). */
  ping?: boolean;
}

/** Thread → main, one per call (also for a cancelled one: the main thread ignores it). */
export type ThreadAnswer =
  | { id: number; text: string; model?: string; usage?: LlmUsage }
  | { id: number; error: { code: string; message: string; retryable: boolean; details?: Record<string, unknown> } };

interface Pending {
  resolve: (r: LlmResponse) => void;
  reject: (e: unknown) => void;
  t0: number;
  /** Set once sent: the thread it went to (only that thread's death fails it). */
  worker?: Worker;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** The thread's entry: the compiled module next to this one, or under tsx/vitest the TypeScript source loaded through tsx. */
function spawnWorker(settings: LlmSettings): Worker {
  const self = import.meta.url;
  if (self.endsWith('.js')) return new Worker(new URL('./llm-thread.js', self), { workerData: settings });
  const tsx = pathToFileURL(createRequire(self).resolve('tsx/esm/api')).href.replace(/\.cjs$/, '.mjs');
  const boot = `const { workerData } = require('node:worker_threads');
import(workerData.tsx).then((m) => m.register()).then(() => import(workerData.entry));`;
  return new Worker(boot, { eval: true, workerData: { ...settings, tsx, entry: new URL('./llm-thread.ts', self).href } });
}

export class ThreadedLlmClient implements LlmClient {
  private readonly settings: LlmSettings;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private calls: [number, LlmRequest][] = [];
  private cancels: number[] = [];
  private scheduled = false;
  private closed = false;
  /** Threads started so far (tests: a dead thread is replaced). */
  spawned = 0;

  constructor(o: LlmSettings) {
    llmProvider(o); // a wrong provider is a configuration error here, not on the first call
    this.settings = { provider: o.provider, baseUrl: o.baseUrl, apiKey: o.apiKey, model: o.model };
  }

  complete(req: LlmRequest, signal?: AbortSignal): Promise<LlmResponse> {
    if (this.closed) return Promise.reject(new StewardError('STEWARD_LLM_HTTP', 'LLM client closed', { retryable: true }));
    // As the direct client: a caller's abort is "LLM call aborted", not retryable (src/adapters/llm/http.ts).
    if (signal?.aborted) return Promise.reject(aborted());
    return new Promise<LlmResponse>((resolve, reject) => {
      const id = this.nextId++;
      const p: Pending = { resolve, reject, t0: performance.now() };
      if (signal) {
        p.signal = signal;
        p.onAbort = () => {
          if (!this.pending.delete(id)) return;
          if (p.worker) this.queue(undefined, id);
          else this.calls = this.calls.filter((c) => c[0] !== id);
          this.idle();
          reject(aborted());
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      if (this.pending.size === 0) this.worker?.ref();
      this.pending.set(id, p);
      this.queue([id, { model: req.model, system: req.system, prompt: req.prompt, temperature: req.temperature, maxTokens: req.maxTokens, timeoutMs: req.timeoutMs }]);
    });
  }

  /**
   * Starts the thread now and resolves once it has loaded its modules (tens to hundreds of ms: undici, and the
   * sources under tsx), so a process pays that at start-up instead of on its first calls.
   */
  async ready(): Promise<void> {
    if (this.closed) throw new StewardError('STEWARD_LLM_HTTP', 'LLM client closed', { retryable: true });
    const w = (this.worker ??= this.start());
    await new Promise<void>((resolve, reject) => {
      const onMsg = (m: { ready?: boolean }) => {
        if (!m.ready) return;
        off();
        resolve();
      };
      const onExit = (code: number) => {
        off();
        reject(new StewardError('STEWARD_LLM_HTTP', `LLM thread exited (code ${code}) while starting`, { retryable: true }));
      };
      const off = () => {
        w.off('message', onMsg);
        w.off('exit', onExit);
      };
      w.on('message', onMsg);
      w.on('exit', onExit);
      w.postMessage({ ping: true } satisfies ThreadIn);
    });
  }

  /** Stops the thread; calls still in flight fail as retryable. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    this.failAll(undefined, 'LLM client closed');
    if (w) await w.terminate();
  }

  private queue(call?: [number, LlmRequest], cancel?: number): void {
    if (call) this.calls.push(call);
    if (cancel !== undefined) this.cancels.push(cancel);
    if (this.scheduled) return;
    this.scheduled = true;
    // One message per event-loop turn carries every call made in it.
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.closed) return;
    const msg: ThreadIn = {};
    if (this.calls.length) msg.calls = this.calls;
    if (this.cancels.length && this.worker) msg.cancels = this.cancels;
    this.calls = [];
    this.cancels = [];
    if (!msg.calls && !msg.cancels) return;
    let w: Worker;
    try {
      w = this.worker ??= this.start();
    } catch (e) {
      // No thread could be started (out of memory or threads): these calls fail as retryable; the next call tries again.
      for (const [id] of msg.calls ?? []) this.fail(id, `LLM request failed: no LLM thread (${(e as Error).message})`);
      this.idle();
      return;
    }
    for (const [id] of msg.calls ?? []) {
      const p = this.pending.get(id);
      if (p) p.worker = w;
    }
    w.postMessage(msg);
  }

  private start(): Worker {
    const w = spawnWorker(this.settings);
    this.spawned++;
    if (this.pending.size === 0) w.unref();
    w.on('message', (m: { done?: ThreadAnswer[] }) => m.done && this.answered(m.done));
    w.on('error', (e) => this.died(w, `failed: ${e.message}`));
    w.on('exit', (code) => this.died(w, `exited (code ${code})`));
    return w;
  }

  private answered(done: ThreadAnswer[]): void {
    for (const a of done) {
      const p = this.pending.get(a.id);
      if (!p) continue;
      this.pending.delete(a.id);
      this.settle(p);
      if ('text' in a) p.resolve({ text: a.text, ...(a.model !== undefined && { model: a.model }), latencyMs: performance.now() - p.t0, ...(a.usage && { usage: a.usage }) });
      else p.reject(new StewardError(a.error.code as StewardErrorCode, a.error.message, { retryable: a.error.retryable, details: a.error.details }));
    }
    this.idle();
  }

  /** Its calls in flight fail as retryable; the next flush starts a new thread. */
  private died(w: Worker, why: string): void {
    if (this.worker === w) this.worker = undefined;
    if (this.closed) return;
    this.failAll(w, `LLM thread ${why}`);
  }

  private fail(id: number, message: string): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    this.settle(p);
    p.reject(new StewardError('STEWARD_LLM_HTTP', message, { retryable: true }));
  }

  private failAll(w: Worker | undefined, why: string): void {
    for (const [id, p] of this.pending) if (!w || p.worker === w) this.fail(id, `LLM request failed: ${why}`);
    if (!w) this.calls = [];
    this.idle();
  }

  private settle(p: Pending): void {
    if (p.onAbort) p.signal!.removeEventListener('abort', p.onAbort);
  }

  /** An idle thread must not keep a finished process alive; one with calls in flight must (like an open socket). */
  private idle(): void {
    if (this.pending.size === 0) this.worker?.unref();
  }
}

function aborted(): StewardError {
  return new StewardError('STEWARD_LLM_TIMEOUT', 'LLM call aborted', { retryable: false });
}
