// ACM run governance state in real Redis (docs/acm.md "In the stream"): the refund example run governed over
// the Redis store answers and drafts exactly as over memory; a redelivered event gets its first answer and
// changes nothing; a concurrent change to the run between check and commit is a retryable error that writes
// nothing; expiry runs on event time; the run's keys share a hash tag.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { RedisAcmStateStore } from '../../../src/adapters/redis/acm-state-store.js';
import { compileVerificationSheets, governRunEvent, MemoryAcmRunStateStore, runIdOf, type AcmEnv, type AcmOptions, type AcmRunStateStore, type RunEventOutcome } from '../../../src/engine/acm/index.js';

import { defaultEngineConfig } from '../../../src/engine/config.js';
import { dslOptionsFromConfig } from '../../../src/engine/dsl/index.js';
import type { Trace } from '../../../src/engine/types.js';
import { isStewardError } from '../../../src/errors.js';
import { withRedis } from '../setup/helpers.js';

const DIR = 'examples/refund-run';
const example = readFileSync(`${DIR}/trace.jsonl`, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Trace);
// A malformed plan (unknown contextRef) of another run, inside the example run's events.
const badPlan = JSON.parse(JSON.stringify(example[1])) as Trace & { plans: { contextRef: string }[] };
badPlan.trace_id = 'bad-plan';
badPlan.run = { engine: 'langgraph', runId: 'run-bad' };
badPlan.plans[0]!.contextRef = 'ctx-unknown';
const traces = [...example.slice(0, 5), badPlan, ...example.slice(5)];
const env = (): AcmEnv => {
  const dsl = dslOptionsFromConfig(defaultEngineConfig());
  const sheets = compileVerificationSheets([{ file: 'refund.verify.yaml', text: readFileSync(`${DIR}/blueprints/refund.verify.yaml`, 'utf8') }], dsl);
  return { dsl, sheets: sheets.sheets, options: parseYaml(readFileSync(`${DIR}/blueprints/acm.yaml`, 'utf8')) as AcmOptions, planCache: new Map() };
};
const nowOf = (t: Trace) => Date.parse(String(t.timestamp));
const allow = () => Promise.resolve({ blueprint: 'refund_run', intervention: 'ok' as const });

async function play(store: AcmRunStateStore): Promise<string[]> {
  const e = env();
  const out: string[] = [];
  for (const t of traces) {
    const r: RunEventOutcome = await governRunEvent(store, t, { env: e, tenant: 'acme', nowMs: nowOf(t) }, allow);
    out.push(r.kind === 'decided' ? `${t.trace_id} ${r.intervention} ${r.drafts.map((d) => `${d.type}:${d.entry_id}`).join(',')}` : r.kind === 'rejected' ? `${t.trace_id} rejected ${r.problems.map((p) => p.code).join(',')}` : `${t.trace_id} -`);
  }
  return out;
}

describe('RedisAcmStateStore (real Redis)', () => {
  it('governs the refund example run exactly as the in-memory store does (block on the forbidden branch, DLQ on the bad plan)', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisAcmStateStore(redis, { prefix });
      const viaRedis = await play(store);
      const mem = new MemoryAcmRunStateStore();
      const viaMemory = await play(mem);
      expect(viaRedis).toEqual(viaMemory);
      expect(viaRedis.some((l) => / block /.test(l))).toBe(true);
      expect(viaRedis.some((l) => / rejected /.test(l))).toBe(true);
      const runId = runIdOf(traces[1]!)!;
      // The run's key keeps tenant and run in one hash tag (one Redis Cluster slot), ids escaped.
      expect(await redis.exists(store.runKey('acme', runId))).toBe(1);
      expect(store.runKey('a:b', 'r{1}')).toBe(`${prefix}acm:{a%3Ab:r%7B1%7D}:run`);
      expect(await store.getRun('acme', runId, nowOf(traces[traces.length - 1]!))).toEqual(await mem.getRun('acme', runId));
    });
  });

  it('a redelivered event gets its first answer and drafts again; the run does not change', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisAcmStateStore(redis, { prefix });
      const e = env();
      const runId = runIdOf(traces[1]!)!;
      const outs: RunEventOutcome[] = [];
      for (const t of traces.slice(0, 4)) outs.push(await governRunEvent(store, t, { env: e, tenant: 'acme', nowMs: nowOf(t) }, allow));
      const before = await redis.get(store.runKey('acme', runId));
      // the plan event again (a crash after its commit): not a second selection, the same PLAN_SELECTED
      const again = await governRunEvent(store, traces[1]!, { env: e, tenant: 'acme', nowMs: nowOf(traces[1]!) }, allow);
      expect(again).toMatchObject({ kind: 'decided', replayed: true });
      expect(again.kind === 'decided' && again.drafts).toEqual(outs[1]!.kind === 'decided' && outs[1]!.drafts);
      expect(await redis.get(store.runKey('acme', runId))).toBe(before);
    });
  });

  it('a run changed by another writer between check and commit: retryable error, nothing written; a retry commits', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisAcmStateStore(redis, { prefix });
      const e = env();
      for (const t of traces.slice(0, 2)) await governRunEvent(store, t, { env: e, tenant: 'acme', nowMs: nowOf(t) }, allow);
      const runId = runIdOf(traces[1]!)!;
      const t3 = traces[2]!;
      const before = await redis.get(store.runKey('acme', runId));
      const err = await governRunEvent(store, t3, { env: e, tenant: 'acme', nowMs: nowOf(t3) }, async () => {
        // another instance commits an event of the run while this one decides
        await store.updateRun('acme', runId, nowOf(t3), (p) => ({ ...p!, run: { ...p!.run!, events: p!.run!.events + 100 } }));
        return allow();
      }).catch((x: unknown) => x);
      expect(isStewardError(err) && err.retryable).toBe(true);
      const changed = await store.getRun('acme', runId, nowOf(t3));
      expect(changed?.run?.events).toBe(JSON.parse(before!).value.run.events + 100);
      const again = await governRunEvent(store, t3, { env: e, tenant: 'acme', nowMs: nowOf(t3) }, allow);
      expect(again).toMatchObject({ kind: 'decided', replayed: false });
      expect((await store.getRun('acme', runId, nowOf(t3)))?.run?.events).toBe(changed!.run!.events + 1);
    });
  });

  it('expires on event time: a run idle longer than its TTL at the event time reads as absent', async () => {
    await withRedis(async (redis, prefix) => {
      const store = new RedisAcmStateStore(redis, { prefix, runTtlMs: 60_000 });
      const t0 = 1_800_000_000_000;
      await store.updateRun('acme', 'r1', t0, () => ({ run: { run_id: 'r1', agent_id: 'a', tasks: {}, edges: {}, reached: {}, approvals: {}, branches: [], selections: 0, events: 1 }, answers: [] }));
      expect((await store.getRun('acme', 'r1', t0 + 60_000))?.run?.events).toBe(1);
      expect(await store.getRun('acme', 'r1', t0 + 60_001)).toBeUndefined();
      expect(await store.getRun('other', 'r1', t0)).toBeUndefined();
    });
  });
});
