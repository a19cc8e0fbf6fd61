/**
 * `steward migrate [--config FILE] [--url URL] [--database DB] [--status]`
 * Applies the ClickHouse migrations (idempotent) and prints what was applied; --status only lists them.
 */
import { parseArgs } from 'node:util';
import { ClickHouseStore } from '../../adapters/clickhouse/client.js';
import { MIGRATIONS, appliedMigrations, migrate } from '../../adapters/clickhouse/migrations.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';

export const USAGE = 'usage: steward migrate [--config FILE] [--url URL] [--database DB] [--status]';

export function clickhouseStoreFromArgs(values: { config?: string; url?: string; database?: string }): ClickHouseStore {
  const cfg = loadStewardConfig(values.config);
  return new ClickHouseStore({
    ...cfg.clickhouse,
    url: values.url ?? cfg.clickhouse.url,
    database: values.database ?? cfg.clickhouse.database,
  });
}

export const CLICKHOUSE_OPTIONS = { config: { type: 'string' }, url: { type: 'string' }, database: { type: 'string' } } as const;

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...CLICKHOUSE_OPTIONS, status: { type: 'boolean' } } }));
  } catch (e) {
    throw new StewardError('STEWARD_USAGE', `${(e as Error).message}\nusage: steward migrate [--config FILE] [--url URL] [--database DB] [--status]`);
  }
  const store = clickhouseStoreFromArgs(values);
  try {
    if (values.status) {
      const done = await appliedMigrations(store).catch(() => new Map<number, string>());
      for (const m of MIGRATIONS) process.stdout.write(`${m.version}\t${done.has(m.version) ? 'applied' : 'pending'}\t${m.name}\n`);
      return 0;
    }
    const r = await migrate(store);
    for (const v of r.applied) process.stdout.write(`applied ${v}\t${MIGRATIONS.find((m) => m.version === v)?.name ?? ''}\n`);
    process.stdout.write(`database ${r.database}: ${r.applied.length} applied, ${r.alreadyApplied.length} already applied\n`);
    return 0;
  } finally {
    await store.close();
  }
}
