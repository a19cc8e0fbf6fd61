/**
 * Human review outcomes and remediation decisions for trust debt (ACGP-1004 §10.4).
 *
 *   steward review approve --trace ID --agent A [--tenant T] [--reviewer R] [--credit C] [--at TIME]
 *       an escalation was approved: successful_review_credit (§10.4.1), once per trace (event `review:<ID>`)
 *   steward review deny --trace ID --agent A ...      recorded as a no-op (a denied escalation earns no credit)
 *   steward review approve --request REQ --reviewer R [--credit C] [--at TIME]   grant a remediation request (§10.4.3)
 *   steward review deny --request REQ --reviewer R [--at TIME]                   deny it
 *   steward review request --agent A --reason TEXT [--tenant T] [--id REQ] [--at TIME]   file a remediation request
 *   steward review pending [--tenant T] [--json]
 *   steward review retier list [--tenant T] [--json]          queued re-tiering reviews (§10.6 re_tiering_review)
 *   steward review retier resolve AGENT --decision keep|retier --by NAME [--note TEXT] [--tenant T] [--at TIME]
 *       resolves the agent's queued re-tiering requests: removes them from the Redis queue and publishes a
 *       `retier_resolved` review event on acgp.reviews (Kafka from the config / KAFKA_BROKERS, --topic-prefix)
 *   steward review queue list|take|resolve ...   the PVS-1 §5.3 review queue (review-queue.ts, docs/rollout.md)
 * Common: [--config FILE] [--redis URL] [--prefix P] [--blueprints DIR] [--agents FILE] [--topic-prefix P].
 * Credits and thresholds are the trust_debt settings of the blueprint selected for the agent (as
 * `steward run` selects it) unless --credit is given. Every debt change is printed as JSON and published
 * on acgp.trust-debt (ACGP-1004 §10.7: every change is an event; the sink lands it in ClickHouse), in Avro when
 * topics.avro_outputs has trust_debt (the registry is then asked for the schema id first);
 * `--no-publish` keeps it in Redis only. The Redis write comes first and is idempotent by event id, so
 * after a failed publish the same command publishes the change again (the sink dedupes by event id).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createRedisClient } from '../../adapters/redis/client.js';
import { RedisTrustDebtStore } from '../../adapters/redis/trust-debt-store.js';
import { KafkaAdapter } from '../../adapters/kafka/client.js';
import type { ReviewMessage, TrustDebtMessage } from '../../contracts/messages.js';
import { outputEncoders } from '../../adapters/kafka/output-avro.js';
import { createRegistry } from '../../adapters/kafka/serde.js';
import { topicNames } from '../../adapters/kafka/topics.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import type { RetierRequest, TrustDebtChange } from '../../engine/trust-debt/index.js';
import { trustDebtMessage, trustDebtValue } from '../../consumers/trust-debt.js';
import { StewardError } from '../../errors.js';
import { agentTrustDebtSettings, parseTime, redisTarget } from './debt.js';
import { QUEUE_USAGE, runQueue } from './review-queue.js';

export const USAGE = [
  'usage: steward review approve|deny --trace ID --agent A [--tenant T] [--reviewer R] [--credit C] [--at TIME]',
  '       steward review approve|deny --request REQ --reviewer R [--credit C] [--at TIME]',
  '       steward review request --agent A --reason TEXT [--tenant T] [--id REQ] [--at TIME]',
  '       steward review pending [--tenant T] [--json]',
  '       steward review retier list [--tenant T] [--json]',
  '       steward review retier resolve AGENT --decision keep|retier --by NAME [--note TEXT] [--tenant T] [--at TIME] [--topic-prefix P]',
  QUEUE_USAGE,
  '       (all: [--config FILE] [--redis URL] [--prefix P] [--blueprints DIR] [--agents FILE] [--topic-prefix P] [--no-publish])',
].join('\n');

const OPTIONS = {
  trace: { type: 'string' },
  request: { type: 'string' },
  agent: { type: 'string' },
  tenant: { type: 'string' },
  reviewer: { type: 'string' },
  credit: { type: 'string' },
  at: { type: 'string' },
  reason: { type: 'string' },
  id: { type: 'string' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  redis: { type: 'string' },
  prefix: { type: 'string' },
  decision: { type: 'string' },
  by: { type: 'string' },
  note: { type: 'string' },
  'topic-prefix': { type: 'string' },
  'no-publish': { type: 'boolean' },
  blueprints: { type: 'string' },
  agents: { type: 'string' },
} as const;

function usage(msg?: string): StewardError {
  return new StewardError('STEWARD_USAGE', msg ? `${msg}\n${USAGE}` : USAGE);
}

function creditOf(s: string | undefined): number | undefined {
  if (s === undefined) return undefined;
  const n = Number(s);
  if (!Number.isFinite(n) || Math.abs(n) > 1) throw usage(`--credit must be a number in [-1, 1] (read as a credit): ${s}`);
  return -Math.abs(n);
}

const print = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');
const changeJson = (c: TrustDebtChange) => ({ ...c, audits: c.audits?.length ? c.audits : undefined });

async function withProducer(v: Values, fn: (send: (topic: 'reviews' | 'trustDebt', key: string, values: unknown[]) => Promise<void>) => Promise<void>): Promise<void> {
  const cfg = loadStewardConfig(v.config);
  const topics = topicNames(typeof v['topic-prefix'] === 'string' ? v['topic-prefix'] : cfg.topics.prefix);
  // topics.avro_outputs has trust_debt: the changes go out in Avro, as the trust-debt stage writes them. Looked up
  // only when a change is sent: a reviews-only send (retier) does not need the registry.
  let encoder: Promise<((t: TrustDebtMessage) => Buffer) | undefined> | undefined;
  const encoderOf = () =>
    (encoder ??= cfg.topics.avroOutputs.includes('trust_debt') ? outputEncoders(createRegistry(cfg.schemaRegistryUrl!), { trustDebt: `${topics.trustDebt}-value` }).then((e) => e.trustDebt) : Promise.resolve(undefined));
  const producer = await new KafkaAdapter(cfg.kafka).producer();
  try {
    await fn(async (topic, key, values) => {
      const encode = topic === 'trustDebt' ? await encoderOf() : undefined;
      const value = (x: unknown) => (topic === 'trustDebt' ? trustDebtValue(x as TrustDebtMessage, encode) : JSON.stringify(x));
      await producer.send([{ topic: topics[topic], messages: values.map((x) => ({ key, value: value(x) })) }]);
    });
  } finally {
    await producer.disconnect();
  }
}

/** The change and the audit credits that fell due before it, as acgp.trust-debt events (stage format). */
async function publishChange(v: Values, change: TrustDebtChange): Promise<void> {
  if (v['no-publish']) return;
  try {
    await withProducer(v, (send) => send('trustDebt', change.agentId, [...(change.audits ?? []), change].map((c) => trustDebtMessage(c))));
  } catch (e) {
    throw new StewardError('STEWARD_KAFKA', `debt change ${change.eventId} applied in Redis but not published to acgp.trust-debt (${(e as Error).message}); run the same command again to publish it`, { cause: e, retryable: true });
  }
}

export async function run(argv: string[]): Promise<number> {
  // PVS-1 §5.3 review queue (docs/rollout.md): its own options, in review-queue.ts.
  if (argv[0] === 'queue') return runQueue(argv.slice(1));
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (e) {
    throw usage((e as Error).message);
  }
  const { values: v, positionals } = parsed;
  const [sub, ...extra] = positionals;
  if (sub === 'retier') return retier(extra, v);
  if (!sub || extra.length > 0 || !['approve', 'deny', 'request', 'pending'].includes(sub)) throw usage();
  const now = Date.now();
  const at = parseTime(v.at, now);
  const credit = creditOf(v.credit);
  const { url, prefix, dedupTtlSeconds, clusterNodes } = redisTarget(v);
  const redis = createRedisClient(url, clusterNodes, { maxRetriesPerRequest: 1 });
  const store = new RedisTrustDebtStore(redis, { prefix, dedupTtlSeconds });
  try {
    if (sub === 'pending') {
      const list = await store.pendingRemediations(v.tenant);
      if (v.json) for (const r of list) print(r);
      else {
        if (list.length === 0) process.stdout.write('no pending remediation requests\n');
        for (const r of list) process.stdout.write(`${r.requestId}  ${r.tenant}/${r.agentId}  ${new Date(r.atMs).toISOString()}  ${r.reason}\n`);
      }
      return 0;
    }
    if (sub === 'request') {
      if (!v.agent || !v.reason) throw usage('request needs --agent and --reason');
      const s = await agentTrustDebtSettings(v.agent, v);
      print(await store.requestRemediation(s.tenant, v.agent, { requestId: v.id ?? randomUUID(), reason: v.reason, atMs: at }, s.config));
      return 0;
    }
    if (v.request !== undefined) {
      if (v.trace !== undefined) throw usage('give --trace or --request, not both');
      if (!v.reviewer) throw usage('a remediation decision needs --reviewer');
      const filed = await store.getRemediation(v.request);
      if (!filed) throw new StewardError('STEWARD_REMEDIATION', `no remediation request ${v.request}`, { details: { requestId: v.request } });
      const s = await agentTrustDebtSettings(filed.agentId, { ...v, tenant: filed.tenant });
      const r = await store.decideRemediation(v.request, sub === 'approve' ? 'grant' : 'deny', { reviewer: v.reviewer, credit, atMs: at }, s.config);
      print({ request: r.request, change: r.change ? changeJson(r.change) : undefined });
      if (r.change) await publishChange(v, r.change);
      return 0;
    }
    if (!v.trace || !v.agent) throw usage('a review outcome needs --trace and --agent (or --request for a remediation decision)');
    if (sub === 'deny') {
      // §10.4.1 credits only approvals; the escalation's own debt already moved with its intervention.
      print({ trace_id: v.trace, agent_id: v.agent, outcome: 'denied', change: null });
      return 0;
    }
    const s = await agentTrustDebtSettings(v.agent, v);
    const change = await store.apply({ eventId: `review:${v.trace}`, tenant: s.tenant, agentId: v.agent, atMs: at, kind: 'review_approved', credit }, s.config);
    print(changeJson(change));
    await publishChange(v, change);
    return 0;
  } finally {
    redis.disconnect();
  }
}

type Values = Record<string, string | boolean | undefined> & { tenant?: string; config?: string; redis?: string; prefix?: string; json?: boolean; at?: string; blueprints?: string; agents?: string };

const retierJson = (r: RetierRequest) => ({ tenant: r.tenant, agent_id: r.agentId, event_id: r.eventId, at: new Date(r.atMs).toISOString(), at_ms: r.atMs, debt: r.debt });

/** §10.6 re_tiering_review: list the queue, or resolve an agent's requests with an auditable review event. */
async function retier(args: string[], v: Values): Promise<number> {
  const [action, agent, ...extra] = args;
  if (action === 'list') {
    if (agent !== undefined) throw usage('retier list takes no AGENT (use --tenant to filter)');
  } else if (action === 'resolve') {
    if (!agent || extra.length > 0) throw usage('retier resolve needs exactly one AGENT');
    if (v.decision !== 'keep' && v.decision !== 'retier') throw usage('retier resolve needs --decision keep|retier');
    if (typeof v.by !== 'string' || v.by.trim() === '') throw usage('retier resolve needs --by NAME (the reviewer)');
  } else throw usage();
  const { url, prefix, dedupTtlSeconds, clusterNodes } = redisTarget(v);
  const redis = createRedisClient(url, clusterNodes, { maxRetriesPerRequest: 1 });
  const store = new RedisTrustDebtStore(redis, { prefix, dedupTtlSeconds });
  try {
    if (action === 'list') {
      const list = (await store.retierQueue(1_000_000)).filter((r) => v.tenant === undefined || r.tenant === v.tenant);
      if (v.json) for (const r of list) print(retierJson(r));
      else {
        if (list.length === 0) process.stdout.write('no queued re-tiering reviews\n');
        for (const r of list) process.stdout.write(`${r.tenant}/${r.agentId}  ${new Date(r.atMs).toISOString()}  debt ${r.debt.toFixed(4)}  ${r.eventId}\n`);
      }
      return 0;
    }
    const tenant = (await agentTrustDebtSettings(agent!, v)).tenant;
    const queued = (await store.retierQueue(1_000_000)).filter((r) => r.tenant === tenant && r.agentId === agent);
    if (queued.length === 0) throw new StewardError('STEWARD_REMEDIATION', `no queued re-tiering review for ${tenant}/${agent}`, { details: { tenant, agentId: agent } });
    const atMs = parseTime(v.at, Date.now());
    const review: ReviewMessage = {
      event_id: `retier:${tenant}:${agent}:${atMs}`,
      agent_id: agent!,
      tenant,
      kind: 'retier_resolved',
      decision: v.decision as 'keep' | 'retier',
      reviewer: String(v.by),
      note: typeof v.note === 'string' ? v.note : undefined,
      timestamp: new Date(atMs).toISOString(),
      requests: queued.map((r) => ({ event_id: r.eventId, at_ms: r.atMs, debt: r.debt })),
    };
    // Audit record first: if publishing fails the requests stay queued and the command can be repeated.
    await withProducer(v, (send) => send('reviews', agent!, [review]));
    const resolved = await store.resolveRetier(tenant, agent!);
    print({ review, resolved: resolved.map(retierJson) });
    return 0;
  } finally {
    redis.disconnect();
  }
}
