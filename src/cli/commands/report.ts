/**
 * `steward report [NAME|all] [--since-hours H] [--limit N] [--json] [--config FILE] [--url URL] [--database DB]`
 * Prints the analyst reports (docs/analytics.md) as terminal tables; `steward report --list` names them.
 */
import { parseArgs } from 'node:util';
import { REPORTS, formatTable, reportByName, runReport } from '../../adapters/clickhouse/reports.js';
import { StewardError } from '../../errors.js';
import { CLICKHOUSE_OPTIONS, clickhouseStoreFromArgs } from './migrate.js';

export const USAGE = 'usage: steward report [NAME|all] [--since-hours H] [--limit N] [--json] [--list] [--database DB] [--url URL]';

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...CLICKHOUSE_OPTIONS, 'since-hours': { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' }, list: { type: 'boolean' } },
    });
  } catch (e) {
    throw new StewardError('STEWARD_USAGE', `${(e as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.list) {
    for (const r of REPORTS) process.stdout.write(`${r.name.padEnd(28)} ${r.title}\n`);
    return 0;
  }
  const name = positionals[0] ?? 'all';
  const names = name === 'all' ? REPORTS.map((r) => r.name) : [reportByName(name).name];
  const hours = values['since-hours'] === undefined ? undefined : Number(values['since-hours']);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if ((hours !== undefined && !(hours > 0)) || !(limit >= 1)) throw new StewardError('STEWARD_USAGE', `--since-hours and --limit must be positive\n${USAGE}`);
  const store = clickhouseStoreFromArgs(values);
  try {
    for (const n of names) {
      const rows = await runReport(store, n, { sinceMs: hours === undefined ? 0 : Date.now() - hours * 3_600_000, limit });
      if (values.json) process.stdout.write(JSON.stringify({ report: n, rows }) + '\n');
      else process.stdout.write(`== ${reportByName(n).title}\n${formatTable(rows)}\n\n`);
    }
    return 0;
  } finally {
    await store.close();
  }
}
