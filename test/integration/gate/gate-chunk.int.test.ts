// The gate stage's chunks in job-state rounds on real Redis (docs/pipeline.md "Gate stage"): a chunk's jobs are
// read in one script call and recorded in one (per wave: answers of one job decided in order), compare-and-set
// sends the SHA-1 of the text it read, not the text, and two gate instances deciding the same chunk at once agree
// on every answer (a raced compare-and-set loses, re-reads, and answers with the winner's decision).
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { RedisGateJobStore } from '../../../src/adapters/redis/gate-job-store.js';
import { CasJsonStore } from '../../../src/adapters/redis/cas-json-store.js';
import { GateProcessor } from '../../../src/consumers/gate.js';
import { finalizeJson } from '../../../src/consumers/finalize-message.js';
import { compileBlueprintSet, createAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { FinalizationGate } from '../../../src/engine/gate/finalization-gate.js';
import { StewardEngine } from '../../../src/engine/steward-engine.js';
import { MemoryTrustDebtStore } from '../../../src/engine/trust-debt/index.js';
import type { LlmClient, Trace } from '../../../src/engine/types.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { redisClient, withRedis } from '../setup/helpers.js';

const topics = topicNames('acgp');
const config = defaultEngineConfig();
const set = compileBlueprintSet([{ file: 'g.yaml', text: 'id: t/gated@1.0\nversion: "1.0.0"\ndescription: gated\nscope: { agent_tier: [ACL-2] }\nfinalization_gate: { enabled: true, max_retries: 3 }\n' }], { config }).set!;
const AGENTS = ['a', 'b', 'c'];
const T = Date.UTC(2026, 6, 1);
const PASS = '{"quality_score":0.95,"verdict":"PASS","reason_codes":[],"fix_mode":"REWRITE_ONLY","missing_requirements":[]}';
const REPLAN = '{"quality_score":0.4,"verdict":"FAIL","reason_codes":["MISSING_REQUIRED_ELEMENTS"],"fix_mode":"NEEDS_NEW_EVIDENCE","missing_requirements":["the entry point"]}';
const judge = (text: string): LlmClient => ({ complete: async () => ({ text, model: 'judge', latencyMs: 0 }) });

function processor(redis: Redis, prefix: string, llm: LlmClient) {
  const store = new RedisGateJobStore(redis, { prefix });
  const engine = new StewardEngine({
    blueprints: () => set,
    registry: createAgentRegistry(AGENTS.map((id) => ({ id, tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true }))),
    config,
    trustDebt: new MemoryTrustDebtStore(),
    engineVersion: 't',
    gate: new FinalizationGate({ llm, jobStore: store }),
  });
  const proc = new GateProcessor({ engine, topics, metrics: new StewardMetrics(), replies: { topic: topics.replies, partitions: 4 }, maxMessageBytes: 1_000_000, nowMs: () => 99 });
  return { proc, store };
}

const answer = (id: string, agent: string, job: string): Trace => ({ trace_id: id, agent_id: agent, timestamp: new Date(T).toISOString(), hook: 'final_answer', job_id: job, intent_id: 'SYSTEM_CONTROL_FLOW', draft_answer: `draft ${id}`, artifact_type: id });
const msg = (t: Trace, offset: number): InMessage => ({
  topic: topics.finalize,
  partition: 0,
  offset: String(offset),
  key: Buffer.from(t.agent_id),
  value: Buffer.from(finalizeJson(JSON.stringify(t), T + offset, `${t.trace_id}#e`, { topic: topics.replies, partition: 1, correlation_id: `c-${offset}` })),
  headers: {},
  timestampMs: T,
});
const reply = (outs: { message: { value: unknown } }[] | undefined) => JSON.parse(String(outs![0]!.message.value)) as { attempt_index: number; action: string; verdict: string; trace_id: string };

describe('gate stage chunks in job-state rounds (real Redis)', () => {
  it('a chunk of 60 answers over 50 jobs: 4 script calls (two waves of a read and a write), a job’s second answer sees its first', async () => {
    await withRedis(async (redis, prefix) => {
      const { proc, store } = processor(redis, prefix, judge(REPLAN));
      const traces = [...Array.from({ length: 50 }, (_, i) => answer(`fa-${i}`, AGENTS[i % 3]!, `job-${i}`)), ...Array.from({ length: 10 }, (_, i) => answer(`fa-2-${i}`, AGENTS[i % 3]!, `job-${i}`))];
      const outs = await proc.processChunk(traces.map((t, i) => msg(t, i)));
      expect(outs.every((o) => o !== undefined)).toBe(true);
      expect(store.rounds).toEqual({ calls: 4, ops: 120 });
      expect(outs.slice(0, 50).map((o) => reply(o).attempt_index)).toEqual(Array(50).fill(0));
      expect(outs.slice(50).map((o) => reply(o).attempt_index)).toEqual(Array(10).fill(1));
      expect((await store.get({ tenant: 'acme', agentId: 'a', jobId: 'job-0' }, T + 100))?.attempt_count).toBe(2);

      // The chunk again (a redelivery): every answer the same bytes (but the flag), from the stored decisions, nothing written.
      const again = await proc.processChunk(traces.map((t, i) => msg(t, i)));
      const strip = (o: { message: { value: unknown } }[] | undefined) => o!.map((x) => String(x.message.value).replace(/"redelivered":(true|false),?/, ''));
      expect(again.map(strip)).toEqual(outs.map(strip));
      expect(store.rounds).toEqual({ calls: 7, ops: 181 }); // the get above, then two waves of reads only
    });
  });

  it('two gate instances deciding the same chunk at once agree on every answer; each event is one attempt', async () => {
    await withRedis(async (redis, prefix) => {
      const other = redisClient();
      try {
        // The two judges disagree: whichever instance records an event first, both must answer with its decision.
        const a = processor(redis, prefix, judge(PASS));
        const b = processor(other, prefix, judge(REPLAN));
        const traces = [...Array.from({ length: 40 }, (_, i) => answer(`fa-${i}`, AGENTS[(i % 20) % 3]!, `job-${i % 20}`))];
        const chunk = traces.map((t, i) => msg(t, i));
        const [x, y] = await Promise.all([a.proc.processChunk(chunk), b.proc.processChunk(chunk)]);
        for (let i = 0; i < chunk.length; i++) {
          const rx = x[i] ? reply(x[i]) : undefined;
          const ry = y[i] ? reply(y[i]) : undefined;
          // an input a chunk could not finish (its compare-and-set kept losing) is left to process(); none here should be
          expect(rx && ry).toBeTruthy();
          expect([rx!.action, rx!.verdict, rx!.attempt_index]).toEqual([ry!.action, ry!.verdict, ry!.attempt_index]);
        }
        // At least one instance lost a race and answered with the other's decision, not its own judge's.
        const verdicts = (r: typeof x) => r.map((o) => reply(o).verdict);
        expect(verdicts(x).includes('FAIL') || verdicts(y).includes('PASS')).toBe(true);
        for (let j = 0; j < 20; j++) {
          const s = await a.store.get({ tenant: 'acme', agentId: AGENTS[j % 3]!, jobId: `job-${j}` }, T + 100);
          expect(s?.attempts.map((t) => t.event_id)).toEqual([`fa-${j}#e`, `fa-${j + 20}#e`]);
        }
      } finally {
        await other.quit();
      }
    });
  });

  it('compare-and-set sends the SHA-1 of the text it read, not the text; a value written by an earlier build is updated; a stale read loses', async () => {
    await withRedis(async (redis, prefix) => {
      const sent: string[][] = [];
      const cas = new CasJsonStore<{ n: number; s: string }>(redis, { ttlMs: 60_000, what: 'test', batch: true });
      const round = (redis as unknown as { stewardCasRound: (...a: unknown[]) => Promise<unknown> }).stewardCasRound.bind(redis);
      (redis as unknown as { stewardCasRound: (...a: unknown[]) => Promise<unknown> }).stewardCasRound = (...a: unknown[]) => {
        sent.push(a.slice(1).map(String));
        return round(...a);
      };
      const key = `${prefix}cas`;
      // as an earlier build wrote it (same envelope), with text whose UTF-8 bytes differ from its UTF-16 units
      await redis.set(key, JSON.stringify({ v: 1, updated_ms: T, value: { n: 1, s: 'é ✓ 🚀 '.repeat(100) } }));
      const r = await cas.read(key, T);
      expect(r.value?.n).toBe(1);
      expect(await cas.compareAndSet(key, r.text, { n: 2, s: 'x' }, T + 1)).toBe(true);
      const expected = sent.at(-1)![3]!; // [key, ttl, kind, expected, next]
      expect(expected).toMatch(/^[0-9a-f]{40}$/);
      expect(await cas.compareAndSet(key, r.text, { n: 3, s: 'stale' }, T + 2)).toBe(false);
      expect((await cas.read(key, T + 3)).value).toEqual({ n: 2, s: 'x' });
      // the unbatched script compares the same way
      const single = new CasJsonStore<{ n: number; s: string }>(redis, { ttlMs: 60_000, what: 'test' });
      expect(await single.compareAndSet(key, r.text, { n: 4, s: 'stale' }, T + 4)).toBe(false);
      expect(await single.update(key, T + 5, (p) => ({ n: (p?.n ?? 0) + 1, s: 'y' }))).toEqual({ n: 3, s: 'y' });
    });
  });
});
