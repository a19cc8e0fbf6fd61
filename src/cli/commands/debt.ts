/**
 * `steward debt show AGENT [--tenant T] [--at TIME] [--json] [--config FILE] [--redis URL] [--prefix P]`
 *   the agent's trust debt from Redis (REDIS_URL), decayed to now (or --at), with level, audit window
 *   and pending remediation requests.
 * `steward debt history AGENT [--tenant T] [--limit N] [--json] [--config FILE] [--url URL] [--database DB]`
 *   the debt changes from ClickHouse (trust_debt_events) when CLICKHOUSE_URL/--url/--config is given.
 * Both use the trust_debt settings of the blueprint selected for the agent, as `steward run` selects it:
 * the agent registry and blueprint directory of the steward config (or --agents FILE / --blueprints DIR).
 * Without a blueprint directory the §10 defaults apply (and the output says so).
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createRedisClient } from '../../adapters/redis/client.js';
import { RedisTrustDebtStore } from '../../adapters/redis/trust-debt-store.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { watchBlueprints } from '../../adapters/fs/blueprint-watcher.js';
import { createAgentRegistry, parseAgentRegistry, type AgentRegistry } from '../../engine/blueprint/index.js';
import { DEFAULT_TRUST_DEBT_CONFIG, levelFor, trustDebtConfigForAgent } from '../../engine/trust-debt/index.js';
import type { TrustDebtConfig } from '../../engine/types.js';
import { StewardAggregateError } from '../../errors.js';
import { StewardError } from '../../errors.js';
import { CLICKHOUSE_OPTIONS, clickhouseStoreFromArgs } from './migrate.js';
import { readUtf8FileSync } from '../../adapters/fs/text.js';

export const USAGE = [
  'usage: steward debt show AGENT [--tenant T] [--at TIME] [--json] [--config FILE] [--redis URL] [--prefix P]',
  '       steward debt history AGENT [--tenant T] [--limit N] [--json] [--config FILE] [--url URL] [--database DB]',
  '       (both: [--blueprints DIR] [--agents FILE]: where the agent\'s blueprint and its trust_debt settings come from)',
].join('\n');

const OPTIONS = {
  ...CLICKHOUSE_OPTIONS,
  tenant: { type: 'string' },
  at: { type: 'string' },
  json: { type: 'boolean' },
  redis: { type: 'string' },
  prefix: { type: 'string' },
  limit: { type: 'string' },
  blueprints: { type: 'string' },
  agents: { type: 'string' },
} as const;

/** ISO-8601 or epoch ms. */
export function parseTime(s: string | undefined, now: number): number {
  if (s === undefined) return now;
  const n = /^\d+$/.test(s) ? Number(s) : Date.parse(s);
  if (!Number.isFinite(n)) throw new StewardError('STEWARD_USAGE', `not a time: ${s} (ISO-8601 or epoch ms)`);
  return n;
}

const iso = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? '-' : new Date(ms).toISOString());

/**
 * Redis URL and key prefix: flags, then REDIS_URL/STEWARD_REDIS_PREFIX, then the steward config. The cluster seed
 * nodes (redis.cluster_nodes / REDIS_CLUSTER_NODES) apply unless --redis names one server.
 */
export function redisTarget(values: { config?: string; redis?: string; prefix?: string }): { url: string; prefix: string; dedupTtlSeconds: number; clusterNodes: string[] } {
  const cfg = loadStewardConfig(values.config);
  return { url: values.redis ?? cfg.redis.url, prefix: values.prefix ?? cfg.redis.keyPrefix, dedupTtlSeconds: cfg.trustDebt.dedupTtlSeconds, clusterNodes: values.redis ? [] : cfg.redis.clusterNodes };
}

/** --tenant, else the agent's tenant from the registry (agents.yaml of the steward config), else 'default'. */
export function tenantFor(agentId: string, values: { tenant?: string; config?: string }): string {
  if (values.tenant) return values.tenant;
  const file = loadStewardConfig(values.config).blueprints.agents;
  if (!file || !existsSync(file)) return 'default';
  const { registry } = parseAgentRegistry(readUtf8FileSync(file), file);
  return registry?.lookup(agentId).tenant ?? 'default';
}

export interface AgentTrustDebtSettings {
  tenant: string;
  /** The blueprint selected for the agent, or undefined when no blueprint directory exists (§10 defaults). */
  blueprint?: string;
  config: TrustDebtConfig;
}

function loadRegistryFile(file: string | undefined, defaultTier: Parameters<typeof createAgentRegistry>[1]): AgentRegistry {
  if (!file || !existsSync(file)) return createAgentRegistry([], defaultTier);
  const r = parseAgentRegistry(readUtf8FileSync(file), file, { defaultTier });
  if (!r.registry) throw new StewardAggregateError('STEWARD_CONFIG', r.errors);
  return r.registry;
}

/**
 * The agent's tenant and the trust_debt settings of the blueprint selected for it, as `steward run`
 * selects it (trusted registry + blueprint directory; flags override the steward config).
 */
export async function agentTrustDebtSettings(
  agentId: string,
  values: { tenant?: string; config?: string; blueprints?: string; agents?: string },
): Promise<AgentTrustDebtSettings> {
  const cfg = loadStewardConfig(values.config);
  const registry = loadRegistryFile(values.agents ?? cfg.blueprints.agents, cfg.engine.defaultTier);
  const dir = values.blueprints ?? cfg.blueprints.dir;
  if (!existsSync(dir)) {
    if (values.blueprints !== undefined) throw new StewardError('STEWARD_USAGE', `no such blueprint directory: ${dir}`);
    return { tenant: values.tenant ?? registry.lookup(agentId).tenant, config: DEFAULT_TRUST_DEBT_CONFIG };
  }
  const holder = await watchBlueprints(dir, { config: cfg.engine, watch: false });
  try {
    const sel = trustDebtConfigForAgent(holder.current(), registry, agentId);
    return { tenant: values.tenant ?? sel.tenant, blueprint: sel.blueprint, config: sel.config };
  } finally {
    holder.close();
  }
}

const thresholdsJson = (c: TrustDebtConfig) => ({
  elevated_monitoring: c.thresholds.elevatedMonitoring,
  restricted_mode: c.thresholds.restrictedMode,
  re_tiering_review: c.thresholds.reTieringReview,
});
const settingsLine = (s: AgentTrustDebtSettings) => {
  const t = s.config.thresholds;
  return `settings   ${s.blueprint ? `blueprint ${s.blueprint}` : 'ACGP-1004 §10 defaults (no blueprint directory)'}: thresholds ${t.elevatedMonitoring}/${t.restrictedMode}/${t.reTieringReview}, decay ${s.config.decay.rate} per ${s.config.decay.periodHours} h`;
};

async function show(agent: string, values: Record<string, string | boolean | undefined>): Promise<number> {
  const settings = await agentTrustDebtSettings(agent, values as { tenant?: string; config?: string; blueprints?: string; agents?: string });
  const tenant = settings.tenant;
  const at = parseTime(values.at as string | undefined, Date.now());
  const { url, prefix, dedupTtlSeconds, clusterNodes } = redisTarget(values as { config?: string; redis?: string; prefix?: string });
  const redis = createRedisClient(url, clusterNodes, { maxRetriesPerRequest: 1 });
  try {
    const store = new RedisTrustDebtStore(redis, { prefix, dedupTtlSeconds });
    const cfg = settings.config;
    const state = await store.state(tenant, agent);
    const { debt } = await store.current(tenant, agent, at, cfg);
    const pending = (await store.pendingRemediations(tenant)).filter((r) => r.agentId === agent);
    const out = {
      tenant,
      agent_id: agent,
      at: iso(at),
      debt,
      level: levelFor(debt, cfg),
      blueprint: settings.blueprint ?? null,
      thresholds: thresholdsJson(cfg),
      known: state !== undefined,
      stored: state ? { debt: state.debt, at: iso(state.lastMs), level: state.level, events: state.applied } : null,
      good_behavior_window_since: state ? iso(state.windowMs) : null,
      last_audit_credit: state?.lastAuditMs !== undefined ? iso(state.lastAuditMs) : null,
      pending_remediations: pending.map((r) => ({ request_id: r.requestId, reason: r.reason, at: iso(r.atMs) })),
    };
    if (values.json) process.stdout.write(JSON.stringify(out) + '\n');
    else {
      const lines = [
        `agent      ${tenant}/${agent}${state ? '' : '  (no trust-debt history)'}`,
        `debt       ${debt.toFixed(6)} at ${out.at}  (level ${out.level})`,
        settingsLine(settings),
      ];
      if (state) {
        lines.push(`stored     ${state.debt.toFixed(6)} at ${iso(state.lastMs)}, level ${state.level}, ${state.applied} event(s)`);
        lines.push(`good-behaviour window since ${iso(state.windowMs)}; last audit credit ${out.last_audit_credit ?? 'never'}`);
      }
      lines.push(`remediation requests pending: ${pending.length}`);
      for (const r of pending) lines.push(`  ${r.requestId}  ${iso(r.atMs)}  ${r.reason}`);
      process.stdout.write(lines.join('\n') + '\n');
    }
    return 0;
  } finally {
    redis.disconnect();
  }
}

/** ClickHouse 18.16 has no query parameters: quote string literals ourselves. */
export function sqlString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

async function history(agent: string, values: Record<string, string | boolean | undefined>): Promise<number> {
  const v = values as { config?: string; url?: string; database?: string; tenant?: string; limit?: string; json?: boolean };
  if (!process.env.CLICKHOUSE_URL && !v.url && !v.config) {
    process.stderr.write('steward debt history: unavailable — set CLICKHOUSE_URL (or --url/--config) to read trust_debt_events from ClickHouse\n');
    return 1;
  }
  const limit = v.limit === undefined ? 100 : Number(v.limit);
  if (!(Number.isInteger(limit) && limit >= 1)) throw new StewardError('STEWARD_USAGE', `--limit must be a positive integer\n${USAGE}`);
  const settings = await agentTrustDebtSettings(agent, { ...v, blueprints: values.blueprints as string | undefined, agents: values.agents as string | undefined });
  const store = clickhouseStoreFromArgs(v);
  try {
    const where = [`agent_id = ${sqlString(agent)}`, ...(v.tenant ? [`tenant = ${sqlString(v.tenant)}`] : [])].join(' AND ');
    let rows: Record<string, unknown>[];
    try {
      rows = await store.query(
        `SELECT event_id, tenant, agent_id, ts_ms, cause, before, after, level, previous_level, crossings
         FROM ${store.table('v_trust_debt_events')} WHERE ${where} ORDER BY ts_ms DESC, event_id DESC LIMIT ${limit}`,
      );
    } catch (e) {
      process.stderr.write(`steward debt history: unavailable — ${e instanceof Error ? e.message : String(e)}\n`);
      return 1;
    }
    rows.reverse();
    if (v.json) for (const r of rows) process.stdout.write(JSON.stringify(r) + '\n');
    else {
      // Levels in the rows are those the engine recorded; the header names the settings it used.
      process.stdout.write(`${settingsLine(settings)}\n`);
      if (rows.length === 0) process.stdout.write(`no trust-debt changes recorded for ${agent}\n`);
      for (const r of rows) {
        const crossings = Array.isArray(r.crossings) && r.crossings.length ? `  [${(r.crossings as string[]).join(', ')}]` : '';
        process.stdout.write(
          `${iso(Number(r.ts_ms))}  ${String(r.cause).padEnd(24)} ${Number(r.before).toFixed(4)} → ${Number(r.after).toFixed(4)}  ${r.level}${crossings}  ${r.event_id}\n`,
        );
      }
    }
    return 0;
  } finally {
    await store.close();
  }
}

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (e) {
    throw new StewardError('STEWARD_USAGE', `${(e as Error).message}\n${USAGE}`);
  }
  const [sub, agent, ...extra] = parsed.positionals;
  if (!agent || extra.length > 0 || (sub !== 'show' && sub !== 'history')) throw new StewardError('STEWARD_USAGE', USAGE);
  return sub === 'show' ? show(agent, parsed.values) : history(agent, parsed.values);
}
