/**
 * Applies the versioned ClickHouse migrations (migration-list.ts). Applied versions are recorded in
 * `schema_migrations` with a checksum so an edited, already-applied migration is refused rather than silently
 * diverging; every statement is idempotent, so an interrupted migration is re-run.
 */
import { createHash } from 'node:crypto';
import { StewardError } from '../../errors.js';
import { serverErrorCode, type ClickHouseStore } from './client.js';
import { MIGRATIONS, type Migration } from './migration-list.js';

export { MIGRATIONS, type Migration } from './migration-list.js';

export function migrationChecksum(m: Migration): string {
  return createHash('sha256').update(m.statements.map((s) => s.replace(/\s+/g, ' ').trim()).join(';\n')).digest('hex').slice(0, 16);
}

export interface MigrateResult {
  database: string;
  applied: number[];
  alreadyApplied: number[];
}

function render(sql: string, db: string): string {
  return sql.replace(/\{db\}/g, db);
}

export async function appliedMigrations(store: ClickHouseStore): Promise<Map<number, string>> {
  const rows = await store.query<{ version: number | string; checksum: string }>(
    `SELECT version, checksum FROM ${store.table('schema_migrations')} FINAL ORDER BY version`,
  );
  return new Map(rows.map((r) => [Number(r.version), r.checksum]));
}

/** Applies pending migrations (idempotent; safe to run concurrently from several instances). */
export async function migrate(store: ClickHouseStore, opts: { nowMs?: () => number; migrations?: Migration[] } = {}): Promise<MigrateResult> {
  const db = store.database;
  const migrations = opts.migrations ?? MIGRATIONS;
  const now = opts.nowMs ?? Date.now;
  await store.command(`CREATE DATABASE IF NOT EXISTS ${db}`);
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations (version UInt32, name String, checksum String, applied_at_ms UInt64)
     ENGINE = ReplacingMergeTree(applied_at_ms) ORDER BY version`,
  );
  const done = await appliedMigrations(store);
  const result: MigrateResult = { database: db, applied: [], alreadyApplied: [] };
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    const sum = migrationChecksum(m);
    const have = done.get(m.version);
    if (have !== undefined) {
      if (have !== sum)
        throw new StewardError('STEWARD_CLICKHOUSE', `migration ${m.version} (${m.name}) was changed after it was applied (checksum ${have} → ${sum})`);
      result.alreadyApplied.push(m.version);
      continue;
    }
    for (const s of m.statements) await store.command(render(s, db)).catch((e: unknown) => {
      // ILLEGAL_COLUMN "already exists": this ADD COLUMN ran before the migration was interrupted.
      if (!(/^\s*ALTER TABLE\b[\s\S]*\bADD COLUMN\b/i.test(s) && ((e as { details?: { server_code?: number } }).details?.server_code ?? serverErrorCode(e)) === 44 && /already exists/i.test(String((e as Error).message)))) throw e;
    });
    await store.insert('schema_migrations', [{ version: m.version, name: m.name, checksum: sum, applied_at_ms: now() }]);
    result.applied.push(m.version);
  }
  return result;
}
