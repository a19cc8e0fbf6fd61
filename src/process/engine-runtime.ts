/**
 * Builds the engine side of a Steward process from StewardConfig: blueprint directory with hot reload,
 * agent registry, Redis (state + trust debt), optional LLM and signer, and the StewardEngine facade.
 */
import { existsSync, readFileSync } from 'node:fs';
import { RedisStateStore } from '../adapters/redis/state-store.js';
import { llmClientFor } from '../config/llm.js';
import { ThreadedLlmClient } from '../adapters/llm/threaded.js';
import { Ed25519Signer } from '../engine/verdict/index.js';
import { StewardEngine } from '../engine/steward-engine.js';
import { watchBlueprints, type BlueprintHolder } from '../adapters/fs/blueprint-watcher.js';
import { watchAgentRegistry, type AgentRegistryHolder } from '../adapters/fs/agent-registry-watcher.js';
import { createAgentRegistry, parseAgentRegistry, type AgentRegistry } from '../engine/blueprint/index.js';
import { DEFAULT_TRUST_DEBT_CONFIG, trustDebtConfigForAgent } from '../engine/trust-debt/index.js';
import { parseSourceRegistry, type SourceRegistry } from '../engine/scorers/index.js';
import { createRedisClient, type RedisClient } from '../adapters/redis/client.js';
import { RedisStateRounds, type RedisStateRoundsOptions } from '../adapters/redis/state-rounds.js';
import { RedisTrustDebtStore } from '../adapters/redis/trust-debt-store.js';
import { RedisScoredMarks } from '../adapters/redis/scored-marks.js';
import { RedisIngestMarks } from '../adapters/redis/ingest-marks.js';
import { RedisGateJobStore } from '../adapters/redis/gate-job-store.js';
import { RedisAcmStateStore } from '../adapters/redis/acm-state-store.js';
import { RedisApprovalStore } from '../adapters/redis/approval-store.js';
import { approvalOutcomeSigner } from '../adapters/clickhouse/ledger-keys.js';
import { parseApproverRegistry, type ApproverRegistry } from '../engine/approvals/approvers.js';
import { findBlueprintFiles, isPolicyFile } from '../adapters/fs/blueprint-files.js';
import { compileVerificationSheets, formatAcmProblem, schemaProblems, type AcmEnv, type AcmOptions } from '../engine/acm/index.js';
import { dslOptionsFromConfig } from '../engine/dsl/index.js';
import type { EngineConfig } from '../engine/config.js';
import { parse as parseYaml } from 'yaml';
import { FinalizationGate } from '../engine/gate/finalization-gate.js';
import { workflowToolWarnings } from '../engine/gate/config.js';
import { checkIdentity, SIGNATURE_HEADER } from '../engine/identity.js';
import { headerText } from '../adapters/kafka/headers.js';
import { keyText } from '../consumers/stage-io.js';
import { TrustDebtReadCache, cachedTrustDebtReads, invalidatingTrustDebtWrites } from '../adapters/redis/trust-debt-read-cache.js';
import type { StewardConfig } from '../config/steward-config.js';
import { StewardAggregateError, StewardError, isRetryable } from '../errors.js';
import type { TrustDebtStore } from '../engine/trust-debt/index.js';
import type { LlmClient, TrustDebtLevel } from '../engine/types.js';
import type { Logger } from '../logger.js';
import type { StewardMetrics } from '../observability/metrics.js';
import type { PipelineDeps, StageName } from './pipeline.js';
import { describeHidden, redactUrl } from '../observability/redact.js';
import { readUtf8FileSync } from '../adapters/fs/text.js';
import { openRollout, type RolloutRuntime } from './rollout-runtime.js';
import { tidyAfterReloads } from './heap-tidy.js';

export interface EngineRuntime {
  deps: PipelineDeps;
  holder: BlueprintHolder;
  registry: AgentRegistry;
  redis?: RedisClient;
  /** The decision path's batched Redis rounds (calls/ops counters: bench:redis-batching). */
  stateRounds?: RedisStateRounds;
  close(): Promise<void>;
}

export function loadRegistry(cfg: StewardConfig): AgentRegistry {
  if (!cfg.blueprints.agents) return createAgentRegistry([], cfg.engine.defaultTier);
  const r = parseAgentRegistry(readUtf8FileSync(cfg.blueprints.agents), cfg.blueprints.agents, { defaultTier: cfg.engine.defaultTier });
  if (!r.registry) throw new StewardAggregateError('STEWARD_CONFIG', r.errors);
  return r.registry;
}

/** steward.yaml `sources:` (or STEWARD_SOURCES), parsed like `steward eval --sources`; undefined when not configured. */
export function loadSourceRegistry(cfg: StewardConfig): SourceRegistry | undefined {
  if (!cfg.sources) return undefined;
  if (!existsSync(cfg.sources)) throw new StewardError('STEWARD_CONFIG', `source registry not found: ${cfg.sources}`);
  return parseSourceRegistry(readFileSync(cfg.sources, 'utf8'), cfg.sources);
}

/**
 * The engine reads an agent's trust debt before every decision. When Redis is down that read must not
 * stall the synchronous path: the last debt read for the agent is used, and an agent this process never
 * read (after a restart or a rebalance) is taken to be in restricted mode, not normal: its real debt may be
 * high, and an outage must not lift a restriction. Stateful tripwires still fail closed on their own.
 * Writes (apply) are never faked. The last values are kept for the most recently read agents (LRU).
 */
export function resilientTrustDebt(store: TrustDebtStore, logger: Logger, maxAgents = 100_000): TrustDebtStore {
  const last = new Map<string, { debt: number; level: TrustDebtLevel }>();
  const wrapped = Object.create(store) as TrustDebtStore;
  wrapped.current = async (tenant, agentId, atMs, cfg) => {
    const k = `${tenant}\u0000${agentId}`;
    try {
      const v = await store.current(tenant, agentId, atMs, cfg);
      last.delete(k);
      last.set(k, v);
      if (last.size > maxAgents) last.delete(last.keys().next().value as string);
      return v;
    } catch (e) {
      if (!isRetryable(e)) throw e;
      const known = last.get(k);
      logger.warn({ agentId, err: (e as Error).message }, known ? 'trust debt unavailable: deciding with the last known value' : 'trust debt unavailable and never read: deciding in restricted mode');
      return known ?? { debt: Math.max(cfg.decay.minDebt, cfg.thresholds.restrictedMode), level: 'restricted_mode' };
    }
  };
  return wrapped;
}

/** How long startup waits for Redis before failing (ioredis keeps reconnecting meanwhile). */
export const REDIS_STARTUP_WAIT_MS = 15_000;

export async function bootstrapEngine(
  cfg: StewardConfig,
  stages: readonly StageName[],
  logger: Logger,
  metrics?: StewardMetrics,
  /**
   * `stateRounds`: how decision-path Redis work is batched (bench/pipeline/redis-batching.ts compares batch: false).
   * `llm`: a client used instead of the configured one (bench:gate's in-process judge: the gate without an exchange).
   */
  opts: { redisWaitMs?: number; stateRounds?: RedisStateRoundsOptions; llm?: LlmClient } = {},
): Promise<EngineRuntime> {
  // Checked before anything is opened: a production config must not fall back to unverifiable verdicts.
  if (cfg.requireSigningKey && !cfg.signing && stages.includes('scorer')) {
    throw new StewardError('STEWARD_CONFIG', 'signing.require_key is set but no signing key is configured (signing.key / STEWARD_SIGNING_KEY): refusing to emit verdicts nobody can verify');
  }
  // Never echo the value: it may be key material that is merely not PEM-armoured (base64 DER).
  if (cfg.signing && !cfg.signing.key.includes('-----BEGIN') && !existsSync(cfg.signing.key)) {
    throw new StewardError('STEWARD_CONFIG', `signing key (signing.key / STEWARD_SIGNING_KEY) is not PEM and not a readable file (${describeHidden(cfg.signing.key)})`);
  }
  const signer = verdictSigner(cfg, stages, logger);
  // Everything opened here is closed again when a later step fails: a failed start must not leave
  // watchers or a Redis reconnect loop keeping the process alive.
  const opened: (() => unknown)[] = [];
  try {
    return await openEngine(cfg, stages, logger, metrics, opened, opts.redisWaitMs ?? REDIS_STARTUP_WAIT_MS, signer, opts.stateRounds, opts.llm);
  } catch (e) {
    for (const close of opened.reverse()) {
      try {
        await close();
      } catch {
        // best effort: the original error is the one to report
      }
    }
    throw e;
  }
}

async function openEngine(
  cfg: StewardConfig,
  stages: readonly StageName[],
  logger: Logger,
  metrics: StewardMetrics | undefined,
  opened: (() => unknown)[],
  redisWaitMs: number,
  signer: Ed25519Signer,
  stateRounds?: RedisStateRoundsOptions,
  llmOverride?: LlmClient,
): Promise<EngineRuntime> {
  const holder = await watchBlueprints(cfg.blueprints.dir, { config: cfg.engine, watch: cfg.blueprints.watch });
  opened.push(() => holder.close());
  holder.onChange((ev) => {
    metrics?.blueprintReloads.inc({ outcome: ev.ok ? 'ok' : 'rejected' });
    if (ev.ok) logger.info({ blueprints: ev.set.blueprints.map((b) => `${b.id}`) }, 'blueprints reloaded');
    else logger.error({ errors: ev.errors.map((e) => e.format()) }, 'blueprint reload rejected; last good set keeps serving');
  });
  tidyAfterReloads(holder);
  // agents.yaml reloads like the blueprints: valid edits apply to the next event, invalid ones are rejected.
  let agentsHolder: AgentRegistryHolder | undefined;
  if (cfg.blueprints.agents) {
    agentsHolder = await watchAgentRegistry(cfg.blueprints.agents, { defaultTier: cfg.engine.defaultTier, watch: cfg.blueprints.watch });
    const h = agentsHolder;
    opened.push(() => h.close());
    agentsHolder.onChange((ev) => {
      metrics?.registryReloads.inc({ outcome: ev.ok ? 'ok' : 'rejected' });
      if (ev.ok) logger.info({ agents: ev.agents }, 'agent registry reloaded');
      else logger.error({ errors: ev.errors.map((e) => e.format()) }, 'agent registry reload rejected; last good registry keeps serving');
    });
  }
  const registry = agentsHolder?.registry ?? loadRegistry(cfg);
  // Gate spec §11: a workflow step naming a tool no registered agent lists (at start and after each reload).
  const toolWarnings = () => {
    for (const w of workflowToolWarnings(holder.current().blueprints, registry.agents.values())) logger.warn(w.format());
  };
  toolWarnings();
  holder.onChange((ev) => ev.ok && toolWarnings());
  if (stages.includes('tripwire') && cfg.http.idempotency.dedupe === 'pipeline' && !cfg.agents.keyMustMatch) {
    logger.warn('http.idempotency.dedupe is pipeline but agents.key_must_match is false: the tripwire stage ignores ingest keys (a record key not bound to its trace would let anyone mark another agent\'s keys), so retried HTTP batches are decided again (docs/spec-decisions.md D52)');
  }
  const needsRedis = stages.some((s) => s === 'tripwire' || s === 'scorer' || s === 'gate' || s === 'trust-debt' || s === 'approvals');
  // maxRetriesPerRequest 1: during an outage commands fail fast (stateful tripwires fail closed, the
  // trust-debt stage backs off and retries) instead of hanging in ioredis' queue.
  const redis = needsRedis ? createRedisClient(cfg.redis.url, cfg.redis.clusterNodes, { maxRetriesPerRequest: 1 }) : undefined;
  if (redis) opened.push(() => redis.disconnect());
  let lastRedisError: string | undefined;
  redis?.on('error', (e: Error) => {
    lastRedisError = e.message;
    logger.warn({ err: e.message }, 'redis error');
  });
  if (redis && redis.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new StewardError('STEWARD_STATE_UNAVAILABLE', `redis not reachable at ${redactUrl(cfg.redis.url)} after ${redisWaitMs / 1000} s${lastRedisError ? `: ${lastRedisError}` : ''}`, { retryable: true })),
        redisWaitMs,
      );
      redis.once('ready', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }
  // One round of state operations per turn and hash slot for trust-debt reads and rate hits (docs/pipeline.md "Batched state").
  const rounds = redis ? new RedisStateRounds(redis, stateRounds) : undefined;
  const rawTrustDebt = redis ? new RedisTrustDebtStore(redis, { prefix: cfg.redis.keyPrefix, dedupTtlSeconds: cfg.trustDebt.dedupTtlSeconds, rounds }) : undefined;
  // Decisions read trust debt through a short-lived cache of the raw state (docs/spec-decisions.md);
  // this process's own debt writes drop the agent's entry.
  const readCache = rawTrustDebt && cfg.redis.trustDebtReadCacheMs > 0 ? new TrustDebtReadCache(rawTrustDebt, { ttlMs: cfg.redis.trustDebtReadCacheMs }) : undefined;
  const trustDebt = rawTrustDebt && readCache ? invalidatingTrustDebtWrites(rawTrustDebt, readCache) : rawTrustDebt;

  const state = redis ? new RedisStateStore(redis, cfg.redis.keyPrefix, { maxEventTimeSkewMs: cfg.limits.maxEventTimeSkewMs, rounds }) : undefined;
  const llm = llmOverride ?? llmClientFor(cfg.llm);
  // The LLM thread (llm.thread) loads at start-up, not on the first judge call; a thread that cannot start fails the start.
  if (llm instanceof ThreadedLlmClient) {
    opened.push(() => llm.close());
    await llm.ready();
  }
  let engine: StewardEngine | undefined;
  let rollout: RolloutRuntime | undefined;
  // acm.yaml next to the blueprints (docs/acm.md "In the stream"), read once: the tripwire stage governs runs with it,
  // the scorer answers run events for the sink's join when it is there.
  let acmEnv: AcmEnv | undefined;
  const engineVersion = process.env.npm_package_version ?? '0.1.0';
  // The finalization gate: the tripwire stage gates and records a job's tool calls, the gate stage answers its
  // final answers; both share the job state in Redis (docs/gate.md).
  const gate =
    redis && (stages.includes('tripwire') || stages.includes('gate'))
      ? new FinalizationGate({
          llm,
          jobStore: new RedisGateJobStore(redis, { prefix: cfg.redis.keyPrefix }),
          limits: cfg.llm ? { maxJudgeInFlight: cfg.llm.maxInFlight, judgeTimeoutMs: cfg.llm.timeoutMs } : undefined,
          onWarning: (m) => logger.warn({ stage: 'gate' }, m),
        })
      : undefined;
  if (stages.includes('tripwire') || stages.includes('scorer') || stages.includes('gate')) {
    if (!trustDebt) throw new StewardError('STEWARD_CONFIG', 'the tripwire, scorer and gate stages need Redis (trust debt)');
    // docs/rollout.md: shared rollouts (selection, also the gate's), rollback monitor and shadow (tripwire), review queue (scorer).
    if (redis && (stages.includes('tripwire') || stages.includes('scorer') || stages.includes('gate'))) {
      const r = await openRollout({ cfg, redis, holder, registry, state, trustDebt: readCache ? cachedTrustDebtReads(trustDebt, readCache) : trustDebt, tripwire: stages.includes('tripwire'), scorer: stages.includes('scorer'), engineVersion, logger, metrics });
      opened.push(() => r.close());
      rollout = r;
    }
    if (stages.includes('tripwire') || stages.includes('scorer')) acmEnv = await loadAcmEnv(cfg.blueprints.dir, cfg.engine);
    engine = new StewardEngine({
      blueprints: () => holder.current(),
      registry,
      config: cfg.engine,
      state,
      trustDebt: resilientTrustDebt(readCache ? cachedTrustDebtReads(trustDebt, readCache) : trustDebt, logger),
      llm,
      signer,
      sourceRegistry: loadSourceRegistry(cfg),
      engineVersion,
      llmJudge: cfg.llm ? { maxInFlight: cfg.llm.maxInFlight, timeoutMs: cfg.llm.timeoutMs } : undefined,
      // Room for the judge's three attempts (two retries with backoff): a 30 s budget cut the last of 3 x 10 s.
      metricTimeoutMs: cfg.llm ? Math.max(30_000, cfg.llm.timeoutMs * 3 + 2_000) : undefined,
      onWarning: (m) => logger.warn(m),
      gate,
      // ACM run governance (docs/acm.md "In the stream"): on when acm.yaml sits next to the blueprints.
      acm: redis && acmEnv && stages.includes('tripwire') ? { store: new RedisAcmStateStore(redis, { prefix: cfg.redis.keyPrefix }), env: acmEnv } : undefined,
      rollouts: rollout?.rollouts,
    });
  }
  const rolloutHook = rollout?.tripwireHook;
  const reviewHook = rollout?.reviewHook;

  return {
    holder,
    registry,
    redis,
    stateRounds: rounds,
    deps: {
      engine,
      finalizer: stages.includes('gate') ? engine : undefined,
      // The sender of a trace is bound to its agent_id here, before any state is touched (docs/security.md).
      identity: (trace, m) => checkIdentity(trace, registry.lookup(trace.agent_id), { value: m.value ?? Buffer.alloc(0), key: keyText(m), signature: headerText(m, SIGNATURE_HEADER) }, cfg.agents),
      engineVersion,
      trustDebtStore: trustDebt,
      trustDebtConfigFor: (bp) => (bp ? holder.current().get(bp)?.trustDebt : undefined) ?? DEFAULT_TRUST_DEBT_CONFIG,
      trustDebtSweepStore: trustDebt,
      trustDebtConfigForAgent: (_tenant, agentId) => trustDebtConfigForAgent(holder.current(), registry, agentId).config,
      tenantOf: (agentId) => registry.lookup(agentId).tenant,
      approvals: redis && stages.includes('approvals') ? { store: new RedisApprovalStore(redis, { prefix: cfg.redis.keyPrefix }), approvers: loadApprovers(cfg), signOutcome: approvalOutcomeSigner(cfg), gateJobs: new RedisGateJobStore(redis, { prefix: cfg.redis.keyPrefix }) } : undefined,
      // The scorer reads the same blueprint directory as the tripwire stage: run governance is on for both or neither.
      runRecords: stages.includes('scorer') ? acmEnv !== undefined : undefined,
      scoredMarks: redis && stages.includes('scorer') && cfg.consumer.scorerDedupTtlSeconds > 0 ? new RedisScoredMarks(redis, { prefix: cfg.redis.keyPrefix, ttlSeconds: cfg.consumer.scorerDedupTtlSeconds }) : undefined,
      // Only agents the HTTP ingress can speak for (it refuses signing agents, D24), and only when the record key is bound
      // to the trace's agent: anyone else's keys would be markable by a forged record before its identity check fails.
      ingestKeyAgent: (id) => cfg.agents.keyMustMatch && !cfg.agents.requireSignature && !(registry.lookup(id).publicKeys?.length),
      ingestMarks: redis && stages.includes('tripwire') && cfg.http.idempotency.dedupe === 'pipeline' ? new RedisIngestMarks(redis, { prefix: cfg.redis.keyPrefix, ttlSeconds: cfg.http.idempotency.windowSeconds }) : undefined,
      afterDecision: rolloutHook ? (trace, record, evTime) => rolloutHook.afterDecision(trace, record, evTime) : undefined,
      afterVerdict: reviewHook ? (record, d) => reviewHook.afterVerdict(record, d) : undefined,
    },
    async close() {
      await rollout?.close();
      await llm?.close?.();
      holder.close();
      agentsHolder?.close();
      if (redis) await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/**
 * The run-governance environment of the blueprint directory: acm.yaml (options, schemas/acm/acm-options)
 * and the verification sheets (*.verify.yaml), read at start (a change needs a restart). Undefined when the
 * directory has no acm.yaml: ACM events are then decided by their blueprint only, as before.
 */
export async function loadAcmEnv(dir: string, config: EngineConfig): Promise<AcmEnv | undefined> {
  const list = await findBlueprintFiles([dir], isPolicyFile);
  const acmFile = list.files.find((f) => /(^|[\\/])acm\.ya?ml$/i.test(f));
  if (!acmFile) return undefined;
  let options: AcmOptions;
  try {
    options = (parseYaml(readUtf8FileSync(acmFile)) ?? {}) as AcmOptions;
  } catch (e) {
    throw new StewardError('STEWARD_CONFIG', `invalid ${acmFile}: ${(e as Error).message}`);
  }
  const problems = schemaProblems('acm-options', options);
  if (problems.length > 0) throw new StewardError('STEWARD_CONFIG', `invalid ${acmFile}: ${problems.map((p) => `${p.path}: ${p.code}: ${p.message}`).join('; ')}`);
  const dsl = dslOptionsFromConfig(config);
  const sheets = compileVerificationSheets(list.files.filter((f) => /\.verify\.ya?ml$/i.test(f)).map((f) => ({ file: f, text: readUtf8FileSync(f) })), dsl);
  if (sheets.problems.length > 0) throw new StewardError('STEWARD_CONFIG', `invalid verification sheets: ${sheets.problems.map(formatAcmProblem).join('; ')}`);
  // No plan cache: a process-lifetime Map would grow with every plan; a plan is compiled per event of its run.
  return { dsl, sheets: sheets.sheets, options };
}

/** The verdict signer: signing.key as PEM text or a PEM file (Ed25519), else an ephemeral key. Parsed before anything is opened. */
function verdictSigner(cfg: StewardConfig, stages: readonly StageName[], logger: Logger): Ed25519Signer {
  let signer: Ed25519Signer;
  if (cfg.signing) {
    const k = cfg.signing.key;
    try {
      signer = Ed25519Signer.fromPem(k.includes('-----BEGIN') ? k : readFileSync(k, 'utf8'), cfg.signing.keyId);
    } catch (e) {
      // Names the setting, never the value (OpenSSL's message says only what is wrong with it).
      throw new StewardError('STEWARD_CONFIG', `signing key (signing.key / STEWARD_SIGNING_KEY) is not a usable Ed25519 PEM private key: ${(e as Error).message}`, { cause: e });
    }
  } else {
    // Same behaviour as `steward eval`: verdicts are always signed; without a key they cannot be verified later.
    signer = Ed25519Signer.ephemeral();
    if (stages.includes('scorer')) logger.warn({ kid: signer.kid }, 'STEWARD_SIGNING_KEY not set: verdicts signed with an ephemeral key');
  }
  return signer;
}

/** docs/approvals.md: the approver registry, read at start (a change needs a restart); unset: no answer is accepted. */
function loadApprovers(cfg: StewardConfig): () => ApproverRegistry | undefined {
  const file = cfg.approvals.approversFile;
  const reg = file ? parseApproverRegistry(readFileSync(file, 'utf8'), file) : undefined;
  return () => reg;
}
