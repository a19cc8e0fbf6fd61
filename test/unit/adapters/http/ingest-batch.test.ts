// The batch route's send path (docs/http.md "Idempotency", "Benchmark"): claims in one claim call, the fresh
// traces in one publishBatch call carrying the JSON that was size-checked, duplicates not sent again, a failed
// send answered 503 with every claim of it released (so the client's retry sends them), keys still pending under
// another request answered 503 (never `duplicates`), and finalised only after the answer.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { Trace } from '../../../../src/engine/types.js';

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

function setup(o: { noClaims?: boolean; failRelease?: number; sendTimeoutMs?: number; loseClaimReply?: boolean; claimDelayMs?: number; pendingWaitMs?: number } = {}) {
  const pending = new Set<string>();
  const done = new Set<string>();
  const calls = { claimMany: 0, publish: 0, batches: [] as { trace: Trace; json: string; key: string }[][], released: [] as string[], finalised: [] as string[], warned: [] as string[], ids: [] as string[] };
  let failNext = false;
  let hold: Promise<void> | undefined;
  let failRelease = o.failRelease ?? 0;
  const registry = createAgentRegistry([{ id: 'a1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('k1')], registered: true }]);
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, ratePerSecond: 1000, sendTimeoutMs: o.sendTimeoutMs, pendingWaitMs: o.pendingWaitMs ?? 0 },
    {
      registry: () => registry,
      publish: async () => void calls.publish++,
      publishBatch: async (items) => {
        const fail = failNext;
        failNext = false;
        const held = hold;
        hold = undefined;
        if (held) await held;
        if (fail) throw new Error('broker down');
        calls.batches.push([...items]);
      },
      idempotency: o.noClaims ? undefined : {
        claim: async (agent, keys, id) => {
          calls.claimMany++;
          calls.ids.push(`claim ${id}`);
          if (o.claimDelayMs) await new Promise((r) => setTimeout(r, o.claimDelayMs));
          const states = keys.map((k) => {
            const id = `${agent}:${k}`;
            if (k === '') return 'claimed' as const;
            if (done.has(id)) return 'done' as const;
            if (pending.has(id)) return 'pending' as const;
            pending.add(id);
            return 'claimed' as const;
          });
          // The script ran, but its answer never came (a dropped connection, retries exhausted).
          if (o.loseClaimReply) throw new Error('Connection is closed.');
          return { states, id: id ?? '' };
        },
        finalise: async (agent, keys) => void keys.forEach((k) => (pending.delete(`${agent}:${k}`), done.add(`${agent}:${k}`), calls.finalised.push(`${agent}:${k}`))),
        release: async (agent, keys, id) => {
          if (failRelease-- > 0) throw new Error('redis down');
          calls.ids.push(`release ${id}`);
          keys.forEach((k) => (pending.delete(`${agent}:${k}`), calls.released.push(`${agent}:${k}`)));
        },
      },
      warn: (_f, msg) => void calls.warned.push(msg),
    },
  );
  return {
    calls,
    failOnce: () => (failNext = true),
    /** Holds the next send until the returned function is called. */
    holdSends: () => {
      let go!: () => void;
      hold = new Promise<void>((r) => (go = r));
      return () => go();
    },
  };
}

const batch = (ids: string[]) => ({ batch_id: 'b1', event_count: ids.length, events: ids.map((id) => ({ trace_id: id, final_output: `out ${id}`, idempotency_key: `b1_${id}` })) });
const post = (body: unknown) => ingress!.app.inject({ method: 'POST', url: '/v1/ingest/traces/batch', headers: { 'x-api-key': 'k1', 'content-type': 'application/json' }, payload: JSON.stringify(body) });

describe('batch ingest send path', () => {
  it('keys: a given key never meets a generated one; "" is no key; a lone surrogate or control character is refused (audit #24 r4, findings 3-4)', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const ev = (id: string, key?: string) => ({ trace_id: id, final_output: id, ...(key !== undefined && { idempotency_key: key }) });
    // An event naming `B7:0`, then a batch B7 whose events name no key: its event 0 is not a duplicate of it.
    expect((await post({ batch_id: 'x1', events: [ev('e1', 'B7:0')] })).json()).toMatchObject({ accepted: 1, duplicates: 0 });
    expect((await post({ batch_id: 'B7', events: [ev('e2'), ev('e3', '')] })).json()).toMatchObject({ accepted: 2, duplicates: 0 });
    // Its retry: both are duplicates — `""` is keyed from the batch key like a missing key, not left undeduplicated.
    expect((await post({ batch_id: 'B7', events: [ev('e2'), ev('e3', '')] })).json()).toMatchObject({ accepted: 0, duplicates: 2 });
    expect(calls.batches.map((b) => b.map((x) => x.trace.trace_id))).toEqual([['e1'], ['e2', 'e3']]);
    for (const [key, why] of [['\ud800', 'lone UTF-16 surrogate'], ['a\u0001b', 'control character']]) {
      const r = await post({ batch_id: 'x2', events: [ev('ok', 'fine'), ev('bad', key)] });
      expect(r.statusCode).toBe(422);
      expect(r.json()).toMatchObject({ error: 'STEWARD_TRACE_SCHEMA', index: 1 });
      expect(r.json().message).toContain(why);
    }
    const badBatch = await post({ batch_id: '\udfff', events: [ev('e9')] });
    expect(badBatch.statusCode).toBe(400);
    expect(badBatch.json()).toMatchObject({ error: 'STEWARD_HTTP_BAD_REQUEST' });
    // A pair is well formed.
    expect((await post({ batch_id: 'x3', events: [ev('e4', 'k\ud83d\ude00')] })).statusCode).toBe(200);
    expect(calls.claimMany).toBe(4);
    // An empty X-Idempotency-Key names no key: the batch_id keys the batch (its retry is a duplicate).
    const emptyHeader = (body: unknown) => ingress!.app.inject({ method: 'POST', url: '/v1/ingest/traces/batch', headers: { 'x-api-key': 'k1', 'content-type': 'application/json', 'x-idempotency-key': '' }, payload: JSON.stringify(body) });
    expect((await emptyHeader({ batch_id: 'B8', events: [ev('e8')] })).json()).toMatchObject({ accepted: 1, duplicates: 0 });
    expect((await emptyHeader({ batch_id: 'B8', events: [ev('e8')] })).json()).toMatchObject({ accepted: 0, duplicates: 1 });
  });

  it('claims in one call and sends the fresh traces in one batch whose values are their JSON', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const r = await post(batch(['t1', 't2', 't3']));
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(calls).toMatchObject({ claimMany: 1, publish: 0 });
    expect(calls.batches).toHaveLength(1);
    expect(calls.batches[0].map((x) => x.trace.trace_id)).toEqual(['t1', 't2', 't3']);
    for (const x of calls.batches[0]) expect(JSON.parse(x.json)).toEqual(x.trace);
    expect(calls.batches[0][0].trace).toMatchObject({ agent_id: 'a1', content: 'out t1' });
    // The retry: t1..t3 are duplicates, t4 is new; only t4 is sent.
    const again = await post(batch(['t1', 't2', 't3', 't4']));
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: 3 });
    expect(calls.batches[1].map((x) => x.trace.trace_id)).toEqual(['t4']);
    // All duplicates: nothing is sent.
    await post(batch(['t1', 't4']));
    expect(calls.batches).toHaveLength(2);
  });

  it('a failed send is a 503 and releases every claim of the batch, so the retry sends them', async () => {
    const { calls, failOnce } = setup();
    await ingress!.ready();
    failOnce();
    const r = await post(batch(['u1', 'u2']));
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('2');
    expect(calls.released.sort()).toEqual(['a1:b1_u1', 'a1:b1_u2']);
    const retry = await post(batch(['u1', 'u2']));
    expect(retry.json()).toMatchObject({ accepted: 2, duplicates: 0 });
    expect(calls.batches.at(-1)!.map((x) => x.trace.trace_id)).toEqual(['u1', 'u2']);
  });

  it('a batch refused for a bad event (422) sends nothing and releases what its claim took, so the corrected retry sends every event', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const bad = batch(['v1', 'v2', 'v3']);
    bad.events[1] = { ...bad.events[1], timestamp: 'yesterday' } as (typeof bad.events)[number];
    const r = await post(bad);
    expect(r.statusCode).toBe(422);
    expect(r.json()).toMatchObject({ error: 'STEWARD_TRACE_SCHEMA', index: 1 });
    expect(r.json().message).toMatch(/\/timestamp/);
    expect(calls.batches).toHaveLength(0);
    // The claim went out with the mapping (one call) and was undone.
    expect(calls.claimMany).toBe(1);
    expect(calls.released.sort()).toEqual(['a1:b1_v1', 'a1:b1_v2', 'a1:b1_v3']);
    const retry = await post(batch(['v1', 'v2', 'v3']));
    expect(retry.json()).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(calls.batches.at(-1)!.map((x) => x.trace.trace_id)).toEqual(['v1', 'v2', 'v3']);
  });

  it('a 422 releases only the keys this request claimed, not those an earlier batch holds', async () => {
    const { calls } = setup();
    await ingress!.ready();
    await post(batch(['w1']));
    const bad = batch(['w1', 'w2']);
    bad.events[1] = { ...bad.events[1], timestamp: 'yesterday' } as (typeof bad.events)[number];
    expect((await post(bad)).statusCode).toBe(422);
    expect(calls.released).toEqual(['a1:b1_w2']);
    // w1 is still a duplicate.
    expect((await post(batch(['w1']))).json()).toMatchObject({ accepted: 0, duplicates: 1 });
  });

  it('a retry while the first send is pending is a 503 (when it may not wait), not duplicates; after that send fails the retry produces the events once', async () => {
    const { calls, failOnce, holdSends } = setup();
    await ingress!.ready();
    failOnce();
    const release = holdSends();
    const first = post(batch(['p1', 'p2']));
    await new Promise((r) => setTimeout(r, 20));
    // The retry, re-batched with a fresh event: p3 is produced, p1/p2 are pending -> 503 + Retry-After.
    const retry = await post(batch(['p1', 'p2', 'p3']));
    expect(retry.statusCode).toBe(503);
    expect(retry.headers['retry-after']).toBe('1');
    expect(retry.json()).toMatchObject({ error: 'STEWARD_HTTP_PENDING' });
    release();
    expect((await first).statusCode).toBe(503);
    expect(calls.released).toEqual(['a1:b1_p1', 'a1:b1_p2']);
    const again = await post(batch(['p1', 'p2', 'p3']));
    expect(again.json()).toMatchObject({ accepted: 2, duplicates: 1 });
    const sent = calls.batches.flatMap((b) => b.map((x) => x.trace.trace_id)).sort();
    expect(sent).toEqual(['p1', 'p2', 'p3']);
  });

  it('a retry waits for keys pending under another request: released ones it produces, done ones are duplicates', async () => {
    const { calls, failOnce, holdSends } = setup({ pendingWaitMs: 2_000 });
    await ingress!.ready();
    failOnce();
    let release = holdSends();
    const first = post(batch(['q1', 'q2']));
    await new Promise((r) => setTimeout(r, 20));
    const retry = post(batch(['q1', 'q2', 'q3']));
    await new Promise((r) => setTimeout(r, 100));
    // The first send fails: its keys are released, and the waiting retry claims and produces them.
    release();
    expect((await first).statusCode).toBe(503);
    const r = await retry;
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(calls.batches.flatMap((b) => b.map((x) => x.trace.trace_id)).sort()).toEqual(['q1', 'q2', 'q3']);
    // The first send succeeds this time: the waiting retry finds its keys done.
    release = holdSends();
    const first2 = post(batch(['q4']));
    await new Promise((r2) => setTimeout(r2, 20));
    const retry2 = post(batch(['q4', 'q5']));
    await new Promise((r2) => setTimeout(r2, 100));
    release();
    expect((await first2).statusCode).toBe(200);
    expect((await retry2).json()).toMatchObject({ accepted: 1, duplicates: 1 });
    expect(calls.batches.flatMap((b) => b.map((x) => x.trace.trace_id)).filter((id) => id === 'q4')).toEqual(['q4']);
  });

  it('a retry that waited its bound for a pending key is a 503 STEWARD_HTTP_PENDING', async () => {
    const { holdSends } = setup({ pendingWaitMs: 300 });
    await ingress!.ready();
    const release = holdSends();
    const first = post(batch(['h1']));
    await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    const retry = await post(batch(['h1']));
    expect(retry.statusCode).toBe(503);
    expect(retry.json()).toMatchObject({ error: 'STEWARD_HTTP_PENDING' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    release();
    expect((await first).statusCode).toBe(200);
  });

  it('close() ends a wait for keys pending elsewhere (503 STEWARD_HTTP_PENDING) instead of outlasting its bound', async () => {
    const { holdSends } = setup({ pendingWaitMs: 15_000, sendTimeoutMs: 200 });
    await ingress!.ready();
    const release = holdSends();
    const first = post(batch(['w1']));
    await new Promise((r) => setTimeout(r, 20));
    const retry = post(batch(['w1']));
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    const closing = ingress!.close();
    ingress = undefined;
    const r = await retry;
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ error: 'STEWARD_HTTP_PENDING' });
    release();
    await first;
    await closing;
    // Without the stop the retry waited its 15 s bound; close() gives up on idle work after the 200 ms send timeout.
    expect(Date.now() - t0).toBeLessThan(3_000);
  });

  it('keys are finalised after the answer, and then a retry is a duplicate', async () => {
    const { calls } = setup();
    await ingress!.ready();
    const r = await post(batch(['f1']));
    expect(r.statusCode).toBe(200);
    // The finalise runs after the reply is written (setImmediate), not on its path.
    await new Promise((res) => setImmediate(res));
    expect(calls.finalised).toEqual(['a1:b1_f1']);
    expect((await post(batch(['f1']))).json()).toMatchObject({ accepted: 0, duplicates: 1 });
  });

  it('a send past the send timeout is a 503; it settles its claims when it ends, and close() waits for it', async () => {
    const { calls, holdSends } = setup({ sendTimeoutMs: 50 });
    await ingress!.ready();
    const release = holdSends();
    const r = await post(batch(['s1']));
    expect(r.statusCode).toBe(503);
    expect(r.json().message).toMatch(/within 50 ms/);
    expect(calls.finalised).toEqual([]);
    release();
    await ingress!.close();
    expect(calls.finalised).toEqual(['a1:b1_s1']);
  });

  it('a failed release is retried (bounded), and a release that keeps failing is logged', async () => {
    const { calls, failOnce } = setup({ failRelease: 2 });
    await ingress!.ready();
    failOnce();
    expect((await post(batch(['r1']))).statusCode).toBe(503);
    expect(calls.released).toEqual(['a1:b1_r1']);
    expect(calls.warned).toEqual([]);
    await ingress!.close();
    const more = setup({ failRelease: 10 });
    await ingress!.ready();
    more.failOnce();
    expect((await post(batch(['r2']))).statusCode).toBe(503);
    expect(more.calls.released).toEqual([]);
    expect(more.calls.warned).toHaveLength(1);
    expect(more.calls.warned[0]).toMatch(/release failed/);
  });

  it('close() waits for a batch whose claim is still in flight: its send and finalise come before close resolves', async () => {
    const { calls } = setup({ claimDelayMs: 50 });
    await ingress!.ready();
    const answer = post(batch(['c1']));
    await vi.waitFor(() => expect(calls.claimMany).toBe(1));
    let closedWith: string[] | undefined;
    const closing = ingress!.close().then(() => (closedWith = [...calls.finalised]));
    ingress = undefined;
    expect((await answer).statusCode).toBe(200);
    await closing;
    // Before: close() resolved while the claim was in flight (idle() saw nothing tracked yet) — finalised was [].
    expect(closedWith).toEqual(['a1:b1_c1']);
    expect(calls.batches.flat().map((x) => x.trace.trace_id)).toEqual(['c1']);
  });

  it('a claim whose answer is lost is released by its id, so the retry is not held pending', async () => {
    const { calls } = setup({ loseClaimReply: true });
    await ingress!.ready();
    expect((await post(batch(['l1', 'l2']))).statusCode).toBeGreaterThanOrEqual(500);
    await vi.waitFor(() => expect(calls.released.sort()).toEqual(['a1:b1_l1', 'a1:b1_l2']));
    const [claimed, released] = calls.ids;
    expect(claimed).toMatch(/^claim [\w-]{16}$/);
    expect(released).toBe(claimed.replace('claim', 'release'));
    expect(calls.batches).toHaveLength(0);
  });
});

describe("without claims (http.idempotency.dedupe 'pipeline', D52)", () => {
  it('every event is produced with its idempotency key, a retry again; the answer counts no duplicates', async () => {
    const { calls } = setup({ noClaims: true });
    await ingress!.ready();
    const body = { batch_id: 'b9', events: [{ trace_id: 'n1', idempotency_key: 'own' }, { trace_id: 'n2' }] };
    for (let i = 0; i < 2; i++) {
      const r = await post(body);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ accepted: 2, batch_id: 'b9' });
    }
    expect(calls.claimMany).toBe(0);
    expect(calls.batches.map((b) => b.map((x) => [x.trace.trace_id, x.key]))).toEqual([
      [['n1', 'own'], ['n2', 'b9\u001f1']],
      [['n1', 'own'], ['n2', 'b9\u001f1']],
    ]);
    // No key anywhere: produced without one (nothing for the stage to match).
    const lone = await ingress!.app.inject({ method: 'POST', url: '/v1/ingest/traces', headers: { 'x-api-key': 'k1', 'content-type': 'application/json' }, payload: JSON.stringify({ trace_id: 'n3' }) });
    expect(lone.json()).toEqual({ accepted: 1 });
    expect(calls.batches[2].map((x) => x.key)).toEqual(['']);
  });
});

