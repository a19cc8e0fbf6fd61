/**
 * Ready analyst queries (docs/analytics.md). All read the deduplicated v_* views, so a row redelivered
 * by Kafka is counted once even before ClickHouse merged the copies away.
 */
import { StewardError } from '../../errors.js';
import type { ClickHouseStore } from './client.js';

export interface ReportOptions {
  /** Only events at or after this time (epoch ms). */
  sinceMs?: number;
  limit?: number;
}

export interface ReportDef {
  name: string;
  title: string;
  sql(db: string, o: Required<ReportOptions>): string;
}

// Explicit 'UTC': without it the buckets (and their printed times) follow the server's time zone.
const HOUR = (col: string) => `toStartOfHour(toDateTime(intDiv(${col}, 1000), 'UTC'))`;
const rate = `round(countIf(final_intervention != 'ok') / count(), 4)`;

function interventionsBy(key: string, label: string) {
  return (db: string, o: Required<ReportOptions>) => `
    SELECT ${key} AS ${label}, count() AS traces, countIf(final_intervention != 'ok') AS interventions, ${rate} AS rate,
           countIf(final_intervention IN ('block', 'halt')) AS blocked, countIf(final_intervention = 'escalate') AS escalated
    FROM ${db}.v_outcomes WHERE event_time_ms >= ${o.sinceMs}
    GROUP BY ${label} ORDER BY ${label === 'hour' ? 'hour DESC' : 'interventions DESC, ' + label} LIMIT ${o.limit}`;
}

export const REPORTS: ReportDef[] = [
  { name: 'interventions-by-blueprint', title: 'Intervention rate by blueprint', sql: interventionsBy('blueprint', 'blueprint') },
  { name: 'interventions-by-agent', title: 'Intervention rate by agent', sql: interventionsBy('agent_id', 'agent_id') },
  { name: 'interventions-by-hour', title: 'Intervention rate by hour (UTC)', sql: interventionsBy(HOUR('event_time_ms'), 'hour') },
  {
    name: 'top-violations',
    title: 'Top violated checks and tripwires',
    sql: (db, o) => `
      SELECT kind, id, count() AS times, uniqExact(agent_id) AS agents FROM (
        SELECT 'tripwire' AS kind, id, agent_id FROM ${db}.v_decisions ARRAY JOIN tripwires_fired AS id WHERE event_time_ms >= ${o.sinceMs}
        UNION ALL
        SELECT 'rule' AS kind, id, agent_id FROM ${db}.v_decisions ARRAY JOIN rules_failed AS id WHERE event_time_ms >= ${o.sinceMs}
        UNION ALL
        SELECT 'metric' AS kind, id, agent_id FROM ${db}.v_verdicts ARRAY JOIN policy_violations AS id WHERE event_time_ms >= ${o.sinceMs}
      ) GROUP BY kind, id ORDER BY times DESC, kind, id LIMIT ${o.limit}`,
  },
  {
    name: 'trust-debt',
    title: 'Trust debt over time per agent (hourly, last value)',
    sql: (db, o) => `
      SELECT agent_id, ${HOUR('ts_ms')} AS hour, round(argMax(after, ts_ms), 4) AS debt, argMax(level, ts_ms) AS level, count() AS changes
      FROM ${db}.v_trust_debt_events WHERE ts_ms >= ${o.sinceMs}
      GROUP BY agent_id, hour ORDER BY agent_id, hour LIMIT ${o.limit}`,
  },
  {
    name: 'latency',
    title: 'Decision latency percentiles per stage (ms)',
    sql: (db, o) => `
      SELECT stage, count() AS decisions, round(quantileExact(0.5)(latency_ms), 3) AS p50, round(quantileExact(0.95)(latency_ms), 3) AS p95,
             round(quantileExact(0.99)(latency_ms), 3) AS p99, round(max(latency_ms), 3) AS max
      FROM ${db}.v_decisions WHERE event_time_ms >= ${o.sinceMs}
      GROUP BY stage ORDER BY stage LIMIT ${o.limit}`,
  },
  {
    name: 'dlq-reasons',
    title: 'Dead-letter reasons',
    sql: (db, o) => `
      SELECT code, source_topic, stage, count() AS records, max(failed_at_ms) AS last_failed_at_ms, any(message) AS example
      FROM ${db}.v_dlq_events WHERE failed_at_ms >= ${o.sinceMs}
      GROUP BY code, source_topic, stage ORDER BY records DESC LIMIT ${o.limit}`,
  },
  {
    name: 'restricted-agents',
    title: 'Agents in restricted mode (latest trust-debt level)',
    sql: (db, o) => `
      SELECT tenant, agent_id, round(argMax(after, ts_ms), 4) AS debt, argMax(level, ts_ms) AS level, max(ts_ms) AS since_ms
      FROM ${db}.v_trust_debt_events
      GROUP BY tenant, agent_id HAVING level IN ('restricted_mode', 're_tiering_review')
      ORDER BY debt DESC LIMIT ${o.limit}`,
  },
];

export function reportByName(name: string): ReportDef {
  const r = REPORTS.find((x) => x.name === name);
  if (!r) throw new StewardError('STEWARD_USAGE', `unknown report '${name}' (${REPORTS.map((x) => x.name).join(', ')})`);
  return r;
}

export async function runReport(store: ClickHouseStore, name: string, opts: ReportOptions = {}): Promise<Record<string, unknown>[]> {
  const o = { sinceMs: Math.max(0, Math.trunc(opts.sinceMs ?? 0)), limit: Math.max(1, Math.trunc(opts.limit ?? 50)) };
  return store.query(reportByName(name).sql(store.database, o));
}

/** Plain-text table for the terminal. */
export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = Object.keys(rows[0]);
  const cell = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)).slice(0, 60);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(width[i])).join('  ').trimEnd();
  return [line(cols), line(width.map((w) => '-'.repeat(w))), ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join('\n');
}
