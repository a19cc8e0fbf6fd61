// Grafana cannot run here, so every panel of deploy/grafana/dashboards/steward.json has its SQL run against the
// native ClickHouse (18.16 here) after the plugin's macros are expanded the way the plugin expands them, as a
// read-only client on the datasource's default database would. The database holds a little of every kind of
// row the panels read; a time-series panel must answer a DateTime `time` column, and the interventions panel
// must give the numbers the steward dashboard gives for the same range.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { gateReport } from '../../../src/adapters/clickhouse/reports.js';
import { loadPanels } from '../../../src/adapters/dashboard/data.js';
import { ReadOnlyClickHouseStore } from '../../../src/adapters/dashboard/read-only-store.js';
import { services, uniqueIdent } from '../setup/helpers.js';
import { expandGrafanaMacros } from './grafana-macros.js';

interface GrafanaPanel {
  id: number;
  type: string;
  title: string;
  datasource: { type: string; uid: string };
  targets: { refId: string; rawSql: string; format: number; queryType: string; datasource: { uid: string } }[];
}

const DASHBOARD = JSON.parse(readFileSync(fileURLToPath(new URL('../../../deploy/grafana/dashboards/steward.json', import.meta.url)), 'utf8')) as { panels: GrafanaPanel[] };
const DATASOURCE = readFileSync(fileURLToPath(new URL('../../../deploy/grafana/provisioning/datasources/clickhouse.yaml', import.meta.url)), 'utf8');
const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const RANGE = { fromMs: T0, toMs: T0 + 2 * 86_400_000 - 1, intervalMs: 3_600_000 };
const N = 3000;
/** Gate rows in the last 40 minutes of the range: the alerts panel's window is the hour up to the range end. */
const GATE_T0 = RANGE.toMs - 40 * 60_000;

describe('Grafana dashboards: every panel SQL on the native ClickHouse', () => {
  const database = uniqueIdent('steward_grafana');
  let admin: ClickHouseStore;
  let grafana: ClickHouseClient;

  beforeAll(async () => {
    admin = new ClickHouseStore({ url: services().clickhouseUrl, database });
    await migrate(admin);
    const step = Math.floor((2 * 86_400_000) / N);
    const t = (x: string) => admin.table(x);
    await admin.command(
      `INSERT INTO ${t('decisions')} (trace_id, agent_id, tenant, blueprint, intervention, approved, stage, halted, severity, reasons, tripwires_fired, rules_failed,
         tripwires_json, rules_json, latency_ms, event_time_ms, decided_at_ms, hook, tool, session_id, engine_version, fallback, ingested_at_ms)
       SELECT concat('t-', toString(number)), concat('agent-', toString(number % 5)), 'acme', concat('bp-', toString(number % 3), '@1.0'),
         ['ok','ok','ok','nudge','flag','escalate','block','halt'][number % 8 + 1], number % 8 < 5, if(number % 8 >= 6, 'tripwire', 'none'), number % 8 >= 6, '',
         emptyArrayString(), if(number % 8 = 7, ['dangerous_db_ops'], emptyArrayString()), if(number % 11 = 0, ['refund_amount_cap'], emptyArrayString()), '[]', '[]',
         (number % 37) / 3, ${T0} + number * ${step}, ${T0} + number * ${step} + 3, 'tool_call', 'sql', '', '0.1.0', 0, 0 FROM numbers(${N})`,
    );
    await admin.command(
      `INSERT INTO ${t('verdicts')} (trace_id, agent_id, tenant, blueprint, intervention, approved, stage, ctq, risk, confidence, policy_violations,
         metric_names, metric_scores, metric_statuses, metrics_json, verdict_json, signature, event_time_ms, scored_at_ms, ingested_at_ms)
       SELECT concat('t-', toString(number)), concat('agent-', toString(number % 5)), 'acme', concat('bp-', toString(number % 3), '@1.0'),
         if(number % 10 = 0, 'escalate', 'ok'), 1, 'ctq', (number % 100) / 100, 0.1, 0.9, if(number % 10 = 0, ['accuracy'], emptyArrayString()),
         ['accuracy'], [toNullable((number % 100) / 100)], ['ok'], '[]', '{}', 'sig', ${T0} + number * ${step}, ${T0} + number * ${step} + 70, 0
       FROM numbers(${N}) WHERE number % 8 < 6`,
    );
    await admin.command(
      `INSERT INTO ${t('trust_debt_events')} (event_id, tenant, agent_id, ts_ms, cause, before, after, level, previous_level, crossings, trace_id, ingested_at_ms)
       SELECT concat('e-', toString(number)), 'acme', concat('agent-', toString(number % 5)), ${T0} + number * 600000, 'intervention', number / 100, (number + 1) / 100,
         if(number > 75, 're_tiering_review', if(number > 50, 'restricted_mode', 'normal')), 'normal', emptyArrayString(), concat('t-', toString(number)), 0 FROM numbers(90)`,
    );
    await admin.command(
      `INSERT INTO ${t('dlq_events')} (dlq_topic, dlq_partition, dlq_offset, source_topic, source_partition, source_offset, source_ts_ms, stage, code, message, failed_at_ms, key, value_bytes, ingested_at_ms)
       SELECT 'acgp.dlq', 0, number, 'acgp.traces', 0, toString(number), ${T0} + number * 900000, 'tripwire', if(number % 2 = 0, 'STEWARD_TRACE_SCHEMA', 'STEWARD_TRACE_TOO_LARGE'),
         'x', ${T0} + number * 900000, 'k', 10, 0 FROM numbers(40)`,
    );
    await admin.command(
      `INSERT INTO ${t('gate_judge_results')} (event_id, trace_id, job_id, agent_id, tenant, session_id, user_id_hash, intent_id, capability_profile_id, skill_id,
         quality_score, verdict, reason_codes, fix_mode, attempt_index, action, judged_by, degraded, model_id, token_cost, latency_ms, ts_ms, ingested_at_ms)
       SELECT concat('fajr:', toString(number)), concat('g-', toString(number)), concat('job-', toString(intDiv(number, 2))), 'agent-1', 'acme', concat('s-', toString(intDiv(number, 2))), '',
         if(number % 3 = 0, 'refund', 'support'), '', '', 0.8, ['FAIL', 'PASS', 'PASS_WITH_CAVEATS'][number % 3 + 1],
         if(number % 3 = 0, ['WRONG_ABSTRACTION_LEVEL'], emptyArrayString()), if(number % 3 = 0, 'REWRITE_ONLY', ''), number % 2, 'finalize', 'llm', 0, 'm', 0.001, 120 + number, ${GATE_T0} + number * 60000, 0
       FROM numbers(30)`,
    );
    await admin.command(
      `INSERT INTO ${t('gate_outcomes')} (event_id, trace_id, job_id, agent_id, tenant, session_id, intent_id, final_verdict, action, num_retries, time_to_finalize_ms, user_feedback, ts_ms, feedback_at_ms, ingested_at_ms)
       SELECT concat('fo:', toString(number)), concat('g-', toString(number * 2 + 1)), concat('job-', toString(number)), 'agent-1', 'acme', concat('s-', toString(number)),
         if(number % 3 = 0, 'refund', 'support'), if(number % 4 = 0, 'fail', 'pass'), 'finalize', number % 3, 900, '', ${GATE_T0} + (number * 2 + 1) * 60000 + 5, 0, 0 FROM numbers(15)`,
    );
    await admin.command(
      `INSERT INTO ${t('review_queue')} (review_id, trace_id, agent_id, tenant, blueprint, blueprint_version, rollout_arm, intervention, confidence, threshold, ctq, risk, reasons,
         status, outcome, reviewer, note, event_time_ms, enqueued_at_ms, sla_due_ms, taken_at_ms, resolved_at_ms, updated_at_ms, ingested_at_ms)
       SELECT concat('rq:t-', toString(number)), concat('t-', toString(number)), 'agent-2', 'acme', 'bp-1@1.0', '1.0', '', 'escalate', 0.4, 0.6, 0.5, 0.5, emptyArrayString(),
         ['queued', 'taken', 'resolved'][number % 3 + 1], '', '', '', ${T0} + number, ${T0} + number, ${T0} + 3600000 + number, 0, 0, ${T0} + number, 0 FROM numbers(9)`,
    );
    grafana = createClient({ url: services().clickhouseUrl, database, clickhouse_settings: { readonly: '1' } });
  }, 120_000);

  afterAll(async () => {
    await grafana?.close();
    await admin?.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await admin?.close();
  });

  const run = async (sql: string) => (await (await grafana.query({ query: sql, format: 'JSONEachRow' })).json()) as Record<string, unknown>[];

  it('provisions the datasource its panels name', () => {
    expect(DATASOURCE).toContain('type: grafana-clickhouse-datasource');
    expect(DASHBOARD.panels.length).toBeGreaterThanOrEqual(20);
    for (const p of DASHBOARD.panels) {
      expect(p.datasource.uid).toBe('steward-clickhouse');
      expect(DATASOURCE).toContain(`uid: ${p.datasource.uid}`);
    }
  });

  it.each(DASHBOARD.panels.map((p) => [p.title, p] as const))('%s: SQL runs with the macros expanded', async (_title, p) => {
    for (const target of p.targets) {
      const sql = expandGrafanaMacros(target.rawSql, RANGE);
      expect(sql).not.toMatch(/\$/);
      const rows = await run(sql);
      if (target.format === 0) {
        // Time series: a `time` column Grafana reads as DateTime ('YYYY-MM-DD hh:mm:ss'), inside the range.
        expect(rows.length).toBeGreaterThan(0);
        for (const r of rows) {
          expect(String(r.time)).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
          const ms = Date.parse(`${String(r.time).replace(' ', 'T')}Z`);
          expect(ms).toBeGreaterThanOrEqual(RANGE.fromMs - RANGE.intervalMs);
          expect(ms).toBeLessThanOrEqual(RANGE.toMs);
        }
      } else expect(Array.isArray(rows)).toBe(true);
    }
  });

  it('has rows in every panel for this data (the SQL reads what the views hold)', async () => {
    const empty: string[] = [];
    for (const p of DASHBOARD.panels) if ((await run(expandGrafanaMacros(p.targets[0]!.rawSql, RANGE))).length === 0) empty.push(p.title);
    expect(empty).toEqual([]);
    // The alerts panel: all three alerts for both intents in the window.
    const alerts = await run(expandGrafanaMacros(DASHBOARD.panels.find((x) => x.title.startsWith('Gate alerts'))!.targets[0]!.rawSql, RANGE));
    expect(new Set(alerts.map((a) => a.alert))).toEqual(new Set(['wrong_abstraction_level_share', 'replan_success', 'avg_retries']));
    // … with the values and states `steward report gate` (and the steward dashboard) computes for that window.
    const ro = new ReadOnlyClickHouseStore({ url: services().clickhouseUrl, database });
    try {
      const report = await gateReport(ro, { nowMs: RANGE.toMs, windowMs: 3_600_000 });
      const key = (a: Record<string, unknown>) =>
        `${String(a.alert)}|${String(a.intent_id)}|${Number(a.value)}|${a.state === undefined ? (a.firing ? 'FIRING' : 'ok') : String(a.state)}`;
      expect(alerts.map(key).sort()).toEqual(report.alerts.map((x) => key({ ...x })).sort());
    } finally {
      await ro.close();
    }
  });

  it('gives the interventions the steward dashboard gives for the same range', async () => {
    const p = DASHBOARD.panels.find((x) => x.title === 'Interventions over time by type')!;
    const rows = await run(expandGrafanaMacros(p.targets[0]!.rawSql, RANGE));
    const grafanaTotals: Record<string, number> = {};
    for (const r of rows) grafanaTotals[String(r.type)] = (grafanaTotals[String(r.type)] ?? 0) + Number(r.interventions);
    const ro = new ReadOnlyClickHouseStore({ url: services().clickhouseUrl, database });
    try {
      const answer = await loadPanels({ store: ro }, { fromMs: RANGE.fromMs, toMs: RANGE.toMs, bucketMs: RANGE.intervalMs }, RANGE.toMs);
      const page = answer.panels.find((x) => x.id === 'interventions-type')!;
      expect(Object.fromEntries(page.totals!.map((x) => [x.k, x.total]))).toEqual(grafanaTotals);
      // nudge and flag decisions all got a verdict here (ok or escalate), which is their final intervention.
      expect(Object.keys(grafanaTotals).sort()).toEqual(['block', 'escalate', 'halt']);
    } finally {
      await ro.close();
    }
  });
});
