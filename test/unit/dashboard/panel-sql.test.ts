import { describe, expect, it } from 'vitest';
import { CTQ_LABELS, LATENCY_LABELS, foldSeries, histogram, percentiles, topViolations } from '../../../src/adapters/dashboard/data.js';
import { CTQ_BINS, DIMENSION_NAMES, LATENCY_EDGES_MS, sqlFor } from '../../../src/adapters/dashboard/panel-sql.js';
import type { DashboardRange } from '../../../src/adapters/dashboard/params.js';

const R: DashboardRange = { fromMs: 1_000_000, toMs: 4_600_000, bucketMs: 60_000 };

describe('dashboard panel SQL', () => {
  const sql = sqlFor('steward_x');

  it('puts the typed range and bucket into every time-series query as integers', () => {
    for (const q of [sql.outcomes(R), sql.trustDebt(R), sql.dlqSeries(R)]) {
      expect(q).toMatch(/>= 1000000 AND \w+ <= 4600000/);
      expect(q).toMatch(/intDiv\(\w+, 60000\) \* 60000/);
      expect(q).toContain('steward_x.');
    }
    for (const q of [sql.decisionStats(R), sql.verdictStats(R)]) expect(q).toMatch(/>= 1000000 AND \w+ <= 4600000/);
  });

  it('counts interventions, traces and verdict latency from one join, the range inside both FINAL subqueries', () => {
    const q = sql.outcomes(R);
    expect(q).toContain("ARRAY JOIN [('all', 'traces'), ('type', f), ('blueprint', b), ('agent', a), ('vlat', toString(vb))] AS d");
    expect(q).toContain('GROUP BY t, f, b, a, vb');
    expect(q).toContain("if(v_intervention = '', intervention, v_intervention) AS f");
    expect(q).toMatch(/FROM steward_x\.decisions FINAL WHERE event_time_ms >= 1000000 AND event_time_ms <= 4600000\)\s+ANY LEFT JOIN \(SELECT trace_id, intervention AS v_intervention, scored_at_ms FROM steward_x\.verdicts FINAL WHERE event_time_ms >= 1000000/);
    expect(q).toContain("WHERE d.1 = 'all' OR (d.1 = 'vlat' AND vb >= 0) OR (d.1 IN ('type', 'blueprint', 'agent') AND f != 'ok')");
  });

  it('bins latency with multiIf over the edges (no lambda, no roundDown on 18.16)', () => {
    const q = sql.decisionStats(R);
    expect(q).toContain(`toString(multiIf(latency_ms < 0.5, 0, latency_ms < 1, 1,`);
    expect(q).toContain(`latency_ms < 5000, ${LATENCY_EDGES_MS.length - 1}, ${LATENCY_EDGES_MS.length})`);
    expect(sql.outcomes(R)).toContain('multiIf(toFloat64(if(scored_at_ms > decided_at_ms, scored_at_ms - decided_at_ms, 0)) < 0.5, 0,');
  });

  it('reads latency bins, per-stage percentiles and fired tripwires / failed rules in one scan of the decisions', () => {
    const q = sql.decisionStats(R);
    expect(q.match(/FROM steward_x\.decisions FINAL/g)).toHaveLength(1);
    expect(q).toContain("arrayMap(x -> ('tripwire', x), tripwires_fired), arrayMap(x -> ('rule', x), rules_failed)) AS p");
    expect(q).toContain("quantilesExactIf(0.5, 0.95, 0.99)(latency_ms, p.1 = 'stage') AS q");
    const v = sql.verdictStats(R);
    expect(v.match(/FROM steward_x\.verdicts FINAL/g)).toHaveLength(1);
    expect(v).toContain(`least(${CTQ_BINS - 1}, floor(assumeNotNull(ctq) * ${CTQ_BINS}))`);
    expect(v).toContain("arrayMap(x -> ('metric', x), policy_violations)");
  });

  it('maps a drill-down dimension to its column and quotes the key', () => {
    expect(DIMENSION_NAMES).toEqual(['type', 'blueprint', 'agent']);
    const q = sql.pointTraces(R, 'agent', "x' OR 1=1 --", 1_060_000, 100);
    expect(q).toContain("agent_id = 'x\\' OR 1=1 --'");
    expect(q).toContain('event_time_ms >= 1060000 AND event_time_ms < 1120000');
    expect(q).toMatch(/LIMIT 100\s*$/);
    expect(sql.pointTraces(R, 'type', 'block', 1_060_000, 5)).toContain("final_intervention = 'block'");
  });

  it("quotes trace ids in the trace story and finds the POLICY_DECISION entry by its payload's trace_id (entry ids are pd:<event id>)", () => {
    expect(sql.decision("t'1")).toContain("trace_id = 't\\'1'");
    expect(sql.ledgerEntry('a1', 't1')).toContain("agent_id = 'a1' AND type = 'POLICY_DECISION' AND visitParamExtractString(payload, 'trace_id') = 't1'");
    expect(sql.tableExists('review_queue')).toContain("database = 'steward_x' AND name = 'review_queue'");
  });

  it('refuses a database name that is not an identifier', () => {
    expect(() => sqlFor('steward; DROP').outcomes(R)).toThrow(/invalid ClickHouse identifier/);
  });

  it('refuses an oversized key before any SQL is built', () => {
    expect(() => sql.pointTraces(R, 'agent', 'k'.repeat(300), 1_060_000, 10)).toThrow(/at most 256/);
  });
});

describe('dashboard panel shaping', () => {
  it('keeps the largest series and folds the rest into (other), totals included', () => {
    const rows = [
      { t: '0', k: 'a', n: '5' },
      { t: '0', k: 'b', n: '1' },
      { t: '60000', k: 'c', n: '2' },
      { t: '60000', k: 'b', n: '2' },
    ];
    const f = foldSeries(rows, 2);
    expect(f.totals).toEqual([
      { k: 'a', total: 5 },
      { k: 'b', total: 3 },
      { k: '(other)', total: 2 },
    ]);
    expect(f.rows).toEqual([
      { t: 0, k: 'a', v: 5 },
      { t: 0, k: 'b', v: 1 },
      { t: 60000, k: '(other)', v: 2 },
      { t: 60000, k: 'b', v: 2 },
    ]);
    expect(foldSeries(rows, 10).totals!.map((x) => x.k)).toEqual(['a', 'b', 'c']);
  });

  it('adds up a bin that comes in several rows (the verdict-latency bins come per time bucket)', () => {
    expect(histogram([{ bin: '1', n: '3' }, { bin: '2', n: '7' }, { bin: '1', n: '4' }], ['x', 'y', 'z'])).toEqual([
      { label: 'x', n: 0 },
      { label: 'y', n: 7 },
      { label: 'z', n: 7 },
    ]);
  });

  it('gives every histogram bin a bar, empty ones zero', () => {
    expect(LATENCY_LABELS).toHaveLength(LATENCY_EDGES_MS.length + 1);
    expect(LATENCY_LABELS[0]).toBe('<0.5');
    expect(LATENCY_LABELS.at(-1)).toBe('≥5000');
    expect(CTQ_LABELS).toHaveLength(CTQ_BINS);
    const h = histogram([{ bin: '2', n: '7' }], ['x', 'y', 'z']);
    expect(h).toEqual([
      { label: 'x', n: 0 },
      { label: 'y', n: 0 },
      { label: 'z', n: 7 },
    ]);
  });

  it('orders violations as the report does (times, then kind and id) and keeps the limit', () => {
    const rows = [
      { kind: 'rule', k: 'b', n: '2', agents: '1' },
      { kind: 'tripwire', k: 'a', n: '5', agents: '2' },
      { kind: 'metric', k: 'z', n: '2', agents: '2' },
      { kind: 'rule', k: 'a', n: '2', agents: '1' },
    ];
    expect(topViolations(rows, 3)).toEqual([
      { kind: 'tripwire', id: 'a', times: 5, agents: 2 },
      { kind: 'metric', id: 'z', times: 2, agents: 2 },
      { kind: 'rule', id: 'a', times: 2, agents: 1 },
    ]);
  });

  it('rounds per-stage percentiles to 3 places as the latency report does', () => {
    expect(percentiles([{ kind: 'stage', k: 'rule', n: '3', agents: '1', q: [0.12345, 1.0006, 2], mx: 2.00049 }])).toEqual([
      { stage: 'rule', decisions: 3, p50: 0.123, p95: 1.001, p99: 2, max: 2 },
    ]);
  });
});
