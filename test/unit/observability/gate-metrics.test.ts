// Finalization-gate metrics (gateJudged, gateOutcome) and the shipped alerting rules that read them.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GATE_METRIC_NAMES, StewardMetrics } from '../../../src/observability/metrics.js';

type Series = { name: string; value: number; [label: string]: string | number };
const series = async (m: StewardMetrics, name: string): Promise<Series[]> =>
  (await m.registry.getSingleMetric(name)!.get()).values.map((v) => ({ name: (v as { metricName?: string }).metricName ?? name, ...(v.labels as Record<string, string | number>), value: v.value }));

const judged = (over: Record<string, unknown> = {}) => ({
  intent_id: 'CODE_FLOW_ANALYSIS', verdict: 'FAIL' as const, reason_codes: ['WRONG_ABSTRACTION_LEVEL', 'OVERLY_GENERIC', 'WRONG_ABSTRACTION_LEVEL'],
  judged_by: 'llm' as const, degraded: false, latency_ms: 1500, token_cost: 0.25, ...over,
});

describe('gate metrics', () => {
  it('gateJudged counts the result by intent and verdict, each distinct reason code once, LLM latency, degraded and token cost', async () => {
    const m = new StewardMetrics();
    m.gateJudged(judged());
    m.gateJudged(judged({ verdict: null, reason_codes: [], judged_by: 'llm', degraded: true, latency_ms: 10_000, token_cost: null }));
    m.gateJudged(judged({ intent_id: null, verdict: 'PASS', reason_codes: [], judged_by: 'patterns', latency_ms: 0 }));
    expect(await series(m, 'steward_gate_judge_results_total')).toEqual([
      { name: 'steward_gate_judge_results_total', intent: 'CODE_FLOW_ANALYSIS', verdict: 'FAIL', value: 1 },
      { name: 'steward_gate_judge_results_total', intent: 'CODE_FLOW_ANALYSIS', verdict: 'none', value: 1 },
      { name: 'steward_gate_judge_results_total', intent: 'none', verdict: 'PASS', value: 1 },
    ]);
    expect(await series(m, 'steward_gate_reason_codes_total')).toEqual([
      { name: 'steward_gate_reason_codes_total', intent: 'CODE_FLOW_ANALYSIS', code: 'WRONG_ABSTRACTION_LEVEL', value: 1 },
      { name: 'steward_gate_reason_codes_total', intent: 'CODE_FLOW_ANALYSIS', code: 'OVERLY_GENERIC', value: 1 },
    ]);
    const latency = await series(m, 'steward_gate_judge_latency_seconds');
    // Two LLM calls (1.5 s and 10 s); the patterns result is no judge call.
    expect(latency.find((v) => v.name === 'steward_gate_judge_latency_seconds_count')).toMatchObject({ intent: 'CODE_FLOW_ANALYSIS', value: 2 });
    expect(latency.find((v) => v.name === 'steward_gate_judge_latency_seconds_sum')).toMatchObject({ value: 11.5 });
    expect(latency.some((v) => v.intent === 'none')).toBe(false);
    expect(await series(m, 'steward_gate_degraded_total')).toEqual([{ name: 'steward_gate_degraded_total', intent: 'CODE_FLOW_ANALYSIS', value: 1 }]);
    // 0.25 from the first result and 0.25 from the third (intent none); the null cost adds nothing.
    expect(await series(m, 'steward_gate_token_cost_total')).toEqual([
      { name: 'steward_gate_token_cost_total', intent: 'CODE_FLOW_ANALYSIS', value: 0.25 },
      { name: 'steward_gate_token_cost_total', intent: 'none', value: 0.25 },
    ]);
  });

  it('gateOutcome counts the ended job (retried when num_retries >= 1) and observes its retries', async () => {
    const m = new StewardMetrics();
    m.gateOutcome({ intent_id: 'REPO_ORIENTATION', final_verdict: 'pass', action: 'finalize', num_retries: 0 });
    m.gateOutcome({ intent_id: 'REPO_ORIENTATION', final_verdict: 'pass', action: 'finalize', num_retries: 1 });
    m.gateOutcome({ intent_id: 'REPO_ORIENTATION', final_verdict: 'fail', action: 'finalize_with_limitations', num_retries: 2 });
    expect(await series(m, 'steward_gate_outcomes_total')).toEqual([
      { name: 'steward_gate_outcomes_total', intent: 'REPO_ORIENTATION', final_verdict: 'pass', action: 'finalize', retried: 'false', value: 1 },
      { name: 'steward_gate_outcomes_total', intent: 'REPO_ORIENTATION', final_verdict: 'pass', action: 'finalize', retried: 'true', value: 1 },
      { name: 'steward_gate_outcomes_total', intent: 'REPO_ORIENTATION', final_verdict: 'fail', action: 'finalize_with_limitations', retried: 'true', value: 1 },
    ]);
    const retries = await series(m, 'steward_gate_retries');
    // (0 + 1 + 2) / 3 jobs = 1 retry per job.
    expect(retries.find((v) => v.name === 'steward_gate_retries_sum')!.value).toBe(3);
    expect(retries.find((v) => v.name === 'steward_gate_retries_count')!.value).toBe(3);
    expect(retries.find((v) => v.name === 'steward_gate_retries_bucket' && v.le === 0)!.value).toBe(1);
  });

  it('gateOutcome with the ending it supersedes (D45): outcomes minus superseded counts the job once, at its latest ending', async () => {
    const m = new StewardMetrics();
    const blocked = { intent_id: 'REPO_ORIENTATION', final_verdict: 'fail' as const, action: 'block' as const, num_retries: 0 };
    m.gateOutcome(blocked);
    m.gateOutcome({ intent_id: 'REPO_ORIENTATION', final_verdict: 'pass', action: 'finalize', num_retries: 1 }, blocked);
    const value = (xs: Series[], name: string, labels: Record<string, string> = {}) => xs.filter((v) => v.name === name && Object.entries(labels).every(([k, x]) => v[k] === x)).reduce((a, v) => a + v.value, 0);
    const out = await series(m, 'steward_gate_outcomes_total');
    const sup = await series(m, 'steward_gate_outcomes_superseded_total');
    expect(value(out, 'steward_gate_outcomes_total') - value(sup, 'steward_gate_outcomes_superseded_total')).toBe(1);
    expect(value(out, 'steward_gate_outcomes_total', { action: 'block' }) - value(sup, 'steward_gate_outcomes_superseded_total', { action: 'block' })).toBe(0);
    expect(value(out, 'steward_gate_outcomes_total', { final_verdict: 'pass', retried: 'true' }) - value(sup, 'steward_gate_outcomes_superseded_total', { final_verdict: 'pass', retried: 'true' })).toBe(1);
    const r = await series(m, 'steward_gate_retries');
    const rs = await series(m, 'steward_gate_retries_superseded');
    expect(value(r, 'steward_gate_retries_sum') - value(rs, 'steward_gate_retries_superseded_sum')).toBe(1);
    expect(value(r, 'steward_gate_retries_count') - value(rs, 'steward_gate_retries_superseded_count')).toBe(1);
    // every counted series has its superseded twin (the rules subtract them), at 0 until something is superseded
    expect(sup.map((v) => [v.action, v.value])).toEqual([['block', 1], ['finalize', 0]]);
  });

  it('intent label values are bounded: past maxGateIntents new intents count as other', async () => {
    const m = new StewardMetrics({ maxGateIntents: 2 });
    for (const intent of ['A_ONE', 'B_TWO', 'C_THREE', 'A_ONE']) m.gateOutcome({ intent_id: intent, final_verdict: 'pass', action: 'finalize', num_retries: 0 });
    const intents = (await series(m, 'steward_gate_outcomes_total')).map((v) => [v.intent, v.value]);
    expect(intents).toEqual([['A_ONE', 2], ['B_TWO', 1], ['other', 1]]);
  });
});

describe('deploy/prometheus/gate-alerts.yml', () => {
  const doc = parse(readFileSync(new URL('../../../deploy/prometheus/gate-alerts.yml', import.meta.url), 'utf8')) as {
    groups: { name: string; rules: { alert: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[];
  };
  const rules = doc.groups.flatMap((g) => g.rules);

  it('is a rule file with the three alerts and their default thresholds', () => {
    expect(doc.groups).toHaveLength(1);
    expect(rules.map((r) => r.alert)).toEqual(['StewardGateWrongAbstractionLevelSpike', 'StewardGateReplanSuccessLow', 'StewardGateRetriesHigh']);
    const threshold = (r: { expr: string }) => /\)\s*([<>])\s*([\d.]+)\s*$/.exec(r.expr.trim())!.slice(1);
    expect(rules.map(threshold)).toEqual([['>', '0.15'], ['<', '0.5'], ['>', '1.3']]);
    for (const r of rules) {
      expect(r.expr.match(/\[(\w+)\]/g)!.every((w) => w === '[1h]'), r.alert).toBe(true);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      // Balanced parentheses (a cheap syntax check where promtool is not installed).
      let depth = 0;
      for (const ch of r.expr) {
        depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
        expect(depth).toBeGreaterThanOrEqual(0);
      }
      expect(depth, r.alert).toBe(0);
    }
  });

  it('names only metrics the registry exports, with label names they have', async () => {
    const m = new StewardMetrics();
    m.gateJudged(judged());
    m.gateOutcome({ intent_id: 'X', final_verdict: 'pass', action: 'finalize', num_retries: 1 });
    const exported = new Map<string, Set<string>>();
    for (const metric of await m.registry.getMetricsAsJSON()) {
      for (const v of (metric as unknown as { values: { metricName?: string; labels: Record<string, unknown> }[] }).values) {
        const name = v.metricName ?? metric.name;
        const labels = exported.get(name) ?? new Set<string>();
        for (const l of Object.keys(v.labels)) labels.add(l);
        exported.set(name, labels);
      }
    }
    for (const name of GATE_METRIC_NAMES) expect(m.registry.getSingleMetric(name), name).toBeDefined();
    for (const r of rules) {
      const refs = [...r.expr.matchAll(/\b(steward_[a-z_]+)(\{[^}]*\})?/g)];
      expect(refs.length, r.alert).toBeGreaterThan(0);
      for (const [, name, selector] of refs) {
        expect(exported.has(name), `${r.alert}: ${name}`).toBe(true);
        for (const [, label] of (selector ?? '').matchAll(/(\w+)\s*=/g)) expect(exported.get(name)!.has(label), `${r.alert}: ${name}{${label}}`).toBe(true);
      }
      for (const [, by] of r.expr.matchAll(/by \((\w+)\)/g)) expect(by).toBe('intent');
    }
  });

  // promtool (Prometheus' own checker; PROMTOOL=path, .tools/bin/promtool as .ci/run installs it, or on PATH) parses the
  // rules and runs deploy/prometheus/gate-alerts.test.yml: each alert fires for the intent over its threshold, not for
  // the one under it. Skipped on a machine without promtool, never in CI (CI=true), where .ci/run installs it.
  const local = fileURLToPath(new URL('../../../.tools/bin/promtool', import.meta.url));
  const promtool = process.env.PROMTOOL ?? (existsSync(local) ? local : spawnSync('promtool', ['--version']).status === 0 ? 'promtool' : undefined);
  it.skipIf(!promtool && process.env.CI !== 'true')('passes promtool check rules and the promtool unit tests', () => {
    if (!promtool) throw new Error('promtool not found (CI=true): .ci/run puts it in .tools/bin (PROMTOOL=path to use another)');
    const dir = fileURLToPath(new URL('../../../deploy/prometheus/', import.meta.url));
    expect(execFileSync(promtool!, ['check', 'rules', 'gate-alerts.yml'], { cwd: dir, encoding: 'utf8' })).toMatch(/SUCCESS: 3 rules found/);
    expect(execFileSync(promtool!, ['test', 'rules', 'gate-alerts.test.yml'], { cwd: dir, encoding: 'utf8' })).toMatch(/SUCCESS/);
  });
});
