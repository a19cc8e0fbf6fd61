// The PVS-1 §5.3 review queue round trip on real Kafka, Redis and ClickHouse: a low-confidence verdict is
// queued once (the scorer stage's hook, Redis), its state lands in review_queue through the sink; a reviewer
// takes it (a second reviewer cannot), resolves it approved with `steward review queue`, the table shows it
// resolved, and the trust-debt stage grants the existing review credit (review:<trace_id>).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { RedisReviewQueue } from '../../../src/adapters/redis/rollout-review-queue.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { generateKeyPairSync } from 'node:crypto';
import { ledgerSignerFrom } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { run as review } from '../../../src/cli/commands/review.js';
import { ReviewQueueHook } from '../../../src/engine/rollout/review-queue.js';
import type { ScoreRecord } from '../../../src/engine/records.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StewardClient } from '../../../src/client/steward-client.js';
import { startLlmServer } from '../../support/llm-server.js';

let out: string[] = [];
beforeEach(() => {
  out = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
});
afterEach(() => vi.restoreAllMocks());
const lines = () => out.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

const score = (traceId: string, confidence: number): ScoreRecord =>
  ({
    traceId, agentId: 'rq-bot', tenant: 'acme', blueprint: 't/roll@1.0.0', intervention: 'flag', approved: true, stage: 'ctq', ctq: 0.55, risk: 0.45, confidence,
    metrics: [], verdict: { policy_violations: ['grounding'] } as never, latencyMs: 1, trustDebt: { debt: 0, level: 'normal' as never }, fullScoring: false,
  }) as ScoreRecord;

describe('review queue round trip (real Kafka, Redis, ClickHouse)', () => {
  it('queued once, taken by one reviewer, resolved approved: table row resolved, review credit applied', async () => {
    const redisPrefix = uniqueRedisPrefix('rq');
    const redis = new Redis(services().redisUrl);
    try {
      await withClickHouseDatabase(async (db) => {
        await withPipelineEnv('rq', async ({ cfg: base, topics, adapter }) => {
          const cfg = pipelineConfig(base.topics.prefix, { redis: { key_prefix: redisPrefix }, clickhouse: { database: db.name }, consumer: { group_prefix: base.consumer.groupPrefix }, trust_debt: { audit_sweep_interval_ms: 0 } });
          const logger = quietLogger();
          const signer = ledgerSignerFrom(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
          const rt = await bootstrapEngine(cfg, ['trust-debt'], logger);
          const pipe = await startPipeline(cfg, ['trust-debt', 'sink'], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, signer) }, { logger });
          const producer = await adapter.producer();
          const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
          const debts = new RedisTrustDebtStore(redis, { prefix: redisPrefix });
          try {
            const now = Date.now();
            await debts.apply({ eventId: 'seed', tenant: 'acme', agentId: 'rq-bot', atMs: now, kind: 'intervention', intervention: 'halt' }, DEFAULT_TRUST_DEBT_CONFIG);
            const before = (await debts.current('acme', 'rq-bot', now, DEFAULT_TRUST_DEBT_CONFIG)).debt;
            expect(before).toBeGreaterThan(0);

            // The scorer stage's hook: below 0.9 queues once (a redelivered verdict adds nothing), 0.95 never.
            const hook = new ReviewQueueHook({ store: new RedisReviewQueue(redis, redisPrefix), topic: topics.reviewQueue, threshold: 0.9, slaMs: 3_600_000, nowMs: Date.now });
            const outs = await hook.afterVerdict(score('rq-t1', 0.62), { blueprintVersion: '1.0.0', rolloutArm: 'canary', eventTimeMs: now });
            expect(outs).toHaveLength(1);
            expect(await hook.afterVerdict(score('rq-t1', 0.62), { eventTimeMs: now })).toEqual([]);
            expect(await hook.afterVerdict(score('rq-t2', 0.95), { eventTimeMs: now })).toEqual([]);
            await producer.send(outs.map((o) => ({ topic: o.topic, messages: [o.message] })));
            const row = (status: string) => async () => {
              const r = await store.query<Record<string, any>>(`SELECT * FROM ${store.table('v_review_queue')} WHERE review_id = 'rq:rq-t1'`);
              return r.length === 1 && r[0].status === status ? r[0] : undefined;
            };
            const queued = await waitFor(row('queued'), { timeoutMs: 30_000, message: 'queued row' });
            expect(queued).toMatchObject({ agent_id: 'rq-bot', tenant: 'acme', blueprint_version: '1.0.0', rollout_arm: 'canary', confidence: 0.62, threshold: 0.9, reasons: ['low_confidence', 'grounding'] });

            const common = ['--redis', services().redisUrl, '--prefix', redisPrefix, '--topic-prefix', cfg.topics.prefix];
            expect(await review(['queue', 'list', '--json', ...common])).toBe(0);
            expect(lines()).toEqual([expect.objectContaining({ review_id: 'rq:rq-t1', status: 'queued', overdue: false })]);
            out = [];
            expect(await review(['queue', 'take', 'rq-t1', '--reviewer', 'ana', ...common])).toBe(0);
            await expect(review(['queue', 'take', 'rq-t1', '--reviewer', 'bob', ...common])).rejects.toMatchObject({ code: 'STEWARD_REVIEW_QUEUE_STATE' });
            await expect(review(['queue', 'resolve', 'rq-t1', '--reviewer', 'bob', '--outcome', 'denied', ...common])).rejects.toMatchObject({ code: 'STEWARD_REVIEW_QUEUE_STATE' });
            out = [];
            expect(await review(['queue', 'resolve', 'rq:rq-t1', '--reviewer', 'ana', '--outcome', 'approved', '--note', 'sources fine', ...common])).toBe(0);
            expect(lines()[0]).toMatchObject({ status: 'resolved', outcome: 'approved', review: { event_id: 'review:rq-t1', kind: 'review_approved' } });

            const resolved = await waitFor(row('resolved'), { timeoutMs: 30_000, message: 'resolved row' });
            expect(resolved).toMatchObject({ outcome: 'approved', reviewer: 'ana', note: 'sources fine' });
            expect(Number(resolved.resolved_at_ms)).toBeGreaterThanOrEqual(Number(resolved.taken_at_ms));
            // The trust-debt stage applied successful_review_credit for the trace.
            await waitFor(async () => (await debts.current('acme', 'rq-bot', Date.now(), DEFAULT_TRUST_DEBT_CONFIG)).debt < before, { timeoutMs: 30_000, message: 'review credit' });
            out = [];
            expect(await review(['queue', 'list', '--json', ...common])).toBe(0);
            expect(out.join('')).toBe('');
          } finally {
            await producer.disconnect();
            await store.close();
            await pipe.stop();
            await rt.close();
          }
        });
      });
    } finally {
      await deleteRedisPrefix(redis, redisPrefix);
      redis.disconnect();
    }
  });

  it('the scorer stage queues a verdict below the confidence threshold (LLM judge without a stated confidence: 0.7) and not one above it', async () => {
    const redisPrefix = uniqueRedisPrefix('rq-sc');
    const redis = new Redis(services().redisUrl);
    const llm = await startLlmServer({ kind: 'score', score: 0.9 });
    const dir = mkdtempSync(join(tmpdir(), 'steward-rq-'));
    writeFileSync(join(dir, 'judged.yaml'), `
id: t/judged@1.0.0
version: "1.0.0"
description: judged answers
checks:
  - id: candour
    when: { hook: output }
    metric: { name: candour, weight: 1, check: { type: llm, args: { prompt_template: "Check the answer for candour" } } }
  - id: size
    when: { hook: tool_call }
    rule: { condition: "args.n <= 5", on_fail: { decision: flag, reason: big } }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`);
    try {
      await withClickHouseDatabase(async (db) => {
        await withPipelineEnv('rq-sc', async ({ cfg: base, adapter }) => {
          const cfg = pipelineConfig(base.topics.prefix, {
            blueprints: { dir, watch: false }, redis: { key_prefix: redisPrefix }, clickhouse: { database: db.name }, consumer: { group_prefix: base.consumer.groupPrefix },
            llm: { base_url: llm.url, model: 'judge-test', timeout_ms: 30_000 }, trust_debt: { audit_sweep_interval_ms: 0 }, signing: { allow_ephemeral: true },
          });
          const logger = quietLogger();
          const signer = ledgerSignerFrom(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
          const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer'], logger);
          const pipe = await startPipeline(cfg, ['tripwire', 'scorer', 'sink'], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, signer) }, { logger });
          const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
          const store = new ClickHouseStore({ url: services().clickhouseUrl, database: db.name });
          try {
            const now = new Date().toISOString();
            const judged = await client.decide({ trace_id: `${cfg.topics.prefix}-out`, agent_id: 'rq-agent', timestamp: now, hook: 'output', content: 'an answer' }, { timeoutMs: 15_000 });
            expect(judged.intervention).toBe('ok');
            await client.decide({ trace_id: `${cfg.topics.prefix}-tool`, agent_id: 'rq-agent', timestamp: now, hook: 'tool_call', tool: 'x', args: { n: 1 } }, { timeoutMs: 15_000 });
            const rows = await waitFor(async () => {
              const r = await store.query<Record<string, any>>(`SELECT * FROM ${store.table('v_review_queue')}`);
              const v = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.table('v_verdicts')}`);
              return r.length >= 1 && Number(v[0].n) >= 2 ? r : undefined;
            }, { timeoutMs: 45_000, message: 'the queued review and both verdicts' });
            // Only the LLM-judged verdict (confidence 0.7) is queued; the deterministic one (confidence 1) is not.
            expect(rows).toHaveLength(1);
            expect(rows[0]).toMatchObject({ review_id: `rq:${cfg.topics.prefix}-out`, agent_id: 'rq-agent', status: 'queued', threshold: 0.9, blueprint: 't/judged@1.0.0', blueprint_version: '1.0.0' });
            expect(rows[0].confidence).toBeLessThan(0.9);
            const open = await new RedisReviewQueue(redis, redisPrefix).list();
            expect(open.map((i) => i.review_id)).toEqual([`rq:${cfg.topics.prefix}-out`]);
          } finally {
            await client.close();
            await store.close();
            await pipe.stop();
            await rt.close();
          }
        });
      });
    } finally {
      await llm.close();
      await deleteRedisPrefix(redis, redisPrefix);
      redis.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

