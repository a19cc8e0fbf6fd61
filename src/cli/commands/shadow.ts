/**
 * `steward shadow report` (docs/rollout.md "Shadow evaluation"): what a shadow blueprint set would have
 * changed on live traffic, from ClickHouse (v_shadow_diffs): traces evaluated, changed decisions by
 * transition (active → shadow intervention) and by kind (intervention, stage, tripwires, rules, ctq), and a
 * few examples of each transition. The same summary `steward diff --traces` prints offline.
 *
 *   steward shadow report [--shadow-id ID] [--since TIME] [--examples N] [--json]
 *       [--config FILE] [--url URL] [--database DB]
 */
import { parseArgs } from 'node:util';
import { ClickHouseStore, sqlString } from '../../adapters/clickhouse/client.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { summarizeDiffs, type DiffSummary, type ShadowDiff } from '../../engine/rollout/diff.js';
import { StewardError } from '../../errors.js';
import { parseTime } from './debt.js';

export const USAGE = [
  'usage: steward shadow report [--shadow-id ID] [--since TIME] [--examples N] [--json]',
  '       (all: [--config FILE] [--url URL] [--database DB])',
].join('\n');

/** Human-readable summary (shared with `steward diff --traces`). */
export function formatSummary(s: DiffSummary, title: string): string {
  const out = [`${title}: ${s.traces} traces, ${s.changed} changed decisions${s.traces ? ` (${((100 * s.changed) / s.traces).toFixed(2)}%)` : ''}`];
  for (const [t, n] of Object.entries(s.byTransition).sort((a, b) => b[1] - a[1])) out.push(`  ${t}: ${n}`);
  if (Object.keys(s.byKind).length) out.push(`  by kind: ${Object.entries(s.byKind).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  for (const e of s.examples)
    out.push(`  e.g. ${e.trace_id} (${e.agent_id}): ${e.active_intervention} → ${e.shadow_intervention}; tripwires ${e.active_tripwires_fired.join(',') || '-'} → ${e.shadow_tripwires_fired.join(',') || '-'}; rules ${e.active_rules_failed.join(',') || '-'} → ${e.shadow_rules_failed.join(',') || '-'}`);
  return out.join('\n');
}

export async function run(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { 'shadow-id': { type: 'string' }, since: { type: 'string' }, examples: { type: 'string' }, json: { type: 'boolean' }, config: { type: 'string' }, url: { type: 'string' }, database: { type: 'string' } },
  });
  if (positionals.length !== 1 || positionals[0] !== 'report') throw new StewardError('STEWARD_USAGE', USAGE);
  const cfg = loadStewardConfig(v.config);
  const store = new ClickHouseStore({ ...cfg.clickhouse, url: v.url ?? cfg.clickhouse.url, database: v.database ?? cfg.clickhouse.database });
  const examples = v.examples === undefined ? 3 : Number(v.examples);
  if (!Number.isInteger(examples) || examples < 0) throw new StewardError('STEWARD_USAGE', `--examples must be a whole number: ${v.examples}`);
  try {
    const where = [v['shadow-id'] !== undefined ? `shadow_id = ${sqlString(v['shadow-id'])}` : '1', v.since !== undefined ? `event_time_ms >= ${parseTime(v.since, Date.now())}` : '1'].join(' AND ');
    // Per shadow run: counts in SQL; the changed rows' JSON for transitions and examples (changed rows only).
    const runs = await store.query<{ shadow_id: string; traces: string }>(`SELECT shadow_id, count() AS traces FROM ${store.table('v_shadow_diffs')} WHERE ${where} GROUP BY shadow_id ORDER BY shadow_id`);
    if (runs.length === 0) process.stdout.write(v.json ? '' : 'no shadow diffs\n');
    for (const r of runs) {
      const rows = await store.query<{ diff_json: string }>(
        `SELECT diff_json FROM ${store.table('v_shadow_diffs')} WHERE ${where} AND shadow_id = ${sqlString(r.shadow_id)} AND changed = 1 ORDER BY event_time_ms, trace_id`,
      );
      const s = summarizeDiffs(rows.map((x) => JSON.parse(x.diff_json) as ShadowDiff), examples);
      s.traces = Number(r.traces);
      if (v.json) process.stdout.write(JSON.stringify({ shadow_id: r.shadow_id, ...s }) + '\n');
      else process.stdout.write(formatSummary(s, `shadow ${r.shadow_id}`) + '\n');
    }
    return 0;
  } finally {
    await store.close();
  }
}
