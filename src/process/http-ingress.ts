/**
 * Assembles the HTTP ingress (docs/http.md) from the process configuration: the agent registry (hot-reloaded),
 * a StewardClient that produces traces to acgp.traces through the Kafka adapter (key = agent id), and Redis
 * idempotency claims. `steward run` starts it when http.enabled.
 */
import { readFileSync } from 'node:fs';
import { HttpIngress } from '../adapters/http/ingress-server.js';
import { finalizeTimeoutFor, StewardClient } from '../client/steward-client.js';
import { watchAgentRegistry } from '../adapters/fs/agent-registry-watcher.js';
import { createAgentRegistry } from '../engine/blueprint/registry.js';
import { createRedisClient, type RedisClient } from '../adapters/redis/client.js';
import type { StewardConfig } from '../config/steward-config.js';
import type { Logger } from '../logger.js';
import { AgentEventFeed } from './http-stream.js';
import { OutputDecoder } from '../adapters/kafka/output-decoder.js';
import { createRegistry } from '../adapters/kafka/serde.js';
import { KafkaAdapter } from '../adapters/kafka/client.js';
import { topicNames } from '../adapters/kafka/topics.js';
import { ClickHouseStore } from '../adapters/clickhouse/client.js';
import { ingressQueries } from './http-queries.js';
import type { AclTier, FallbackOnTimeout } from '../engine/types.js';
import { RedisApprovalStore } from '../adapters/redis/approval-store.js';
import { approvalOutcomeSigner } from '../adapters/clickhouse/ledger-keys.js';
import { parseApproverRegistry } from '../engine/approvals/approvers.js';
import { answerOverHttp, approvalStatusOf } from '../consumers/approvals.js';
import type { StewardProducer } from '../adapters/kafka/client.js';
import { FINALISE_RIDE_MS, redisIdempotencyClaims, type IdempotencyClaims } from '../adapters/redis/idempotency-claims.js';
import { INGEST_KEY_HEADER } from '../adapters/kafka/headers.js';
import { tidyHeapAfterCompile } from './heap-tidy.js';

/**
 * The approval store's Redis: the same deployment the approvals stage and its sweeper use (a Cluster when
 * redis.cluster_nodes is set), not the ingress's own single connection — on a Cluster that one would be told
 * MOVED for the `{ap}` slot whenever redis.url names another master.
 */
export function approvalRedis(cfg: Pick<StewardConfig, 'redis'>): RedisClient {
  return createRedisClient(cfg.redis.url, cfg.redis.clusterNodes, { maxRetriesPerRequest: 1 });
}

export interface RunningIngress {
  ingress: HttpIngress;
  port: number;
  close(): Promise<void>;
}

/** How long a stop waits for the finalises still waiting to ride (D51) before the claims connection closes. */
const CLAIMS_CLOSE_WAIT_MS = 2_000;

export async function startHttpIngress(cfg: StewardConfig, logger: Logger): Promise<RunningIngress> {
  const closers: (() => Promise<unknown> | void)[] = [];
  try {
    const holder = cfg.blueprints.agents ? await watchAgentRegistry(cfg.blueprints.agents, { defaultTier: cfg.engine.defaultTier, watch: cfg.blueprints.watch }) : undefined;
    if (holder) closers.push(() => holder.close());
    const empty = createAgentRegistry([], cfg.engine.defaultTier);
    const client = new StewardClient({ kafka: cfg.kafka, topicPrefix: cfg.topics.prefix, logger });
    closers.push(() => client.close());
    // decide/finalize wait for replies with the governance contract's fallback, which depends on the agent's
    // tier (spec-decisions D5): one client per tier, made when first needed. /v1/finalize without timeout_ms
    // waits out the gate's worst case for this config's judge timeout (llm.timeout_ms; D40), not decide's 5 s.
    const byTier = new Map<AclTier, StewardClient>();
    const tierClient = (tier: AclTier): StewardClient => {
      let c = byTier.get(tier);
      if (!c) {
        const made = new StewardClient({ kafka: cfg.kafka, topicPrefix: cfg.topics.prefix, logger, tier, fallbackOnTimeout: cfg.engine.fallbackOnTimeout as FallbackOnTimeout | undefined, defaultTimeoutMs: 5000, finalizeTimeoutMs: finalizeTimeoutFor(cfg.llm?.timeoutMs) });
        closers.push(() => made.close());
        byTier.set(tier, made);
        c = made;
      }
      return c;
    };
    // The stream feed's Redis: the deployment's (a Cluster when redis.cluster_nodes is set; one agent's stream is one
    // key, so every read and write names one slot). A single-server client here was told MOVED for the streams of
    // the agents on other masters.
    const redis = createRedisClient(cfg.redis.url, cfg.redis.clusterNodes, { maxRetriesPerRequest: 1 });
    closers.push(() => redis.disconnect());
    // The batch routes produce through their own producer, a batch in one send (no reply route: nobody waits).
    // Made before the claims connection so that its closer runs first: a send still settling at shutdown releases
    // or finalises its keys on the claims connection, closed after it.
    const kafka = new KafkaAdapter(cfg.kafka, logger);
    // One request for the batches whose claims answered in one turn (D53).
    const producer = await kafka.producer({ turn: true });
    closers.push(() => producer.disconnect());
    // 'pipeline' (D52): no claims; every event goes out with its key in a header, the tripwire stage drops copies.
    const claims = cfg.http.idempotency.dedupe === 'ingress' ? batchClaims(cfg, closers) : undefined;
    const tracesTopic = topicNames(cfg.topics.prefix).traces;
    const outputs = new OutputDecoder(cfg.schemaRegistryUrl ? createRegistry(cfg.schemaRegistryUrl) : undefined);
    const feed = new AgentEventFeed(
      new KafkaAdapter(cfg.kafka, logger),
      topicNames(cfg.topics.prefix),
      redis,
      cfg.redis.keyPrefix,
      `${cfg.consumer.groupPrefix}-http-stream`,
      outputs,
      (n, err) => logger.warn({ events: n, err: err.message }, 'stream feed: events skipped, their stream writes fail the same way every time (docs/http.md "Stream")'),
      (err, when) => logger.warn({ err: err.message, when }, 'stream feed: its consumer failed; the next stream client or pass starts another (docs/http.md "Stream")'),
    );
    closers.push(() => feed.stop());
    const store = new ClickHouseStore(cfg.clickhouse);
    closers.push(() => store.close());
    const tls = cfg.http.tls ? { cert: readFileSync(cfg.http.tls.certFile, 'utf8'), key: readFileSync(cfg.http.tls.keyFile, 'utf8') } : undefined;
    // docs/approvals.md: approvers answer over this route when an approver registry is configured.
    const approvers = cfg.approvals.approversFile ? parseApproverRegistry(readFileSync(cfg.approvals.approversFile, 'utf8'), cfg.approvals.approversFile) : undefined;
    let apProducer: Promise<StewardProducer> | undefined;
    // Also without approvers: an agent asks for its approvals' outcomes (timeouts happen either way).
    const apRedis = approvalRedis(cfg);
    closers.push(() => apRedis.disconnect());
    const apStore = new RedisApprovalStore(apRedis, { prefix: cfg.redis.keyPrefix });
    const approvalDeps = approvers && {
      store: apStore,
      signOutcome: approvalOutcomeSigner(cfg),
      topics: topicNames(cfg.topics.prefix),
      approvers: () => approvers,
    };
    closers.push(async () => (apProducer ? (await apProducer).disconnect() : undefined));
    const ingress = new HttpIngress(
      {
        host: cfg.http.host,
        port: cfg.http.port,
        tls,
        maxBodyBytes: cfg.http.maxBodyBytes,
        maxBatchEvents: cfg.http.maxBatchEvents,
        ratePerSecond: cfg.http.ratePerSecond,
        maxInFlightBytes: cfg.http.maxInFlightBytes,
        maxInFlightBytesPerKey: cfg.http.maxInFlightBytesPerKey,
        maxStreamsPerKey: cfg.http.maxStreamsPerKey,
        maxTraceBytes: cfg.limits.maxTraceBytes,
        requireSignature: cfg.agents.requireSignature,
        clientTimeoutMs: cfg.http.clientTimeoutMs,
        sendTimeoutMs: cfg.http.idempotency.sendTimeoutMs,
        pendingWaitMs: cfg.http.idempotency.pendingWaitMs,
      },
      {
        registry: () => holder?.registry ?? empty,
        publish: (t) => client.publish(t),
        // Without claims (D52) each event's key rides in a header for the tripwire stage.
        publishBatch: (items) => producer.send([{ topic: tracesTopic, messages: items.map((x) => ({ key: x.trace.agent_id, value: x.json, ...(!claims && x.key !== '' && { headers: { [INGEST_KEY_HEADER]: x.key } }) })) }]),
        stream: { head: (a) => feed.head(a), read: (a, last) => feed.read(a, last) },
        query: ingressQueries(store),
        // The server owns this wait: a timeout_ms below the tier's max latency budget (D3) would answer the
        // fallback — approved at ACL-2 — without the stage ever being asked; it is raised to it (D49).
        decide: (t, agent, timeoutMs) => tierClient(agent.tier).decide(t, { timeoutMs: timeoutMs === undefined ? undefined : Math.max(timeoutMs, cfg.engine.tiers[agent.tier].latencyBudgetMs.max) }),
        finalize: (t, agent, timeoutMs) => tierClient(agent.tier).finalize(t, { timeoutMs }),
        ...(approvalDeps && {
          approvals: {
            approverOf: (key: string) => approvers?.byApiKey(key)?.id,
            answer: async (key: string, id: string, decision: 'approve' | 'deny', reason: string | undefined) => {
              apProducer ??= new KafkaAdapter(cfg.kafka, logger).producer();
              return answerOverHttp({ ...approvalDeps, producer: await apProducer }, key, id, decision, reason);
            },
          },
        }),
        approvalStatus: (id: string) => approvalStatusOf(apStore, id),
        idempotency: claims,
        warn: (fields, msg) => logger.warn(fields, msg),
      },
    );
    closers.unshift(() => ingress.close());
    await ingress.ready();
    const port = await ingress.listen();
    // The route schemas were just compiled (src/process/heap-tidy.ts).
    tidyHeapAfterCompile();
    return {
      ingress,
      port,
      async close() {
        for (const c of closers) await Promise.resolve(c()).catch(() => undefined);
      },
    };
  } catch (e) {
    for (const c of closers) await Promise.resolve(c()).catch(() => undefined);
    throw e;
  }
}

/**
 * The batch claims (D39) on their own connection (the deployment's Redis: a Cluster when redis.cluster_nodes is set;
 * an agent's buckets share its hash tag), without auto-pipelining: a claim is written when it is made, so its round
 * trip runs while the batch is mapped (auto-pipelining would hold it until the mapping's synchronous pass ended).
 * Its closer is pushed after the producer's, so a send still settling at shutdown settles its keys on it first.
 */
function batchClaims(cfg: StewardConfig, closers: (() => unknown)[]): IdempotencyClaims {
  const claimsRedis = createRedisClient(cfg.redis.url, cfg.redis.clusterNodes, { maxRetriesPerRequest: 1, enableAutoPipelining: false });
  const idem = cfg.http.idempotency;
  // A batch's finalise rides with its agent's next claim (D51): one Redis round trip per batch under load.
  const claims = redisIdempotencyClaims(claimsRedis, { prefix: cfg.redis.keyPrefix, windowSeconds: idem.windowSeconds, pendingStaleMs: idem.pendingStaleMs, groups: idem.groups, finaliseRideMs: FINALISE_RIDE_MS, coalesceClaims: true });
  closers.push(async () => {
    // Bounded: an unreachable Redis would hold the finalises still waiting (and every closer after this) for ever.
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([claims.close?.(), new Promise((r) => (timer = setTimeout(r, CLAIMS_CLOSE_WAIT_MS)))]);
    } finally {
      clearTimeout(timer);
      claimsRedis.disconnect();
    }
  });
  return claims;
}
