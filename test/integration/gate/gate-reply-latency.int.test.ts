// A gate chunk's replies leave as each answer is recorded, not with the chunk's produce (issue #20 audit round 4,
// finding 3). A backlog of final answers is fetched as one chunk and judged in waves of llm.max_in_flight calls; when
// the replies waited for the chunk, every client got its answer only after the last wave (with the defaults a
// ~3 s judge put all of them past finalize()'s 25 s: the fail-closed "draft was not checked"). Real Kafka and
// Redis, a local OpenAI-protocol judge that takes JUDGE_MS per call.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StewardClient } from '../../../src/client/steward-client.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import type { Trace } from '../../../src/engine/types.js';
import { startLlmServer } from '../../support/llm-server.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const BLUEPRINT = 'id: code/gated@1.0\nversion: "1.0.0"\ndescription: gated\nscope: { agent_tier: [ACL-2] }\nfinalization_gate: { enabled: true, max_retries: 2 }\n';
const AGENTS = 'agents:\n  - { id: coder-l, tenant: acme, tier: ACL-2, tools: [read_file] }\n';
const PASS = JSON.stringify({ quality_score: 0.95, verdict: 'PASS', reason_codes: [], fix_mode: 'REWRITE_ONLY', missing_requirements: [] });
const N = 12;
const IN_FLIGHT = 2;
const JUDGE_MS = 600;

describe('gate stage reply latency (real Kafka, Redis; local judge)', () => {
  it(`a chunk of ${N} answers judged ${IN_FLIGHT} at a time: each reply leaves when its answer is recorded, the events with the chunk`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-gate-lat-'));
    writeFileSync(join(dir, 'gated.yaml'), BLUEPRINT);
    writeFileSync(join(dir, 'agents.yaml'), AGENTS);
    let t0 = Date.now();
    const judgeStartedAt: number[] = [];
    const llm = await startLlmServer({ kind: 'content', content: PASS, delayMs: JUDGE_MS });
    llm.setDefault(() => {
      judgeStartedAt.push(Date.now() - t0);
      return { kind: 'content', content: PASS, delayMs: JUDGE_MS };
    });
    const redisPrefix = uniqueRedisPrefix('gatelat');
    try {
      await withPipelineEnv('pl-gatelat', async ({ cfg: base, topics, adapter }) => {
        const raw = {
          consumer: { group_prefix: base.consumer.groupPrefix },
          observability: { enabled: false },
          blueprints: { dir, watch: false },
          redis: { key_prefix: redisPrefix },
          llm: { base_url: llm.url, model: 'judge-test', timeout_ms: 10_000, max_in_flight: IN_FLIGHT },
          trust_debt: { audit_sweep_interval_ms: 0 },
        };
        const cfg = pipelineConfig(base.topics.prefix, raw);
        const logger = quietLogger();
        const rt = await bootstrapEngine(cfg, ['tripwire'], logger);
        const pipe = await startPipeline(cfg, ['tripwire'], rt.deps, { logger });
        const out = await new Collector(adapter, [topics.finalize, topics.gate]).start();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const redis = redisClient();
        let gate: Awaited<ReturnType<typeof startPipeline>> | undefined;
        let grt: Awaited<ReturnType<typeof bootstrapEngine>> | undefined;
        try {
          await waitFor(() => pipe.isReady(), { timeoutMs: 60_000, message: 'tripwire ready' });
          const fa = (i: number): Trace => ({ trace_id: `fa-${i}`, agent_id: 'coder-l', timestamp: new Date(Date.UTC(2026, 4, 1, 9, 0, i)).toISOString(), hook: 'final_answer', job_id: `job-${i}`, intent_id: 'REPO_ORIENTATION', draft_answer: `answer ${i}` });
          const repliedAt: number[] = [];
          const pending = Array.from({ length: N }, (_, i) =>
            client.finalize(fa(i), { timeoutMs: 120_000 }).then((a) => {
              repliedAt[i] = Date.now() - t0;
              return a;
            }),
          );
          // All on acgp.finalize before the gate stage starts: it fetches them as one batch, one chunk (one agent, one partition).
          await waitFor(() => out.json(topics.finalize).length >= N, { timeoutMs: 60_000, message: 'all answers on acgp.finalize' });
          grt = await bootstrapEngine(cfg, ['gate'], logger);
          t0 = Date.now();
          gate = await startPipeline(cfg, ['gate'], grt.deps, { logger });
          const answers = await Promise.all(pending);
          expect(answers.map((a) => [a.action, a.fallback ?? false])).toEqual(Array(N).fill(['finalize', false]));
          expect(llm.maxConcurrent).toBe(IN_FLIGHT);
          expect(judgeStartedAt).toHaveLength(N);

          // The judge took N / IN_FLIGHT waves. Replies waiting for the chunk all came after the last wave ended; now
          // the answers of the earlier waves are answered while later waves are still being judged.
          const lastJudgeStarted = Math.max(...judgeStartedAt);
          const early = repliedAt.filter((t) => t < lastJudgeStarted).length;
          expect(lastJudgeStarted).toBeGreaterThanOrEqual(((N / IN_FLIGHT - 1) * JUDGE_MS) * 0.9);
          expect(early, `replies at ${JSON.stringify(repliedAt)} ms, judge calls started at ${JSON.stringify(judgeStartedAt)} ms`).toBeGreaterThanOrEqual(N / 2);

          // The events still go out (with the chunk): one judge result and one outcome per answer.
          await waitFor(() => out.json(topics.gate).length >= 2 * N, { timeoutMs: 30_000, message: 'gate events' });
          const events = out.json(topics.gate) as { event: string; trace_id: string }[];
          expect(events.filter((e) => e.event === 'final_alignment_judge_result').map((e) => e.trace_id).sort()).toEqual(Array.from({ length: N }, (_, i) => `fa-${i}`).sort());
        } finally {
          await client.close();
          await out.stop();
          await gate?.stop();
          await grt?.close();
          await pipe.stop();
          await rt.close();
          await deleteRedisPrefix(redis, redisPrefix);
          await redis.quit();
        }
      });
    } finally {
      await llm.close();
    }
  }, 180_000);
});
