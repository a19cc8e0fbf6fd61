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
  {
    // docs/analytics.md "ACM runs": `steward report runs`.
    name: 'runs',
    title: 'ACM runs: plan chosen, branches, forbidden branches, verification failures',
    sql: (db, o) => `
      SELECT tenant, run_id, agent_id, plan_id, decisions, blocked, replans, branches, forbidden_branches, verification_failures, compensations, first_ms, last_ms
      FROM ${db}.v_acm_runs WHERE last_ms >= ${o.sinceMs}
      ORDER BY last_ms DESC, run_id LIMIT ${o.limit}`,
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

// ───────────────────────────── finalization gate (docs/analytics.md "Finalization gate") ─────────────────────────────

/** The six §9.13 panels: each reads its view, hours from `sinceMs` up to `nowMs`. */
export const GATE_PANELS: readonly { name: string; view: string; title: string; orderBy: string }[] = [
  { name: 'verdict-rate', view: 'v_gate_verdict_rate', title: 'Verdict rate by hour and intent', orderBy: 'hour DESC, intent_id' },
  { name: 'reason-codes', view: 'v_gate_reason_codes', title: 'Top reason codes by intent', orderBy: 'hour DESC, intent_id, times DESC, reason_code' },
  { name: 'far-away', view: 'v_gate_far_away', title: '"Correct but far away" index (sessions with WRONG_ABSTRACTION_LEVEL or WRONG_ARTIFACT_TYPE)', orderBy: 'hour DESC, intent_id' },
  { name: 'replan-effectiveness', view: 'v_gate_replan_effectiveness', title: 'Replan effectiveness (jobs by the hour they ended)', orderBy: 'hour DESC, intent_id' },
  { name: 'fix-modes', view: 'v_gate_fix_modes', title: 'Fix mode distribution (results that needed a repair)', orderBy: 'hour DESC, intent_id' },
  { name: 'cost', view: 'v_gate_cost', title: 'Cost impact (extra judge calls, retries, judge latency, token cost)', orderBy: 'hour DESC, intent_id' },
];

export interface GateAlertThresholds {
  /** WRONG_ABSTRACTION_LEVEL share of an intent's judge results above which the alert fires (default 0.15). */
  farAwayMax: number;
  /** Replan success (repaired jobs that ended pass) below which it fires (default 0.5). */
  replanMin: number;
  /** Average retries per ended job above which it fires (default 1.3). */
  retriesMax: number;
}

export const DEFAULT_GATE_THRESHOLDS: GateAlertThresholds = { farAwayMax: 0.15, replanMin: 0.5, retriesMax: 1.3 };

export interface GateReportOptions extends Partial<GateAlertThresholds> {
  /** Evaluation time (epoch ms; default now). */
  nowMs?: number;
  /** The alerts' window, ms (default 1 h): events with nowMs − windowMs < time ≤ nowMs. */
  windowMs?: number;
  /** Panels: hours starting at or after the hour of this time (default 24 h before nowMs). */
  sinceMs?: number;
  /** Rows per panel (default 50). */
  limit?: number;
}

export interface GateAlertState {
  alert: 'wrong_abstraction_level_share' | 'replan_success' | 'avg_retries';
  intent_id: string;
  value: number;
  comparison: '>' | '<';
  threshold: number;
  firing: boolean;
  /** What the value is over: judge results, repaired jobs, or ended jobs in the window. */
  basis: number;
  basis_of: 'judge_results' | 'repaired_jobs' | 'ended_jobs';
}

export interface GateReport {
  now_ms: number;
  window_ms: number;
  since_ms: number;
  thresholds: GateAlertThresholds;
  panels: { name: string; view: string; title: string; rows: Record<string, unknown>[] }[];
  alerts: GateAlertState[];
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** The six panels from their views and the three alert states over the window (docs/analytics.md). */
export async function gateReport(store: ClickHouseStore, opts: GateReportOptions = {}): Promise<GateReport> {
  const nowMs = Math.trunc(opts.nowMs ?? Date.now());
  const windowMs = Math.trunc(opts.windowMs ?? 3_600_000);
  const sinceMs = Math.max(0, Math.trunc(opts.sinceMs ?? nowMs - 24 * 3_600_000));
  const limit = Math.max(1, Math.trunc(opts.limit ?? 50));
  const thresholds: GateAlertThresholds = {
    farAwayMax: opts.farAwayMax ?? DEFAULT_GATE_THRESHOLDS.farAwayMax,
    replanMin: opts.replanMin ?? DEFAULT_GATE_THRESHOLDS.replanMin,
    retriesMax: opts.retriesMax ?? DEFAULT_GATE_THRESHOLDS.retriesMax,
  };
  for (const [k, v] of Object.entries({ nowMs, windowMs, ...thresholds }))
    if (!Number.isFinite(v) || v < 0) throw new StewardError('STEWARD_USAGE', `gate report: ${k} must be a non-negative number`);
  const db = store.database;
  const fromSec = Math.floor(sinceMs / 1000);
  const toSec = Math.floor(nowMs / 1000);
  const panels = [];
  for (const p of GATE_PANELS) {
    const rows = await store.query(
      `SELECT * FROM ${db}.${p.view} WHERE hour >= toStartOfHour(toDateTime(${fromSec}, 'UTC')) AND hour <= toDateTime(${toSec}, 'UTC') ORDER BY ${p.orderBy} LIMIT ${limit}`,
    );
    panels.push({ ...p, rows });
  }
  const from = nowMs - windowMs;
  const wal = await store.query<{ intent_id: string; results: string; hits: string }>(
    `SELECT intent_id, count() AS results, countIf(has(reason_codes, 'WRONG_ABSTRACTION_LEVEL')) AS hits
     FROM ${db}.v_gate_judge_results WHERE ts_ms > ${from} AND ts_ms <= ${nowMs} GROUP BY intent_id ORDER BY intent_id`,
  );
  const jobs = await store.query<{ intent_id: string; jobs: string; retries: string; repaired: string; repaired_passed: string }>(
    `SELECT intent_id, count() AS jobs, sum(num_retries) AS retries, countIf(num_retries >= 1) AS repaired,
            countIf(num_retries >= 1 AND final_verdict = 'pass') AS repaired_passed
     FROM ${db}.v_gate_jobs WHERE ended_ms > ${from} AND ended_ms <= ${nowMs} GROUP BY intent_id ORDER BY intent_id`,
  );
  const alerts: GateAlertState[] = [];
  for (const r of wal) {
    const value = round4(Number(r.hits) / Number(r.results));
    alerts.push({ alert: 'wrong_abstraction_level_share', intent_id: r.intent_id, value, comparison: '>', threshold: thresholds.farAwayMax, firing: value > thresholds.farAwayMax, basis: Number(r.results), basis_of: 'judge_results' });
  }
  for (const r of jobs) {
    const repaired = Number(r.repaired);
    if (repaired > 0) {
      const value = round4(Number(r.repaired_passed) / repaired);
      alerts.push({ alert: 'replan_success', intent_id: r.intent_id, value, comparison: '<', threshold: thresholds.replanMin, firing: value < thresholds.replanMin, basis: repaired, basis_of: 'repaired_jobs' });
    }
  }
  for (const r of jobs) {
    const value = round4(Number(r.retries) / Number(r.jobs));
    alerts.push({ alert: 'avg_retries', intent_id: r.intent_id, value, comparison: '>', threshold: thresholds.retriesMax, firing: value > thresholds.retriesMax, basis: Number(r.jobs), basis_of: 'ended_jobs' });
  }
  return { now_ms: nowMs, window_ms: windowMs, since_ms: sinceMs, thresholds, panels, alerts };
}

/** The gate report as terminal text: each panel's table, then the alert states. */
export function formatGateReport(r: GateReport): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const out = [`Finalization gate — panels: hours from ${iso(r.since_ms)}; alerts: ${r.window_ms / 60_000} min up to ${iso(r.now_ms)}`, ''];
  for (const p of r.panels) out.push(`== ${p.title} (${p.view})`, formatTable(p.rows), '');
  const firing = r.alerts.filter((a) => a.firing).length;
  out.push(`== Alerts (${firing} firing)`);
  out.push(
    formatTable(
      r.alerts.map((a) => ({
        alert: a.alert, intent_id: a.intent_id === '' ? '(none)' : a.intent_id, value: a.value,
        threshold: `${a.comparison} ${a.threshold}`, state: a.firing ? 'FIRING' : 'ok', basis: `${a.basis} ${a.basis_of.replace('_', ' ')}`,
      })),
    ),
  );
  return `${out.join('\n')}\n`;
}
