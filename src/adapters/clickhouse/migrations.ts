/**
 * Versioned ClickHouse migrations. Every statement is idempotent (IF NOT EXISTS), so a migration interrupted
 * half way is simply re-run; applied versions are recorded in `schema_migrations` with a checksum so an
 * edited, already-applied migration is refused rather than silently diverging.
 *
 * SQL must run on ClickHouse 18.16 (Debian) and on current releases: new MergeTree syntax only; no
 * LowCardinality, DateTime64, Map, JSON type, TTL or async_insert; times are UInt64 epoch milliseconds.
 * `{db}` is replaced by the (validated) database name.
 */
import { createHash } from 'node:crypto';
import { StewardError } from '../../errors.js';
import type { ClickHouseStore } from './client.js';

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

const MONTH = (col: string) => `toYYYYMM(toDateTime(intDiv(${col}, 1000)))`;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'core tables',
    statements: [
      // Deduplicated by trace_id (the ORDER BY key); the partition key is a function of the row's own
      // event time, so a redelivered copy lands in the same partition and merges away.
      `CREATE TABLE IF NOT EXISTS {db}.decisions (
        trace_id String, agent_id String, tenant String, blueprint String,
        intervention String, approved UInt8, stage String, halted UInt8, severity String,
        reasons Array(String), tripwires_fired Array(String), rules_failed Array(String),
        tripwires_json String, rules_json String,
        latency_ms Float64, event_time_ms UInt64, decided_at_ms UInt64,
        hook String, tool String, session_id String, engine_version String, fallback UInt8,
        ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('event_time_ms')}
      ORDER BY (tenant, agent_id, trace_id)`,
      `CREATE TABLE IF NOT EXISTS {db}.verdicts (
        trace_id String, agent_id String, tenant String, blueprint String,
        intervention String, approved UInt8, stage String,
        ctq Nullable(Float64), risk Nullable(Float64), confidence Float64,
        policy_violations Array(String),
        metric_names Array(String), metric_scores Array(Nullable(Float64)), metric_statuses Array(String),
        metrics_json String, verdict_json String, signature String,
        event_time_ms UInt64, scored_at_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('event_time_ms')}
      ORDER BY (tenant, agent_id, trace_id)`,
      `CREATE TABLE IF NOT EXISTS {db}.trust_debt_events (
        event_id String, tenant String, agent_id String, ts_ms UInt64, cause String,
        before Float64, after Float64, level String, previous_level String, crossings Array(String),
        trace_id String, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, agent_id, ts_ms, event_id)`,
      // The ledger is an audit log: plain MergeTree so no row is ever replaced by a merge; the verifier
      // collapses exact (redelivered) copies and reports any other row claiming the same seq.
      `CREATE TABLE IF NOT EXISTS {db}.ledger (
        entry_id String, agent_id String, tenant String, seq UInt64, ts_ms UInt64, type String,
        payload String, prev_hash String, hash String, signature String, kid String, ingested_at_ms UInt64
      ) ENGINE = MergeTree()
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (agent_id, seq)`,
      // One row per failed source record and stage: a record dead-lettered again after a redelivery is the
      // same failure. Partitioned by the source record's time, which every copy shares.
      `CREATE TABLE IF NOT EXISTS {db}.dlq_events (
        dlq_topic String, dlq_partition UInt32, dlq_offset UInt64,
        source_topic String, source_partition Int32, source_offset String, source_ts_ms UInt64, stage String,
        code String, message String, failed_at_ms UInt64, key String, value_bytes UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('source_ts_ms')}
      ORDER BY (source_topic, source_partition, source_offset, stage)`,
      `CREATE TABLE IF NOT EXISTS {db}.gate_events (
        trace_id String, agent_id String, tenant String, intervention String, approved UInt8,
        ts_ms UInt64, payload String, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, agent_id, trace_id)`,
    ],
  },
  {
    version: 2,
    name: 'deduplicated analyst views',
    // Analysts query v_*: FINAL collapses redelivered copies at read time, so counts are right before
    // background merges run (ReplacingMergeTree alone only converges eventually).
    statements: ['decisions', 'verdicts', 'trust_debt_events', 'dlq_events', 'gate_events'].map(
      (t) => `CREATE VIEW IF NOT EXISTS {db}.v_${t} AS SELECT * FROM {db}.${t} FINAL`,
    ),
  },
  {
    version: 3,
    name: 'final outcome per trace',
    // The verdict carries the final intervention (tripwires, rules and CTQ); a trace halted by a tripwire
    // never gets one, so its decision is final. Unmatched LEFT JOIN strings are '' on every version.
    statements: [
      `CREATE VIEW IF NOT EXISTS {db}.v_outcomes AS
       SELECT trace_id, agent_id, tenant, blueprint, event_time_ms, stage AS decision_stage, intervention AS decision_intervention,
              latency_ms, v_intervention, v_stage, ctq, risk,
              if(v_intervention = '', intervention, v_intervention) AS final_intervention
       FROM (SELECT trace_id, agent_id, tenant, blueprint, event_time_ms, stage, intervention, latency_ms FROM {db}.decisions FINAL)
       ANY LEFT JOIN (SELECT trace_id, intervention AS v_intervention, stage AS v_stage, ctq, risk FROM {db}.verdicts FINAL) USING trace_id`,
    ],
  },
  {
    version: 4,
    name: 'ledger entry ids',
    // The ledger writer's "already stored?" index (ledger-store.ts): keyed by (agent_id, entry_id), so the
    // per-batch lookup reads a few small granules per agent and part instead of every entry of the batch's
    // agents. Written by the writer after the entries, checked against the ledger whenever it loads a head.
    statements: [
      `CREATE TABLE IF NOT EXISTS {db}.ledger_ids (agent_id String, entry_id String, seq UInt64)
       ENGINE = ReplacingMergeTree() ORDER BY (agent_id, entry_id) SETTINGS index_granularity = 1024`,
    ],
  },
];

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
    for (const s of m.statements) await store.command(render(s, db));
    await store.insert('schema_migrations', [{ version: m.version, name: m.name, checksum: sum, applied_at_ms: now() }]);
    result.applied.push(m.version);
  }
  return result;
}
