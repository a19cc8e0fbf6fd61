/**
 * SQL of the dashboard's panels over the analyst views (docs/analytics.md), built from typed parameters
 * only (params.ts). Where `steward report` already has the query (top violations, latency percentiles, DLQ
 * reasons, restricted agents, the gate's six panels and alerts) the dashboard runs that one (data.ts); what is
 * here are the time series and distributions the reports do not have. docs/dashboard.md "Panels".
 */
import { assertIdentifier } from '../clickhouse/client.js';
import { lit, type DashboardRange } from './params.js';

/** Intervention series dimensions → the v_outcomes column (the whitelist a request's `dim` is checked against). */
export const DIMENSIONS = { type: 'final_intervention', blueprint: 'blueprint', agent: 'agent_id' } as const;
export type Dimension = keyof typeof DIMENSIONS;
export const DIMENSION_NAMES = Object.keys(DIMENSIONS) as Dimension[];

/** Decision latency histogram edges (ms): bin i holds latency in [EDGES[i-1], EDGES[i]). */
export const LATENCY_EDGES_MS: readonly number[] = [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
/** CTQ histogram: 20 bins of 0.05 over [0, 1] (1.0 falls in the last). */
export const CTQ_BINS = 20;

/** The LATENCY_EDGES_MS bin of an expression: multiIf (18.16 has no roundDown, and a lambda over a table column fails there). */
const latencyBin = (col: string) => `multiIf(${LATENCY_EDGES_MS.map((e, i) => `${col} < ${e}, ${i}`).join(', ')}, ${LATENCY_EDGES_MS.length})`;
const range = (col: string, r: DashboardRange) => `${col} >= ${lit.int(r.fromMs, 'from')} AND ${col} <= ${lit.int(r.toMs, 'to')}`;
const bucket = (col: string, r: DashboardRange) => `intDiv(${col}, ${lit.int(r.bucketMs, 'bucket')}) * ${lit.int(r.bucketMs, 'bucket')}`;

export function sqlFor(db: string) {
  const t = (name: string) => `${assertIdentifier(db)}.${assertIdentifier(name)}`;
  return {
    /**
     * Interventions (final intervention ≠ ok) per bucket under the three dimensions, all traces per bucket (dim
     * `all`) and the verdict-latency histogram (dim `vlat`, key = bin), from one join of decisions and verdicts:
     * counted per (bucket, type, blueprint, agent, latency bin) first, then spread over the dimensions (ARRAY
     * JOIN of the (dim, key) pairs) and summed. The final intervention is v_outcomes' rule (the verdict's, else
     * the decision's: a trace halted by a tripwire is never scored); the query is written out rather than read
     * from v_outcomes so the range filters run inside the FINAL subqueries (18.16 does not push a WHERE into the
     * view's joined subqueries: a 1-hour range cost as much as all data) and so one join serves both panels.
     * Verdict latency is `scored_at_ms − decided_at_ms` (Steward's clock at both ends), a verdict stored before its
     * decision counting as 0. Blueprint and agent are only read for interventions (the WHERE drops them for `ok`),
     * so `ok` traces group without them: the first GROUP BY then has a group per (bucket, type, blueprint, agent)
     * of the interventions only, not of every trace (1M bench decisions: 0.45–0.48 s against 0.64–0.73 s, same rows).
     */
    outcomes: (r: DashboardRange) => `
      SELECT t, d.1 AS dim, d.2 AS k, sum(c) AS n
      FROM (SELECT ${bucket('event_time_ms', r)} AS t, if(v_intervention = '', intervention, v_intervention) AS f, if(f = 'ok', '', blueprint) AS b, if(f = 'ok', '', agent_id) AS a,
                   if(v_intervention = '', -1, ${latencyBin('toFloat64(if(scored_at_ms > decided_at_ms, scored_at_ms - decided_at_ms, 0))')}) AS vb, count() AS c
            FROM (SELECT trace_id, agent_id, blueprint, event_time_ms, intervention, decided_at_ms FROM ${t('decisions')} FINAL WHERE ${range('event_time_ms', r)})
            ANY LEFT JOIN (SELECT trace_id, intervention AS v_intervention, scored_at_ms FROM ${t('verdicts')} FINAL WHERE ${range('event_time_ms', r)}) USING trace_id
            GROUP BY t, f, b, a, vb)
      ARRAY JOIN [('all', 'traces'), ('type', f), ('blueprint', b), ('agent', a), ('vlat', toString(vb))] AS d
      WHERE d.1 = 'all' OR (d.1 = 'vlat' AND vb >= 0) OR (d.1 IN ('type', 'blueprint', 'agent') AND f != 'ok')
      GROUP BY t, dim, k ORDER BY t, dim, k`,

    /** Trust debt per agent: the last value in each bucket (ACGP-1004 §10.7 debt trends). */
    trustDebt: (r: DashboardRange) => `
      SELECT agent_id AS k, ${bucket('ts_ms', r)} AS t, round(argMax(after, ts_ms), 4) AS debt, argMax(level, ts_ms) AS level
      FROM ${t('v_trust_debt_events')}
      WHERE ${range('ts_ms', r)} GROUP BY k, t ORDER BY k, t`,

    /**
     * One scan of the decisions for three panels: the latency histogram (kind `lat`, key = bin), the latency
     * percentiles per stage (kind `stage`: the report `latency`'s quantileExact and max) and the fired tripwires and
     * failed rules (kinds `tripwire`, `rule`: the report `top-violations`' counts and distinct agents). The report
     * queries scan `v_decisions` three times for the same numbers. Distinct agents and quantiles are computed
     * only for the kinds that show them (-If), the latency bins being one row per decision.
     */
    decisionStats: (r: DashboardRange) => `
      SELECT p.1 AS kind, p.2 AS k, count() AS n, uniqExactIf(agent_id, p.1 IN ('tripwire', 'rule')) AS agents,
             quantilesExactIf(0.5, 0.95, 0.99)(latency_ms, p.1 = 'stage') AS q, maxIf(latency_ms, p.1 = 'stage') AS mx
      FROM (SELECT agent_id, stage, latency_ms, tripwires_fired, rules_failed FROM ${t('decisions')} FINAL WHERE ${range('event_time_ms', r)})
      ARRAY JOIN arrayConcat([('lat', toString(${latencyBin('latency_ms')})), ('stage', stage)],
                             arrayMap(x -> ('tripwire', x), tripwires_fired), arrayMap(x -> ('rule', x), rules_failed)) AS p
      GROUP BY kind, k ORDER BY kind, k`,

    /** One scan of the verdicts: the CTQ histogram (kind `ctq`, CTQ_BINS bins over [0, 1], scored only) and the violated metric checks (kind `metric`). */
    verdictStats: (r: DashboardRange) => `
      SELECT p.1 AS kind, p.2 AS k, count() AS n, uniqExact(agent_id) AS agents
      FROM (SELECT agent_id, ctq, policy_violations FROM ${t('verdicts')} FINAL WHERE ${range('event_time_ms', r)})
      ARRAY JOIN arrayConcat(arrayFilter(x -> x.2 != '', [('ctq', if(isNull(ctq), '', toString(toUInt32(least(${CTQ_BINS - 1}, floor(assumeNotNull(ctq) * ${CTQ_BINS}))))))]),
                             arrayMap(x -> ('metric', x), policy_violations)) AS p
      GROUP BY kind, k ORDER BY kind, k`,

    /** Dead-lettered records per bucket and code. */
    dlqSeries: (r: DashboardRange) => `
      SELECT ${bucket('failed_at_ms', r)} AS t, code AS k, count() AS n FROM ${t('v_dlq_events')}
      WHERE ${range('failed_at_ms', r)} GROUP BY t, k ORDER BY t, k`,

    /** Drill-down, step 1: the traces behind one point of an interventions series. */
    pointTraces: (r: DashboardRange, dim: Dimension, key: string, bucketStartMs: number, limit: number) => {
      const start = lit.int(bucketStartMs, 't');
      const end = lit.int(bucketStartMs + r.bucketMs, 't');
      return `
      SELECT trace_id, agent_id, tenant, blueprint, final_intervention, decision_intervention, event_time_ms, latency_ms, ctq, risk
      FROM ${t('v_outcomes')}
      WHERE event_time_ms >= ${start} AND event_time_ms < ${end} AND ${range('event_time_ms', r)}
        AND final_intervention != 'ok' AND ${DIMENSIONS[dim]} = ${lit.text(key, 'key')}
      ORDER BY event_time_ms, trace_id LIMIT ${lit.int(limit, 'limit')}`;
    },

    /** Drill-down, step 2: one trace's rows. */
    decision: (traceId: string) => `SELECT * FROM ${t('v_decisions')} WHERE trace_id = ${lit.text(traceId, 'trace')} ORDER BY event_time_ms LIMIT 5`,
    verdict: (traceId: string) => `SELECT * FROM ${t('v_verdicts')} WHERE trace_id = ${lit.text(traceId, 'trace')} ORDER BY event_time_ms LIMIT 5`,
    debtChanges: (traceId: string) =>
      `SELECT event_id, agent_id, ts_ms, cause, before, after, level, previous_level, crossings FROM ${t('v_trust_debt_events')} WHERE trace_id = ${lit.text(traceId, 'trace')} ORDER BY ts_ms, event_id LIMIT 50`,
    /**
     * The trace's POLICY_DECISION ledger entries: entry id `pd:<event id>` (spec-decisions D30; `pd:<trace_id>` for
     * older records), so they are found by the payload's trace_id within the agent's chain. A trace id reused
     * with other bytes has one entry per event.
     */
    ledgerEntry: (agentId: string, traceId: string) =>
      `SELECT entry_id, agent_id, tenant, seq, ts_ms, type, payload, prev_hash, hash, signature, kid FROM ${t('ledger')}
       WHERE agent_id = ${lit.text(agentId, 'agent')} AND type = 'POLICY_DECISION' AND visitParamExtractString(payload, 'trace_id') = ${lit.text(traceId, 'trace')}
       ORDER BY seq LIMIT 5`,
    gateEvents: (traceId: string) =>
      `SELECT event_id, job_id, verdict, reason_codes, fix_mode, attempt_index, action, ts_ms FROM ${t('v_gate_judge_results')} WHERE trace_id = ${lit.text(traceId, 'trace')} ORDER BY ts_ms LIMIT 20`,

    /** The time span of the stored decisions (for "all data"); min/max need no FINAL: copies share their time. */
    extent: () => `SELECT min(event_time_ms) AS min_ms, max(event_time_ms) AS max_ms, count() AS n FROM ${t('decisions')}`,

    /** Open reviews (queued or taken) of the review queue (docs/rollout.md), the most urgent first. */
    reviewQueue: (limit: number) => `
      SELECT review_id, trace_id, agent_id, tenant, blueprint, intervention, confidence, threshold, status, reviewer, enqueued_at_ms, sla_due_ms
      FROM ${t('review_queue')} FINAL WHERE status != 'resolved' ORDER BY sla_due_ms, review_id LIMIT ${lit.int(limit, 'limit')}`,

    /** Whether a table exists (the review queue of issue #26 arrives with migration 8). */
    tableExists: (name: string) => `SELECT count() AS n FROM system.tables WHERE database = ${lit.text(db, 'database')} AND name = ${lit.text(name, 'table')}`,
  };
}

export type DashboardSql = ReturnType<typeof sqlFor>;
