import type { BatchControl, InBatch, KafkaAdapter, StewardConsumer } from '../../../src/adapters/kafka/client.js';
import type { Trace } from '../../../src/engine/types.js';
import type { DecisionRecord, ScoreRecord } from '../../../src/engine/steward-engine.js';
import { StageRunner, type StageProcessor, type StageRunnerOptions } from '../../../src/consumers/stage-runner.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { createLogger } from '../../../src/logger.js';

/** A shell tool call of agent a1 (the consumers' message mapping tests). */
export const shellTrace: Trace = { trace_id: 't-1', agent_id: 'a1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', tool: 'shell', session_id: 's1' };

/** A tripwire-stage DecisionRecord for shellTrace: rule r1 blocked it. */
export function blockedRecord(overrides: Partial<DecisionRecord> = {}): DecisionRecord {
  return {
    traceId: 't-1',
    agentId: 'a1',
    blueprint: 'code/assistant@1.0',
    intervention: 'block',
    stage: 'rule',
    halted: false,
    tripwires: [{ id: 'tw', fired: false, latencyMs: 0.2 }],
    rules: [{ id: 'r1', passed: false, decision: 'block', reason: 'no', latencyMs: 0.1 }],
    reasons: ['no'],
    latencyMs: 1.5,
    tenant: 'acme',
    tier: 'ACL-2',
    restricted: false,
    blueprintVersion: '1.0.0',
    trustDebt: { debt: 0, level: 'normal' },
    fullScoring: false,
    nowMs: 1_767_225_600_000,
    ...overrides,
  };
}

/** A score() record for shellTrace's decision (CTQ flagged it unless overridden). */
export function scoreRecord(overrides: Partial<ScoreRecord> = {}): ScoreRecord {
  return {
    traceId: 't-1',
    agentId: 'a1',
    tenant: 'acme',
    blueprint: 'code/assistant@1.0',
    intervention: 'flag',
    approved: true,
    stage: 'ctq',
    ctq: 0.7,
    risk: 0.3,
    confidence: 0.8,
    metrics: [],
    verdict: { version: 'pvs-1', approved: true, reasoning: 'test', policy_violations: [], confidence_score: 0.8 } as ScoreRecord['verdict'],
    latencyMs: 1,
    trustDebt: { debt: 0, level: 'normal' },
    fullScoring: false,
    ...overrides,
  };
}

/** A consumer that only records the batch handler a StageRunner installs; `handle` drives it by hand. */
export function fakeConsumer(): { consumer: StewardConsumer; handle: (b: InBatch, ctl: BatchControl) => Promise<void> } {
  let handler: ((b: InBatch, ctl: BatchControl) => Promise<void>) | undefined;
  const consumer: StewardConsumer = {
    async subscribe() {},
    async runBatches(h) {
      handler = h;
    },
    seek() {},
    async stop() {},
    async disconnect() {},
    onCrash() {},
    onGroupJoin() {},
  };
  return {
    consumer,
    handle: (b, ctl) => {
      if (!handler) throw new Error('runBatches was not called');
      return handler(b, ctl);
    },
  };
}

/**
 * A started StageRunner over fakeConsumer (group 'g', DLQ 'dlq', silent logger and fresh metrics unless given);
 * `handle` drives its batch handler by hand.
 */
export async function startedRunner(
  proc: StageProcessor,
  opts: Pick<StageRunnerOptions, 'producer' | 'chunkSize'> & Partial<Omit<StageRunnerOptions, 'adapter' | 'producer' | 'chunkSize'>>,
): Promise<{ runner: StageRunner; handle: (b: InBatch, ctl: BatchControl) => Promise<void> }> {
  const { consumer, handle } = fakeConsumer();
  const runner = new StageRunner(proc, {
    groupId: 'g',
    dlqTopic: 'dlq',
    metrics: new StewardMetrics(),
    logger: createLogger({ level: 'silent' }),
    ...opts,
    adapter: { consumer: () => consumer } as unknown as KafkaAdapter,
  });
  await runner.start();
  return { runner, handle };
}
