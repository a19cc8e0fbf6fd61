/**
 * Issue #26 in a running process (docs/rollout.md): the shared rollouts for selection, the rollback monitor
 * and the shadow evaluator behind the tripwire stage, the review queue behind the scorer stage, and their
 * metrics. Built by engine-runtime.ts when the process runs a stage that needs it.
 */
import { watchBlueprints, type BlueprintHolder } from '../adapters/fs/blueprint-watcher.js';
import { topicNames } from '../adapters/kafka/topics.js';
import type { RedisClient } from '../adapters/redis/client.js';
import { PeekStateStore } from '../adapters/redis/rollout-peek-state.js';
import { RolloutMonitor } from '../adapters/redis/rollout-monitor.js';
import { RedisReviewQueue } from '../adapters/redis/rollout-review-queue.js';
import type { RedisStateStore } from '../adapters/redis/state-store.js';
import type { StewardConfig } from '../config/steward-config.js';
import type { AgentRegistry } from '../engine/blueprint/index.js';
import type { RolloutState, RolloutTable } from '../engine/rollout/arm.js';
import { declaredRollout, rollbackEvent, rolloutLedgerDraft, ROLLOUT_LEDGER_AGENT, setEvent, type RolloutEvent } from '../engine/rollout/events.js';
import { KafkaAdapter, type StewardProducer } from '../adapters/kafka/client.js';
import { ReviewQueueHook } from '../engine/rollout/review-queue.js';
import { readOnlyTrustDebt, ShadowEvaluator } from '../engine/rollout/shadow.js';
import { RolloutStageHook } from '../engine/rollout/stage-hook.js';
import { compileTrigger, type CompiledTrigger } from '../engine/rollout/triggers.js';
import { StewardEngine } from '../engine/steward-engine.js';
import type { TrustDebtStore } from '../engine/trust-debt/index.js';
import type { CompiledBlueprint } from '../engine/types.js';
import type { Logger } from '../logger.js';
import type { StewardMetrics } from '../observability/metrics.js';
import { RolloutMetrics } from '../observability/rollout-metrics.js';
import { tidyAfterReloads } from './heap-tidy.js';

export interface RolloutRuntime {
  rollouts: () => RolloutTable;
  monitor: RolloutMonitor;
  tripwireHook?: RolloutStageHook;
  reviewHook?: ReviewQueueHook;
  close(): Promise<void>;
}

const triggerCache = new WeakMap<CompiledBlueprint, CompiledTrigger[]>();

/** The compiled `rollback.trigger` of a blueprint (manual_trigger and invalid entries, rejected at load, left out). */
export function triggersOf(bp: CompiledBlueprint | undefined): CompiledTrigger[] {
  if (!bp) return [];
  let t = triggerCache.get(bp);
  if (!t) {
    const rb = bp.resolved.rollback as { trigger?: unknown } | undefined;
    const list = Array.isArray(rb?.trigger) ? rb.trigger : [];
    t = list.map((x) => (typeof x === 'string' ? compileTrigger(x) : 'manual')).filter((x): x is CompiledTrigger => typeof x === 'object' && !('error' in x));
    triggerCache.set(bp, t);
  }
  return t;
}

export async function openRollout(o: {
  cfg: StewardConfig;
  redis: RedisClient;
  holder: BlueprintHolder;
  registry: AgentRegistry;
  state?: RedisStateStore;
  trustDebt: TrustDebtStore;
  tripwire: boolean;
  scorer: boolean;
  engineVersion: string;
  logger: Logger;
  metrics?: StewardMetrics;
}): Promise<RolloutRuntime> {
  const { cfg, redis, logger } = o;
  const topics = topicNames(cfg.topics.prefix);
  const m = o.metrics ? new RolloutMetrics(o.metrics.registry) : undefined;
  const closers: (() => unknown)[] = [];
  let hook: RolloutStageHook | undefined;
  // Rollout events and their ledger entries go out on a producer of their own, at once: a rollback must be
  // reported even when no further trace arrives. Retried a few times; both are idempotent downstream
  // (rollout_events by event_id, the ledger by entry_id), so a repeat is harmless.
  let producer: Promise<StewardProducer> | undefined;
  const publish = async (ev: RolloutEvent): Promise<void> => {
    const batch = [
      { topic: topics.rollouts, messages: [{ key: ev.blueprint, value: JSON.stringify(ev) }] },
      { topic: topics.ledger, messages: [{ key: ROLLOUT_LEDGER_AGENT, value: JSON.stringify(rolloutLedgerDraft(ev)) }] },
    ];
    for (let attempt = 1; ; attempt++) {
      try {
        producer ??= new KafkaAdapter(cfg.kafka).producer();
        await (await producer).send(batch);
        return;
      } catch (e) {
        producer = undefined;
        if (attempt >= 5) {
          logger.error({ err: (e as Error).message, rollout: ev }, `rollout event ${ev.event_id} not published (the change itself is in effect)`);
          return;
        }
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  };
  closers.push(async () => {
    const p = await producer?.catch(() => undefined);
    await p?.disconnect().catch(() => undefined);
  });
  const canaryOf = (s: RolloutState) => o.holder.current().get(`${s.name}@${s.canaryVersion}`);
  const monitor = new RolloutMonitor(redis, {
    prefix: cfg.redis.keyPrefix,
    windowMs: cfg.rollout.windowMs,
    minSamples: cfg.rollout.minSamples,
    refreshMs: cfg.rollout.refreshMs,
    triggersFor: (s) => triggersOf(canaryOf(s)),
    onRollback: ({ state, firing, generation, atMs }) => {
      const ev = rollbackEvent(state, firing, generation, atMs);
      m?.rollbacks.inc({ blueprint: state.name, trigger: firing.trigger.source });
      logger.warn({ rollout: ev }, `rollout of ${state.name}@${state.canaryVersion} rolled back: ${ev.reason}`);
      return publish(ev);
    },
    onError: (e) => logger.warn({ err: (e as Error).message }, 'rollout state or counters unavailable (retried)'),
  });
  await monitor.start();
  closers.push(() => monitor.stop());
  const percentTimer = m
    ? setInterval(() => {
        for (const s of monitor.table().values()) m.rolloutPercent.set({ blueprint: s.name }, s.percent);
      }, cfg.rollout.refreshMs).unref()
    : undefined;
  if (percentTimer) closers.push(() => clearInterval(percentTimer));

  if (o.tripwire) {
    let shadow: ShadowEvaluator | undefined;
    if (cfg.rollout.shadowBlueprints && o.state) {
      const shadowHolder = await watchBlueprints(cfg.rollout.shadowBlueprints, { config: cfg.engine, watch: cfg.blueprints.watch });
      closers.push(() => shadowHolder.close());
      tidyAfterReloads(shadowHolder);
      const shadowId = cfg.rollout.shadowId ?? 'shadow';
      // No gate, ACM, LLM or signer: the candidate's tripwire-stage decision only, on a read-only view of state.
      const engine = new StewardEngine({
        blueprints: () => shadowHolder.current(),
        registry: o.registry,
        config: cfg.engine,
        state: new PeekStateStore(redis, o.state),
        trustDebt: readOnlyTrustDebt(o.trustDebt),
        engineVersion: o.engineVersion,
        onWarning: (w) => logger.warn({ shadow: shadowId }, w),
      });
      shadow = new ShadowEvaluator({
        shadowId,
        engine,
        nowMs: Date.now,
        onError: (e) => {
          m?.shadowErrors.inc({ shadow_id: shadowId });
          logger.debug({ err: (e as Error).message, shadow: shadowId }, 'shadow evaluation failed (dropped)');
        },
      });
      logger.info({ shadow: shadowId, dir: cfg.rollout.shadowBlueprints }, 'shadow evaluation on');
    }
    hook = new RolloutStageHook({
      recorder: monitor,
      shadow,
      shadowTopic: topics.shadowDiffs,
      maxMessageBytes: cfg.limits.maxMessageBytes,
      onDropped: (why) => logger.warn(why),
      onDiff: (d) => m?.shadowDiffs.inc({ shadow_id: d.shadow_id, changed: String(d.changed) }),
    });
    // A blueprint's `migration` block starts its rollout at the first stage, once (docs/rollout.md): at start and
    // on every reload; an existing rollout of the name (set by an operator, rolled back) is never overridden.
    const declare = async () => {
      const set = o.holder.current();
      for (const bp of set.blueprints) {
        const d = declaredRollout(bp, (ref) => set.get(ref)?.version === ref.slice(ref.lastIndexOf('@') + 1));
        if (!d) continue;
        const started = await monitor.store.initIfAbsent(d.name, d, Date.now(), `declared by ${bp.id} (migration)`);
        if (!started) continue;
        const ev = setEvent(undefined, started, 'steward', started.reason ?? 'declared');
        await publish(ev);
        logger.info({ rollout: ev }, `rollout of ${d.name}@${d.canaryVersion} started at ${d.percent}% (declared)`);
      }
      await monitor.refresh();
    };
    await declare();
    const off = o.holder.onChange((ev) => {
      if (ev.ok) void declare().catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'declared rollouts not started (retried at the next reload)'));
    });
    closers.push(off);
  }

  let reviewHook: ReviewQueueHook | undefined;
  if (o.scorer && cfg.rollout.reviewQueue) {
    const queue = new RedisReviewQueue(redis, cfg.redis.keyPrefix);
    reviewHook = new ReviewQueueHook({
      store: queue,
      topic: topics.reviewQueue,
      threshold: cfg.engine.humanReviewConfidence,
      slaMs: cfg.rollout.reviewSlaMs,
      nowMs: Date.now,
      onEnqueued: (i) => m?.reviewEnqueued.inc({ tenant: i.tenant }),
      onNotQueued: (i, err) => logger.error({ stage: 'scorer', review_id: i.review_id, err: (err as Error).message }, 'review not queued: Redis is out of memory (published to the review-queue topic only)'),
    });
    if (m) {
      const t = setInterval(() => {
        const now = Date.now();
        queue.stats(now).then(
          (s) => {
            m.reviewOpen.set(s.open);
            m.reviewOverdue.set(s.overdue);
            m.reviewOldestAge.set(s.oldestEnqueuedAtMs === undefined ? 0 : Math.max(0, (now - s.oldestEnqueuedAtMs) / 1000));
          },
          (e: unknown) => logger.debug({ err: (e as Error).message }, 'review queue stats unavailable'),
        );
      }, 10_000).unref();
      closers.push(() => clearInterval(t));
    }
  }

  return {
    rollouts: () => monitor.table(),
    monitor,
    tripwireHook: hook,
    reviewHook,
    async close() {
      for (const c of closers.reverse()) await c();
    },
  };
}
