/**
 * The batch ingest behind POST /v1/ingest/traces/batch and /v1/ingest/trace (docs/http.md "Ingest"): the batch's
 * idempotency keys claimed in one call while every event is mapped and validated (nothing is sent from a batch with
 * a bad event, and its claims are released), the claimed traces sent in one send, keys pending under another request
 * waited for (bounded), then — after the answer — the produced keys finalised as done, or released after a failed
 * send (docs/spec-decisions.md D39).
 */
import { StewardError } from '../../errors.js';
import type { AgentInfo, Trace } from '../../engine/types.js';
import { validateTrace } from '../kafka/serde.js';
import { acgpEventToTrace, type AcgpEvent } from './acgp-mapping.js';
import { newClaimId, type BatchClaim, type IdempotencyClaims } from '../redis/idempotency-claims.js';

/**
 * How long a batch waits for its send before it is answered 503 (the send goes on and settles its claims when it
 * ends): below the acgp client's 30 s read timeout, so the client is told rather than left to time out. The pending
 * claims' stale bound (idempotency-claims PENDING_STALE_MS) is twice this. The default of http.idempotency.send_timeout_ms.
 */
export const INGEST_SEND_TIMEOUT_MS = 20_000;

/**
 * How long, from its start, a batch waits for keys pending under another request to settle before it is answered
 * 503 STEWARD_HTTP_PENDING; a send of keys claimed while waiting gets at most LATE_SEND_TIMEOUT_MS, so an answer
 * comes within max(INGEST_SEND_TIMEOUT_MS, 15 + 10 s), under the acgp client's 30 s read timeout.
 */
export const PENDING_WAIT_MS = 15_000;
const LATE_SEND_TIMEOUT_MS = 10_000;

/** Attempts of a finalise or release that fails (Redis unreachable, failover), and the pause before each retry. */
const SETTLE_DELAYS_MS = [0, 100, 500, 2_000];

export interface BatchIngestDeps {
  /** Produces a trace to acgp.traces, key = its agent id (StewardClient.publish). */
  publish(trace: Trace): Promise<void>;
  /**
   * Produces a batch's traces in one send (key = agent id, value = `json`, the trace's JSON text already made
   * for the size check; `key` the event's idempotency key, '' for none); rejects when any is not acknowledged. Used
   * instead of `publish` when present.
   */
  publishBatch?(items: readonly { trace: Trace; json: string; key: string }[]): Promise<void>;
  /**
   * Claims a batch's event keys for its agent in one round trip ('' names no key and always passes); finalise()
   * marks produced keys done, release() hands back claims whose events were not produced. Absent: every event is
   * produced, and the answer counts no `duplicates` (http.idempotency.dedupe 'pipeline': publishBatch writes the
   * keys into the records and the tripwire stage drops the copies, docs/spec-decisions.md D52).
   */
  idempotency?: IdempotencyClaims;
  /** Told when a finalise or release still fails after its retries (a pino logger's warn). */
  warn?(fields: Record<string, unknown>, msg: string): void;
}

/** The answer to send: status, body, and a Retry-After header for a 503. */
export interface IngestAnswer {
  status: 200 | 400 | 422 | 503;
  body: Record<string, unknown>;
  retryAfter?: string;
  /** Settles when every send the batch began has ended — later than the answer after a send timeout: until then the producer holds the batch's records (the ingress keeps their bytes reserved). */
  sent: Promise<void>;
}
type Answer = Omit<IngestAnswer, 'sent'>;

/** The trace's JSON text, refused when over limits.max_trace_bytes (STEWARD_TRACE_TOO_LARGE). */
export function sizedTraceJson(trace: Trace, maxTraceBytes: number): string {
  const json = JSON.stringify(trace);
  // UTF-8 is at most 3 bytes per UTF-16 unit: the exact count only near the limit.
  const size = json.length * 3 <= maxTraceBytes ? json.length : Buffer.byteLength(json);
  if (size > maxTraceBytes) throw new StewardError('STEWARD_TRACE_TOO_LARGE', `trace is ${size} bytes as JSON, over limits.max_trace_bytes ${maxTraceBytes}`);
  return json;
}

/**
 * The key of an event that names none, in a batch with a key (docs/http.md "Idempotency"): the batch key and the
 * event's index, apart by a control character, which no key an event names may hold, so the two never meet (an event
 * naming `B7:0` once suppressed event 0 of a later batch B7: audit #24 r4, finding 3).
 */
export const generatedKey = (batchKey: string, index: number): string => `${batchKey}\u001f${index}`;

/**
 * Why a key given by the client cannot be an idempotency key, or undefined: a lone UTF-16 surrogate (it has no UTF-8
 * form: Redis would see U+FFFD, so `\ud800`, `\udfff` and `\ufffd` were one key) or a control character (reserved
 * for generated keys).
 */
export function badKeyText(k: string | undefined): string | undefined {
  if (k === undefined) return undefined;
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    if (c < 0x20) return 'contains a control character';
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = k.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
      else return 'contains a lone UTF-16 surrogate';
    }
  }
  return undefined;
}

/**
 * A batch ingest function, and `idle(maxMs)`: resolves once every send and claim settlement begun so far has ended,
 * or after maxMs (a send kafkajs is still retrying leaves its keys pending; the stale bound ends that).
 */
export interface BatchIngest {
  (events: readonly AcgpEvent[], agent: AgentInfo, batchKey: string | undefined): Promise<IngestAnswer>;
  idle(maxMs: number): Promise<void>;
}

export function batchIngest(deps: BatchIngestDeps, o: { maxTraceBytes: number; now: () => Date; sendTimeoutMs?: number; pendingWaitMs?: number }): BatchIngest {
  const sendTimeoutMs = o.sendTimeoutMs ?? INGEST_SEND_TIMEOUT_MS;
  const pendingWaitMs = o.pendingWaitMs ?? PENDING_WAIT_MS;
  /** Set by idle() (a shutdown): batches waiting for keys pending elsewhere stop waiting. */
  let closing = false;
  const settling = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    settling.add(p);
    const done = () => void settling.delete(p);
    p.then(done, done);
  };
  /** Runs a finalise or release with bounded retries; a last failure is logged (the keys stay pending until the stale bound). */
  const settle = (what: 'finalise' | 'release', agentId: string, keys: string[], run: () => Promise<void>): Promise<void> =>
    (async () => {
      let last: unknown;
      for (const d of SETTLE_DELAYS_MS) {
        if (d > 0) await new Promise((r) => setTimeout(r, d));
        try {
          return await run();
        } catch (e) {
          last = e;
        }
      }
      deps.warn?.(
        { agent_id: agentId, keys: keys.length, attempts: SETTLE_DELAYS_MS.length, err: (last as Error)?.message },
        `idempotency ${what} failed: the keys stay pending until the stale bound, then count as unclaimed (docs/http.md "Idempotency")`,
      );
    })();
  const run = async (events: readonly AcgpEvent[], agent: AgentInfo, batchKey: string | undefined, sends: Promise<unknown>[]): Promise<Answer> => {
    const started = Date.now();
    // The claim goes out first and its round trip overlaps the mapping below (docs/spec-decisions.md D39): nothing
    // is sent before it answers, so a retried batch is still produced once; a batch refused for a bad event
    // releases what it claimed.
    const bad = badKeyText(batchKey);
    if (bad) return { status: 400, body: { error: 'STEWARD_HTTP_BAD_REQUEST', message: `the batch key (X-Idempotency-Key, else batch_id) ${bad}` } };
    const keys = new Array<string>(events.length);
    for (let i = 0; i < events.length; i++) {
      const k = events[i].idempotency_key;
      if (typeof k === 'string' && k !== '') {
        const why = badKeyText(k);
        if (why) return { status: 422, body: { error: 'STEWARD_TRACE_SCHEMA', message: `event invalid at /idempotency_key: it ${why}`, index: i } };
        keys[i] = k;
      } else keys[i] = batchKey ? generatedKey(batchKey, i) : '';
    }
    const idem = deps.idempotency;
    // The claim id is made here, so that a claim whose answer never came can still be released by it.
    const claimId = newClaimId();
    const claiming: Promise<BatchClaim> = idem ? idem.claim(agent.id, keys, claimId, batchKey) : Promise.resolve({ states: keys.map(() => 'claimed' as const), id: claimId });
    // Claims of one turn may be written together at its end (D53): the mapping waits for that write, so the claim's
    // round trip overlaps it still. One event-loop hop when claims are written at once.
    if (idem) {
      // Handled here, awaited below: a claim that fails during the hop must not count as an unhandled rejection.
      claiming.catch(() => undefined);
      await new Promise<void>((r) => setImmediate(r));
    }
    // Map, validate and serialise each event in one pass; the JSON made for the size check is the record value.
    const traces: { trace: Trace; json: string; key: string }[] = new Array(events.length);
    let refused: Answer | undefined;
    for (let i = 0; i < events.length; i++) {
      try {
        const trace = validateTrace(acgpEventToTrace(events[i], agent.id, o.now));
        traces[i] = { trace, json: sizedTraceJson(trace, o.maxTraceBytes), key: keys[i] };
      } catch (e) {
        const err = e as StewardError;
        refused = { status: 422, body: { error: err.code ?? 'STEWARD_TRACE_SCHEMA', message: err.message, index: i } };
        break;
      }
    }
    let claim: BatchClaim;
    try {
      claim = await claiming;
    } catch (e) {
      // The script may have run although its answer was lost: hand back whatever it took (by the id, nothing
      // another claim holds), so the client's retry is not answered STEWARD_HTTP_PENDING until the stale bound.
      if (idem) {
        const ks = keys.filter((k) => k !== '');
        if (ks.length > 0) track(settle('release', agent.id, ks, () => idem.release(agent.id, ks, claimId, batchKey)));
      }
      if (refused) return refused;
      throw e;
    }
    const fresh: number[] = [];
    for (let i = 0; i < claim.states.length; i++) if (claim.states[i] === 'claimed') fresh.push(i);
    const keysOf = (idx: readonly number[]) => idx.map((i) => keys[i]);
    // Hands back this claim's pending entries of events not produced, so a retry sends them.
    const release = (idx: readonly number[]) => {
      if (!idem || idx.length === 0) return Promise.resolve();
      const ks = keysOf(idx);
      const p = settle('release', agent.id, ks, () => idem.release(agent.id, ks, claimId, batchKey));
      track(p);
      return p;
    };
    if (refused) {
      await release(fresh);
      return refused;
    }
    /** Sends the events at `idx` and settles their claims; answers the indices not produced, or 'timeout'. */
    const produce = async (idx: number[], timeoutMs: number): Promise<number[] | 'timeout'> => {
      // The send's outcome settles the claims whenever it comes; the answer waits for it at most timeoutMs.
      const sending: Promise<number[]> = deps.publishBatch
        ? // One send for the batch (concurrent requests' sends merge further in the coalescing producer).
          deps.publishBatch(idx.length === traces.length ? traces : idx.map((i) => traces[i])).then(() => [], () => idx)
        : Promise.allSettled(idx.map((i) => deps.publish(traces[i].trace))).then((rs) => idx.filter((_, j) => rs[j].status === 'rejected'));
      const settled = sending.then((bad) => {
        const ok = bad.length === 0 ? idx : idx.filter((i) => !bad.includes(i));
        // After the answer is written (setImmediate runs after the reply's microtasks): no round trip on its path.
        // A retry arriving before this lands sees the keys pending (and waits for them, below).
        if (idem && ok.length > 0) {
          const ks = keysOf(ok);
          track(new Promise<void>((resolve) => setImmediate(() => void settle('finalise', agent.id, ks, () => idem.finalise(agent.id, ks, claimId, batchKey)).then(resolve))));
        }
        return release(bad).then(() => bad);
      });
      track(settled.then(() => undefined));
      sends.push(settled);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
      const got = await Promise.race([settled, timedOut]);
      clearTimeout(timer);
      return got;
    };
    const notProduced = (got: number[] | 'timeout', n: number, timeoutMs: number): Answer | undefined =>
      got === 'timeout'
        ? { status: 503, retryAfter: '2', body: { error: 'STEWARD_KAFKA', message: `the traces topic did not acknowledge ${n} events within ${timeoutMs} ms; retry the batch (events it produces meanwhile count as duplicates)` } }
        : got.length > 0
          ? { status: 503, retryAfter: '2', body: { error: 'STEWARD_KAFKA', message: `${got.length} of ${traces.length} events could not be produced to the traces topic; retry the batch` } }
          : undefined;
    let accepted = 0;
    if (fresh.length > 0) {
      const stop = notProduced(await produce(fresh, sendTimeoutMs), fresh.length, sendTimeoutMs);
      if (stop) return stop;
      accepted = fresh.length;
    }
    // Keys pending under another request (a retry of this batch, here or on another replica): a duplicate only once
    // that request produced them. Rather than answer 503 at once — the acgp client gives up after 3.5-10.5 s of
    // retries and reports the batch failed — wait for them to settle, polling with this claim's id (the claim is
    // safe to run again): done ones are duplicates, released (or stale) ones are claimed by the poll and produced
    // here. Bounded by pendingWaitMs from the request's start, and the sends after it by LATE_SEND_TIMEOUT_MS, so
    // the answer comes within the client's 30 s read timeout.
    let waiting: number[] = [];
    for (let i = 0; i < claim.states.length; i++) if (claim.states[i] === 'pending') waiting.push(i);
    const until = started + pendingWaitMs;
    // A shutdown ends the wait (the 503 below): the wait's bound (up to ~25 s with its sends) is past close()'s.
    for (let pause = 50; idem && waiting.length > 0 && !closing && Date.now() + pause <= until; pause = Math.min(pause * 2, 500)) {
      await new Promise((r) => setTimeout(r, pause));
      if (closing) break;
      const ks = keysOf(waiting);
      let polled: BatchClaim;
      try {
        polled = await idem.claim(agent.id, ks, claimId, batchKey);
      } catch {
        // The poll may have claimed keys although its answer was lost: hand back this claim's entries of them.
        track(settle('release', agent.id, ks, () => idem.release(agent.id, ks, claimId, batchKey)));
        break;
      }
      const mine = waiting.filter((_, j) => polled.states[j] === 'claimed');
      waiting = waiting.filter((_, j) => polled.states[j] === 'pending');
      if (mine.length > 0) {
        const late = Math.min(sendTimeoutMs, LATE_SEND_TIMEOUT_MS);
        const stop = notProduced(await produce(mine, late), mine.length, late);
        if (stop) return stop;
        accepted += mine.length;
      }
    }
    if (waiting.length > 0) {
      // Still pending: the client retries and is told then (done: duplicates; released: produced by it).
      return {
        status: 503,
        retryAfter: '1',
        body: { error: 'STEWARD_HTTP_PENDING', message: `${waiting.length} of ${traces.length} events are being produced by an earlier request with the same idempotency keys; retry the batch (the other ${traces.length - waiting.length} are produced or duplicates)` },
      };
    }
    return { status: 200, body: { accepted, ...(idem && { duplicates: traces.length - accepted }), ...(batchKey && { batch_id: batchKey }) } };
  };
  // Tracked from its start, so that idle() (a shutdown) also waits for a batch whose claim is still in flight: its
  // send and settlements are tracked only once the claim answers.
  const ingest = async (events: readonly AcgpEvent[], agent: AgentInfo, batchKey: string | undefined): Promise<IngestAnswer> => {
    const sends: Promise<unknown>[] = [];
    const answer = run(events, agent, batchKey, sends);
    track(answer.then(() => undefined, () => undefined));
    const a = await answer;
    return { ...a, sent: Promise.allSettled(sends).then(() => undefined) };
  };
  return Object.assign(ingest, {
    async idle(maxMs: number) {
      closing = true;
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((r) => (timer = setTimeout(r, maxMs)));
      let over = false;
      void limit.then(() => (over = true));
      while (settling.size > 0 && !over) await Promise.race([Promise.allSettled([...settling]), limit]);
      clearTimeout(timer);
    },
  });
}
