/**
 * The HTTP ingress's per-event idempotency claims (docs/http.md "Idempotency", docs/spec-decisions.md D39). A key
 * has two states: *pending* — claimed, its send in flight — in one sorted set per agent
 * (`<prefix>http:idem:{<agent>}:pending`, score = Redis' time of the claim in µs), owned by the claim whose caller-made
 * id the agent's claims set (`…:claims`) maps to that time, and *done* — produced — in one Redis set per agent and
 * time bucket (`<prefix>http:idem:{<agent>}:<bucket>`, a bucket as long as the window).
 * A claim is one script call per batch: keys done (in the current or the previous bucket's set) are duplicates,
 * keys pending and younger than the stale bound are `pending` (the batch is answered 503, so its client retries
 * once they are done or released), and the others are claimed pending. After an acknowledged send the keys are
 * finalised (added to the bucket's set, removed from the pending set); after a failed one released. A pending
 * entry older than the bound (an ingress that crashed between claim and finalise) counts as unclaimed: its event
 * may be produced twice when the crash came after the send (at-least-once, D39). All of an agent's keys share its
 * hash tag, so the scripts run on a Redis Cluster.
 *
 * A busy agent's bucket is a big set, and Redis frees an expiring key on its main thread: the first finalise in a
 * new bucket UNLINKs the agent's set from two buckets back (freed off the main thread), which its TTL — one window
 * past the time it stops being consulted — would otherwise expire. Only the sets of an agent that sends nothing for
 * a whole window expire by TTL (docs/http.md: `lazyfree-lazy-expire yes` frees those off the main thread too).
 */
import { randomBytes } from 'node:crypto';
import { CLAIM_SCRIPT, FINALISE_SCRIPT, RELEASE_SCRIPT } from './idempotency-scripts.js';
import { isCluster, type RedisClient } from './client.js';

/** How long a pending claim holds by default: twice the ingress's send timeout (ingest-batch INGEST_SEND_TIMEOUT_MS). */
export const PENDING_STALE_MS = 40_000;

export { CLAIM_SCRIPT, FINALISE_SCRIPT, RELEASE_SCRIPT } from './idempotency-scripts.js';

/** A key's state at claim time: claimed by this call, done (a duplicate), or pending under another live claim. */
export type ClaimState = 'claimed' | 'done' | 'pending';

export interface BatchClaim {
  /** One per key, in order ('' names no key: always 'claimed'). */
  states: ClaimState[];
  /** The caller's claim id: finalise() and release() name it, so a release hands back only this claim's entries. */
  id: string;
}

/** A fresh claim id (random, 96 bits): names one batch's claim across a re-sent script call. */
export const newClaimId = (): string => randomBytes(12).toString('base64url');

export interface IdempotencyClaims {
  /**
   * Claims the agent's event keys as pending under `id` (default a fresh newClaimId()), in one round trip; the
   * call may run twice in Redis (a re-sent command) and answers the same.
   */
  claim(agentId: string, keys: readonly string[], id?: string, group?: string): Promise<BatchClaim>;
  /** The keys' events were produced: done from now on (for one to two windows). `group` as given to the claim. */
  finalise(agentId: string, keys: readonly string[], id: string, group?: string): Promise<void>;
  /**
   * The keys' events were not produced: hands back claim `id`'s pending entries, so a retry sends them (also
   * safe after a claim whose answer was lost: it removes nothing another claim holds).
   */
  release(agentId: string, keys: readonly string[], id: string, group?: string): Promise<void>;
  /** Sends the finalises still waiting to ride with a claim, and the claims of the turn, now (a shutdown); resolves when they are answered. */
  close?(): Promise<void>;
}

/** How long the ingress lets a finalise wait for the agent's next claim (D51): a batch every few ms under load. */
export const FINALISE_RIDE_MS = 5;

type Args = (string | number)[];
type Callback = (err: Error | null | undefined, value?: unknown) => void;
interface Waiting {
  args: Args;
  resolve(): void;
  reject(e: unknown): void;
}
type Piped = { stewardIdemFinalise(...a: [...Args, Callback]): Piped; stewardIdemClaim(...a: [...Args, Callback]): Piped; exec(): Promise<unknown> };

interface QueuedClaim {
  agentId: string;
  args: Args;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

/**
 * The finalises of each agent waiting to ride with its next claim (D51), and the claims of one event-loop turn sent
 * together (D53). On this kind of machine a Redis round trip costs the ingress more than the script's work (every
 * socket write wakes a process): a busy agent's next claim comes within milliseconds, so its finalises wait for it and
 * go first in the claim's pipeline; and the batches whose bodies arrived in the same turn (a third of an ingress's
 * claims under load, measured) send their claims as one pipeline at the turn's end — one write, one read. On a single
 * Redis only (a Cluster pipeline goes to one node without redirects). A finalise that no claim takes within `rideMs`
 * goes alone. Each command answers through its own callback (ioredis re-sends a script the server lost, NOSCRIPT,
 * outside the pipeline: its callback has the re-sent answer, the pipeline's array not).
 */
function finaliseRides(redis: RedisClient, rideMs: number, coalesce: boolean) {
  const r = redis as unknown as Scripted;
  const waiting = new Map<string, Waiting[]>();
  let timer: NodeJS.Timeout | undefined;
  /** Claims of the current turn, sent by sendTurn (a setImmediate: after every callback of the turn's poll phase). */
  let turn: QueuedClaim[] = [];
  /** Sends `ws` (and `claims`, after them) as one pipeline; settles once every command has answered or failed. */
  const pipe = (ws: Waiting[], claims: readonly QueuedClaim[]): Promise<void> =>
    new Promise<void>((allDone) => {
      const p = redis.pipeline() as unknown as Piped;
      const open = new Set<{ reject(e: unknown): void }>();
      const answer = (w: { resolve(v?: unknown): void; reject(e: unknown): void }): Callback => {
        open.add(w);
        return (err, value) => {
          if (!open.delete(w)) return;
          if (err) w.reject(err);
          else w.resolve(value);
          if (open.size === 0) allDone();
        };
      };
      for (const w of ws) p.stewardIdemFinalise(...w.args, answer(w));
      for (const c of claims) p.stewardIdemClaim(...c.args, answer(c));
      p.exec().catch((e: unknown) => {
        for (const w of open) w.reject(e);
        open.clear();
        allDone();
      });
    });
  /** The agent's waiting finalises, taken (they ride with its claim). */
  const take = (agentId: string): Waiting[] | undefined => {
    const ws = waiting.get(agentId);
    if (!ws) return undefined;
    waiting.delete(agentId);
    if (waiting.size === 0 && timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    return ws;
  };
  /** Sends the turn's claims, each after its agent's waiting finalises, in one pipeline (one claim alone: as a command). */
  const sendTurn = (): Promise<void> => {
    const cs = turn;
    turn = [];
    const ws: Waiting[] = [];
    for (const c of cs) {
      const mine = take(c.agentId);
      if (mine) for (const w of mine) ws.push(w);
    }
    if (cs.length === 0 && ws.length === 0) return Promise.resolve();
    if (cs.length === 1 && ws.length === 0) {
      const c = cs[0];
      return r.stewardIdemClaim(...c.args).then(c.resolve, c.reject);
    }
    return pipe(ws, cs);
  };
  /** Sends every waiting finalise now, each agent's as one pipeline, and the claims of the turn. */
  const flushAll = async () => {
    const first = sendTurn();
    if (timer) clearTimeout(timer);
    timer = undefined;
    const all = [...waiting.values()];
    waiting.clear();
    await Promise.all([first, ...all.map((ws) => pipe(ws, []))]);
  };
  return {
    finalise(agentId: string, args: Args): Promise<void> {
      if (rideMs <= 0) return r.stewardIdemFinalise(...args).then(() => undefined);
      return new Promise<void>((resolve, reject) => {
        const ws = waiting.get(agentId);
        if (ws) ws.push({ args, resolve, reject });
        else waiting.set(agentId, [{ args, resolve, reject }]);
        timer ??= setTimeout(() => void flushAll(), rideMs);
      });
    },
    withClaim(agentId: string, args: Args): Promise<unknown> {
      if (coalesce) {
        return new Promise((resolve, reject) => {
          turn.push({ agentId, args, resolve, reject });
          if (turn.length === 1) setImmediate(() => void sendTurn());
        });
      }
      const ws = take(agentId);
      if (!ws) return r.stewardIdemClaim(...args);
      return new Promise((resolve, reject) => void pipe(ws, [{ agentId, args, resolve, reject }]));
    },
    flushAll,
  };
}

/** A control character: none may stand in a group key or a suffix (the scripts split G at '\\n'). Our own pattern, not policy or trace text. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f]/;

/**
 * A batch key that can name a group (D48): no '_' (so `H_S` splits at its first '_'), no control character, at most
 * 256 characters (the ingress's X-Idempotency-Key bound).
 */
const isGroupKey = (x: string): boolean => x.length > 0 && x.length <= 256 && !x.includes('_') && !CONTROL.test(x);

/**
 * The caller's keys split for the scripts: the distinct suffixes of `group` as one string G (with the index of each
 * key of the group's form and of its suffix's first occurrence), then the other named keys.
 */
interface SplitKeys {
  group: string;
  /** "\\n<s1>\\n<s2>\\n" over the distinct suffixes in order of first occurrence, or '' (no key of the group's form). */
  blob: string;
  /** Per key of the group's form, three numbers: its index, the index of its suffix among the distinct ones, 1 for a repeat (else 0). */
  gIdx: number[];
  distinct: number;
  pIdx: number[];
  perKey: string[];
}

/**
 * Runs twice per batch on the ingress's path (claim, finalise), once per key: `slice(0, n) === g` and one regex test
 * rather than `startsWith` and a charCode loop (~0.9 → ~0.3 µs a key measured, issue #24), the blob built as it goes.
 */
export function splitKeys(keys: readonly string[], group: string | undefined): SplitKeys {
  const g = group !== undefined && isGroupKey(group) ? group : '';
  const out: SplitKeys = { group: g, blob: '', gIdx: [], distinct: 0, pIdx: [], perKey: [] };
  const head = g.length;
  const seen = head > 0 ? new Map<string, number>() : undefined;
  let blob = '\n';
  let distinct = 0;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (k === '') continue;
    // The group part has no control character (isGroupKey): testing the whole key tests the suffix.
    if (seen && k.length > head + 1 && k.charCodeAt(head) === 95 && k.slice(0, head) === g && !CONTROL.test(k)) {
      // Keys of one group differ only in their suffixes: the key itself is looked up (no slice to hash).
      const at = seen.get(k);
      if (at === undefined) {
        seen.set(k, distinct);
        out.gIdx.push(i, distinct++, 0);
        blob += k.slice(head + 1) + '\n';
      } else out.gIdx.push(i, at, 1);
      continue;
    }
    out.pIdx.push(i);
    out.perKey.push(k);
  }
  out.distinct = distinct;
  if (distinct > 0) out.blob = blob;
  return out;
}

type Scripted = Record<'stewardIdemClaim' | 'stewardIdemFinalise' | 'stewardIdemRelease', (...args: (string | number)[]) => Promise<unknown>>;
const STATE: Record<string, ClaimState> = { '0': 'done', '1': 'claimed', '2': 'pending' };

/**
 * Claims on `redis` (a single Redis or a Cluster; give it a connection without auto-pipelining, so that a claim is
 * written when it is made and overlaps the batch's mapping, D39). `windowSeconds`: the bucket length;
 * `pendingStaleMs`: how long a pending claim holds (default PENDING_STALE_MS).
 */
export function redisIdempotencyClaims(
  redis: RedisClient,
  o: {
    prefix: string;
    windowSeconds: number;
    pendingStaleMs?: number;
    now?: () => number;
    /** 'caller': the bucket from `now` (tests of bucket turns); default Redis' clock. Pending times are Redis' clock always. */
    bucketClock?: 'redis' | 'caller';
    /**
     * false: every key is claimed per key (groups are still read, prefixes still written), for a rolling upgrade from
     * a version before groups, whose replicas do not read them (D48). Default true.
     */
    groups?: boolean;
    /**
     * How long a finalise may wait to ride with the agent's next claim, in one pipeline (one write, one read):
     * 0 (default) sends each finalise on its own. The ingress passes FINALISE_RIDE_MS (D51). Ignored on a Cluster.
     */
    finaliseRideMs?: number;
    /**
     * true: the claims made in one event-loop turn go out at its end as one pipeline (D53), so a caller that wants the
     * claim's round trip to overlap its own work yields once (setImmediate) before that work. The ingress passes
     * true. Ignored on a Cluster. Default false: each claim is written when it is made.
     */
    coalesceClaims?: boolean;
  },
): IdempotencyClaims {
  redis.defineCommand('stewardIdemClaim', { lua: CLAIM_SCRIPT });
  redis.defineCommand('stewardIdemFinalise', { lua: FINALISE_SCRIPT });
  redis.defineCommand('stewardIdemRelease', { lua: RELEASE_SCRIPT });
  const r = redis as unknown as Scripted;
  const now = o.now ?? Date.now;
  const w = o.windowSeconds;
  const stale = o.pendingStaleMs ?? PENDING_STALE_MS;
  // The agent's hash tag, made once per agent: every key of an agent lives in one slot.
  const tags = new Map<string, string>();
  const base = (agentId: string) => {
    let b = tags.get(agentId);
    if (b === undefined) {
      b = `${o.prefix}http:idem:{${encodeURIComponent(agentId)}}:`;
      if (tags.size > 10_000) tags.clear();
      tags.set(agentId, b);
    }
    return b;
  };
  const bucketOf = () => Math.floor(now() / 1000 / w);
  const fixed = o.bucketClock === 'caller';
  /** KEYS for the claim and finalise scripts (idempotency-scripts.ts): 19 keys of the agent's slot. */
  const keysAround = (k: string, b: number) => {
    const bs = [b - 3, b - 2, b - 1, b, b + 1];
    return [19, ...bs.map((x) => k + x), k + 'pending', k + 'claims', ...bs.map((x) => k + 'g' + x), ...bs.map((x) => k + 'p' + x), k + 'gpending', k + 'gindex'] as const;
  };
  const split = o.groups === false ? (keys: readonly string[]) => splitKeys(keys, undefined) : splitKeys;
  const groupArgs = (sp: SplitKeys) => [sp.group, sp.blob, ...sp.perKey];
  // Not on a Cluster: ioredis sends a Cluster pipeline to a fixed node, so a ridden claim would not follow MOVED/ASK
  // or a failover — and the pipeline's own re-run after one would claim behind the caller's back (review of D51).
  const cluster = isCluster(redis);
  const rides = finaliseRides(redis, cluster ? 0 : (o.finaliseRideMs ?? 0), !cluster && o.coalesceClaims === true);
  return {
    async claim(agentId, keys, id = newClaimId(), group) {
      const states = new Array<ClaimState>(keys.length).fill('claimed');
      const sp = split(keys, group);
      if (sp.blob === '' && sp.pIdx.length === 0) return { states, id };
      const b = bucketOf();
      const args = [...keysAround(base(agentId), b), b, w, fixed ? b : '', stale, id, ...groupArgs(sp)];
      // The agent's finalises waiting to ride go first, in the same write: this claim already sees them done.
      const got = String(await rides.withClaim(agentId, args));
      // 'F': the whole group claimed as one entry; 'S': one character per distinct suffix; then one per key.
      let at = 0;
      if (sp.blob !== '') {
        const fast = got[0] === 'F';
        at = fast ? 1 : 1 + sp.distinct;
        const gi = sp.gIdx;
        for (let j = 0; j < gi.length; j += 3) {
          const first = fast ? 'claimed' : STATE[got[1 + gi[j + 1]]];
          // A key repeated within the call: a duplicate of the one claimed before it, else the same state.
          states[gi[j]] = gi[j + 2] === 1 && first === 'claimed' ? 'done' : first;
        }
      }
      for (let j = 0; j < sp.pIdx.length; j++) states[sp.pIdx[j]] = STATE[got[at + j]];
      return { states, id };
    },
    async finalise(agentId, keys, id, group) {
      const sp = split(keys, group);
      if (sp.blob === '' && sp.pIdx.length === 0) return;
      const b = bucketOf();
      await rides.finalise(agentId, [...keysAround(base(agentId), b), b, w, fixed ? b : '', id, ...groupArgs(sp)]);
    },
    close: () => rides.flushAll(),
    async release(agentId, keys, id, group) {
      const sp = split(keys, group);
      if (sp.blob === '' && sp.pIdx.length === 0) return;
      // Pending entries are not bucketed: a release after the bucket turned finds them all the same.
      const k = base(agentId);
      await r.stewardIdemRelease(4, k + 'pending', k + 'claims', k + 'gpending', k + 'gindex', id, ...groupArgs(sp));
    },
  };
}
