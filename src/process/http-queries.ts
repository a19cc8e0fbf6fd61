/**
 * GET /v1/query/{scores,feedback,oversight}/{trace_id} over ClickHouse (docs/http.md "Queries"): read-only SELECTs of
 * the key's agent's rows, answered in the shapes the acgp client (PyPI 0.1.4) waits for — get_score() a `scores`
 * object, get_feedback() a `feedback` object, get_oversight_mode() an `oversight_mode` (D43).
 */
import { sqlString, type ClickHouseStore } from '../adapters/clickhouse/client.js';
import { decisionFeedback, oversightMode, stricter, verdictFeedback } from '../adapters/http/acgp-feedback.js';

type Row = Record<string, unknown>;
export type QueryKind = 'scores' | 'feedback' | 'oversight';

export function ingressQueries(store: ClickHouseStore): (kind: QueryKind, agentId: string, traceId: string) => Promise<Row | undefined> {
  const db = store.database;
  // The ClickHouse this runs on (18.16) has no query parameters: values enter the text only through the adapter's
  // sqlString literal escaping, in one pass (a substituted value is never scanned again).
  const SQL = {
    verdict: `SELECT trace_id, agent_id, intervention, approved, ctq, risk, confidence, metric_names, metric_scores, metric_statuses, policy_violations, scored_at_ms, verdict_json FROM ${db}.verdicts FINAL WHERE agent_id = {agent} AND trace_id = {trace} LIMIT 1`,
    decision: `SELECT trace_id, agent_id, intervention, approved, stage, halted, severity, reasons, tripwires_fired, rules_failed, fallback, decided_at_ms FROM ${db}.decisions FINAL WHERE agent_id = {agent} AND trace_id = {trace} LIMIT 1`,
  } as const;
  const one = async (which: keyof typeof SQL, agent: string, trace: string): Promise<Row | undefined> => {
    const sql = SQL[which].replace(/\{(agent|trace)\}/g, (_m, k: string) => sqlString(k === 'agent' ? agent : trace));
    const rs = await store.client.query({ query: sql, format: 'JSONEachRow' });
    return ((await rs.json()) as Row[])[0];
  };
  // ClickHouse's UInt8 flags as booleans.
  const flags = (r: Row): Row => ({ ...r, approved: r.approved === true || r.approved === 1, ...('halted' in r && { halted: r.halted === true || r.halted === 1 }), ...('fallback' in r && { fallback: r.fallback === true || r.fallback === 1 }) });
  return async (kind, agent, trace) => {
    if (kind === 'scores') {
      const v = await one('verdict', agent, trace);
      if (!v) return undefined;
      const { verdict_json: _drop, ...rest } = v;
      return { status: 'processed', ...flags(rest), scores: { ctq: v.ctq, risk: v.risk, confidence: v.confidence } };
    }
    if (kind === 'feedback') {
      // The verdict when the trace was scored; else its decision (a halted or unscored trace has only that).
      const v = await one('verdict', agent, trace);
      if (v) {
        const { verdict_json, ...rest } = v;
        return { status: 'processed', ...flags(rest), verdict: typeof verdict_json === 'string' ? (JSON.parse(verdict_json) as unknown) : null, feedback: verdictFeedback(flags(rest)) };
      }
      // Without a verdict: a stop (halted: never scored; not approved: final whatever the score) is the feedback;
      // an allowed trace is still being scored — no `feedback` yet, so get_feedback() waits for the verdict's.
      const d = await one('decision', agent, trace);
      if (!d) return undefined;
      const df = flags(d);
      return df.halted === true || df.approved !== true ? { status: 'processed', ...df, feedback: decisionFeedback(df) } : { status: 'pending', trace_id: df.trace_id, agent_id: df.agent_id, intervention: df.intervention, approved: df.approved };
    }
    const d = await one('decision', agent, trace);
    if (!d) return undefined;
    const v = await one('verdict', agent, trace);
    const ctq = typeof v?.ctq === 'number' ? v.ctq : null;
    // The stricter of the decision and the verdict (its intervention and its CTQ band).
    const mode = stricter(oversightMode(String(d.intervention)), oversightMode(String(v?.intervention ?? 'ok'), ctq));
    return { ...flags(d), ctq, ...(v && { verdict_intervention: v.intervention }), oversight_mode: mode };
  };
}
