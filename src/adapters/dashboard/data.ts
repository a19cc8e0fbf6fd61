/**
 * What the dashboard's JSON API answers: every panel for a time range (one call; the page polls it), the
 * traces behind a point, and one trace's story. Queries from `steward report` are reused as they are
 * (reports.ts: top violations, latency percentiles, DLQ reasons, restricted agents, the gate's panels and
 * alerts); everything runs through the read-only client (read-only-store.ts).
 */
import { DEFAULT_GATE_THRESHOLDS, gateReport, reportByName } from '../clickhouse/reports.js';
import type { ClickHouseStore } from '../clickhouse/client.js';
import { DEFAULT_TRUST_DEBT_CONFIG, type RetierRequest } from '../../engine/trust-debt/index.js';
import { CTQ_BINS, LATENCY_EDGES_MS, sqlFor } from './panel-sql.js';
import type { DashboardRange } from './params.js';
import { dataFingerprint, type PanelCache } from './panel-cache.js';

export type PanelKind = 'series' | 'bars' | 'table';

export interface Panel {
  id: string;
  title: string;
  kind: PanelKind;
  /** series: { t, k, v } points; bars: { label, n }; table: any rows. */
  rows: Record<string, unknown>[];
  /** series: every key's total over the range (what the legend shows), largest first. */
  totals?: { k: string; total: number }[];
  /** series: horizontal reference lines (trust-debt thresholds). */
  bands?: { label: string; value: number }[];
  /** The panel has no data source yet, or its source was not configured. */
  note?: string;
  drill?: 'interventions';
  dim?: string;
}

export interface PanelsAnswer {
  generated_at_ms: number;
  range: DashboardRange;
  panels: Panel[];
  alerts: Awaited<ReturnType<typeof gateReport>>['alerts'];
}

export interface DashboardSources {
  store: ClickHouseStore;
  /** The re-tiering queue (Redis, `steward review retier list`); absent when no Redis is configured. */
  retierQueue?: () => Promise<RetierRequest[]>;
  /** The gate alerts' window (ms, default 1 h). */
  gateWindowMs?: number;
  /** Series with more keys keep the largest this many (by total) and fold the rest into "(other)". */
  maxSeries?: number;
  /** Keeps the ClickHouse panels per (request, data fingerprint) (panel-cache.ts); the Redis queue is always read. */
  cache?: PanelCache<ClickHousePanels>;
}

/** The panels read from ClickHouse, in page order around the re-tiering queue (read from Redis on every load). */
export interface ClickHousePanels {
  before: Panel[];
  after: Panel[];
  alerts: PanelsAnswer['alerts'];
}

const num = (v: unknown) => Number(v);

/** Series rows `{t, k, n}` → points with the largest keys kept and the rest folded into "(other)". */
export function foldSeries(rows: { t: unknown; k: unknown; n: unknown }[], maxSeries: number): Pick<Panel, 'rows' | 'totals'> {
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(String(r.k), (totals.get(String(r.k)) ?? 0) + num(r.n));
  const ranked = [...totals].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const keep = new Set(ranked.slice(0, maxSeries).map(([k]) => k));
  const out = new Map<string, { t: number; k: string; v: number }>();
  for (const r of rows) {
    const k = keep.has(String(r.k)) ? String(r.k) : '(other)';
    const key = `${num(r.t)}|${k}`;
    const p = out.get(key) ?? { t: num(r.t), k, v: 0 };
    p.v += num(r.n);
    out.set(key, p);
  }
  const folded = ranked.slice(maxSeries).reduce((s, [, n]) => s + n, 0);
  return {
    rows: [...out.values()].sort((a, b) => a.t - b.t || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0)),
    totals: [...ranked.slice(0, maxSeries).map(([k, total]) => ({ k, total })), ...(folded > 0 ? [{ k: '(other)', total: folded }] : [])],
  };
}

/** Histogram rows `{bin, n}` → one bar per bin (empty bins included), labelled by its edges. */
export function histogram(rows: { bin: unknown; n: unknown }[], labels: string[]): Panel['rows'] {
  // Rows may repeat a bin (the verdict-latency bins come per time bucket): they add up.
  const counts = new Map<number, number>();
  for (const r of rows) counts.set(num(r.bin), (counts.get(num(r.bin)) ?? 0) + num(r.n));
  return labels.map((label, i) => ({ label, n: counts.get(i) ?? 0 }));
}

export const LATENCY_LABELS = LATENCY_EDGES_MS.map((e, i) => (i === 0 ? `<${e}` : `${LATENCY_EDGES_MS[i - 1]}–${e}`)).concat(`≥${LATENCY_EDGES_MS[LATENCY_EDGES_MS.length - 1]}`);
export const CTQ_LABELS = Array.from({ length: CTQ_BINS }, (_, i) => `${(i / CTQ_BINS).toFixed(2)}–${((i + 1) / CTQ_BINS).toFixed(2)}`);

export async function loadPanels(src: DashboardSources, r: DashboardRange, nowMs: number): Promise<PanelsAnswer> {
  const retierP = src.retierQueue ? src.retierQueue().catch((e: Error) => e) : Promise.resolve(undefined);
  const key = JSON.stringify([r.fromMs, r.toMs, r.bucketMs, src.gateWindowMs ?? null, src.maxSeries ?? null]);
  const chP = src.cache
    ? dataFingerprint(src.store).then((f) => src.cache!.get(`${key}|${f}`, () => clickHousePanels(src, r)))
    : clickHousePanels(src, r);
  const [ch, retier] = await Promise.all([chP, retierP]);
  const retierPanel: Panel =
    retier instanceof Error
      ? { id: 'retier-queue', title: 'Re-tiering queue (§10.6)', kind: 'table', rows: [], note: `re-tiering queue unavailable (Redis): ${retier.message}` }
      : retier === undefined
      ? { id: 'retier-queue', title: 'Re-tiering queue (§10.6)', kind: 'table', rows: [], note: 'no Redis configured for the dashboard: the re-tiering queue lives in Redis (steward review retier list)' }
      : { id: 'retier-queue', title: 'Re-tiering queue (§10.6)', kind: 'table', rows: retier.map((q) => ({ tenant: q.tenant, agent_id: q.agentId, at_ms: q.atMs, debt: q.debt, event_id: q.eventId })) };
  return { generated_at_ms: nowMs, range: r, panels: [...ch.before, retierPanel, ...ch.after], alerts: ch.alerts };
}

/** Every panel ClickHouse answers: a function of the range and the stored data only (what the cache relies on). */
async function clickHousePanels(src: DashboardSources, r: DashboardRange): Promise<ClickHousePanels> {
  const { store } = src;
  const db = store.database;
  const sql = sqlFor(db);
  const max = src.maxSeries ?? 10;
  const report = (name: string, limit = 20) => store.query(reportByName(name).sql(db, { sinceMs: r.fromMs, limit }));
  const th = DEFAULT_TRUST_DEBT_CONFIG.thresholds;
  const bands = [
    { label: 'elevated_monitoring', value: th.elevatedMonitoring },
    { label: 'restricted_mode', value: th.restrictedMode },
    { label: 're_tiering_review', value: th.reTieringReview },
  ];
  // Independent reads: issued together, the server runs them side by side.
  const [interventions, decStats, verStats, debt, dlqSeries, dlqReasons, restricted, gate, reviewQueue] = await Promise.all([
    store.query<{ t: string; dim: string; k: string; n: string }>(sql.outcomes(r)),
    store.query<StatRow>(sql.decisionStats(r)),
    store.query<StatRow>(sql.verdictStats(r)),
    store.query<{ k: string; t: string; debt: number; level: string }>(sql.trustDebt(r)),
    store.query<{ t: string; k: string; n: string }>(sql.dlqSeries(r)),
    report('dlq-reasons'),
    report('restricted-agents'),
    gateReport(store, { nowMs: r.toMs, sinceMs: r.fromMs, windowMs: src.gateWindowMs ?? 3_600_000, limit: 50, ...DEFAULT_GATE_THRESHOLDS }),
    reviewQueuePanel(store, sql),
  ]);
  const kind = (rows: StatRow[], k: string) => rows.filter((x) => x.kind === k);
  const bins = (rows: StatRow[]) => rows.map((x) => ({ bin: x.k, n: x.n }));
  const byDim = (dim: string) => interventions.filter((x) => x.dim === dim);
  const before: Panel[] = [
    { id: 'interventions-type', title: 'Interventions over time by type', kind: 'series', drill: 'interventions', dim: 'type', ...foldSeries(byDim('type'), max) },
    { id: 'interventions-blueprint', title: 'Interventions over time by blueprint', kind: 'series', drill: 'interventions', dim: 'blueprint', ...foldSeries(byDim('blueprint'), max) },
    { id: 'interventions-agent', title: 'Interventions over time by agent', kind: 'series', drill: 'interventions', dim: 'agent', ...foldSeries(byDim('agent'), max) },
    { id: 'traces', title: 'Decided traces', kind: 'series', ...foldSeries(byDim('all'), 1) },
    { id: 'top-violations', title: 'Top violated tripwires, rules and metric checks', kind: 'table', rows: topViolations([...kind(decStats, 'tripwire'), ...kind(decStats, 'rule'), ...kind(verStats, 'metric')], 15) },
    { id: 'trust-debt', title: 'Trust debt per agent (last value per bucket) with the §10.1 thresholds', kind: 'series', bands, ...debtSeries(debt, max) },
    { id: 'restricted-agents', title: 'Agents in restricted mode or re-tiering review', kind: 'table', rows: restricted },
    { id: 'decision-latency', title: 'Decision latency (ms, tripwire stage)', kind: 'bars', rows: histogram(bins(kind(decStats, 'lat')), LATENCY_LABELS) },
    { id: 'verdict-latency', title: 'Verdict latency (ms, decision → CTQ verdict)', kind: 'bars', rows: histogram(byDim('vlat').map((x) => ({ bin: x.k, n: x.n })), LATENCY_LABELS) },
    { id: 'latency-percentiles', title: 'Decision latency percentiles per stage (ms)', kind: 'table', rows: percentiles(kind(decStats, 'stage')) },
    { id: 'ctq', title: 'CTQ distribution (scored verdicts)', kind: 'bars', rows: histogram(bins(kind(verStats, 'ctq')), CTQ_LABELS) },
    ...gate.panels.map((p) => ({ id: `gate-${p.name}`, title: `Gate: ${p.title}`, kind: 'table' as const, rows: p.rows })),
    { id: 'gate-alerts', title: `Gate alerts (last ${Math.round((src.gateWindowMs ?? 3_600_000) / 60_000)} min up to the range end)`, kind: 'table', rows: gate.alerts.map((a) => ({ ...a, state: a.firing ? 'FIRING' : 'ok' })) },
    reviewQueue,
  ];
  const after: Panel[] = [
    { id: 'dlq-volume', title: 'Dead-lettered records over time by reason', kind: 'series', ...foldSeries(dlqSeries, max) },
    { id: 'dlq-reasons', title: 'Dead-letter reasons', kind: 'table', rows: dlqReasons },
  ];
  return { before, after, alerts: gate.alerts };
}

interface StatRow {
  kind: string;
  k: string;
  n: string;
  agents: string;
  q?: number[];
  mx?: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** As the report `top-violations`: kind, id, times, distinct agents; most frequent first, then kind and id. */
export function topViolations(rows: StatRow[], limit: number): Panel['rows'] {
  return rows
    .map((x) => ({ kind: x.kind, id: x.k, times: num(x.n), agents: num(x.agents) }))
    .sort((a, b) => b.times - a.times || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}

/** As the report `latency`: per stage, decisions and quantileExact 0.5 / 0.95 / 0.99 and max, rounded to 3 places. */
export function percentiles(rows: StatRow[]): Panel['rows'] {
  return rows.map((x) => ({ stage: x.k, decisions: num(x.n), p50: round3(x.q![0]!), p95: round3(x.q![1]!), p99: round3(x.q![2]!), max: round3(num(x.mx)) }));
}

function debtSeries(rows: { k: string; t: string; debt: number }[], max: number): Pick<Panel, 'rows' | 'totals'> {
  // Agents ranked by their highest debt in the range; the rest are left out (debt does not add up).
  const peak = new Map<string, number>();
  for (const r of rows) peak.set(r.k, Math.max(peak.get(r.k) ?? Number.NEGATIVE_INFINITY, num(r.debt)));
  const keep = [...peak].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, max);
  const keys = new Set(keep.map(([k]) => k));
  return {
    rows: rows.filter((r) => keys.has(r.k)).map((r) => ({ t: num(r.t), k: r.k, v: num(r.debt) })),
    totals: keep.map(([k, total]) => ({ k, total })),
  };
}

/**
 * The review queue of issue #26 (docs/rollout.md): `review_queue`, one row per review, latest state by
 * `updated_at_ms` (FINAL); open reviews (queued or taken) by SLA due time. Until migration 8 ran on the database
 * the panel says so.
 */
async function reviewQueuePanel(store: ClickHouseStore, sql: ReturnType<typeof sqlFor>): Promise<Panel> {
  const base = { id: 'review-queue', title: 'Review queue (open reviews by SLA due time)', kind: 'table' as const };
  const [exists] = await store.query<{ n: string }>(sql.tableExists('review_queue'));
  if (num(exists?.n ?? 0) === 0) return { ...base, rows: [], note: 'no review_queue table in this database yet (migration 8, the review queue of issue #26)' };
  return { ...base, rows: await store.query(sql.reviewQueue(100)) };
}
