/**
 * `steward report [NAME|all] [--since-hours H] [--limit N] [--json] [--config FILE] [--url URL] [--database DB]`
 * Prints the analyst reports (docs/analytics.md) as terminal tables; `steward report --list` names them.
 * `steward report gate [--window 1h] [--far-away-max 0.15] [--replan-min 0.5] [--retries-max 1.3] [--now T]`
 * prints the finalization gate's six panels and its three alert states (docs/analytics.md "Finalization gate").
 */
import { parseArgs } from 'node:util';
import { DEFAULT_GATE_THRESHOLDS, REPORTS, formatGateReport, formatTable, gateReport, reportByName, runReport } from '../../adapters/clickhouse/reports.js';
import { StewardError } from '../../errors.js';
import { CLICKHOUSE_OPTIONS, clickhouseStoreFromArgs } from './migrate.js';

export const USAGE =
  'usage: steward report [NAME|all] [--since-hours H] [--limit N] [--json] [--list] [--database DB] [--url URL]\n' +
  '       steward report gate [--window 1h] [--far-away-max 0.15] [--replan-min 0.5] [--retries-max 1.3] [--now ISO|MS] [--since-hours 24] [--limit N] [--json]';

const GATE_OPTIONS = {
  window: { type: 'string' },
  'far-away-max': { type: 'string' },
  'replan-min': { type: 'string' },
  'retries-max': { type: 'string' },
  now: { type: 'string' },
} as const;

/** `90s`, `30m`, `1h`, `2d` (or plain milliseconds) → ms. */
export function parseWindow(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  const ms = m ? Math.round(Number(m[1]) * (units[m[2] ?? 'ms'] ?? Number.NaN)) : Number.NaN;
  if (!(ms > 0)) throw new StewardError('STEWARD_USAGE', `--window must be a duration like 30m, 1h or 2d, got '${text}'\n${USAGE}`);
  return ms;
}

function threshold(v: string | undefined, flag: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new StewardError('STEWARD_USAGE', `${flag} must be a non-negative number, got '${v}'\n${USAGE}`);
  return n;
}

function parseNow(v: string | undefined): number {
  if (v === undefined) return Date.now();
  const n = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(n)) throw new StewardError('STEWARD_USAGE', `--now must be an ISO time or epoch milliseconds, got '${v}'\n${USAGE}`);
  return n;
}

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...CLICKHOUSE_OPTIONS, ...GATE_OPTIONS, 'since-hours': { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' }, list: { type: 'boolean' } },
    });
  } catch (e) {
    throw new StewardError('STEWARD_USAGE', `${(e as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.list) {
    for (const r of REPORTS) process.stdout.write(`${r.name.padEnd(28)} ${r.title}\n`);
    process.stdout.write(`${'gate'.padEnd(28)} Finalization gate: the six panels and the alert states\n`);
    return 0;
  }
  const name = positionals[0] ?? 'all';
  if (name === 'gate') return runGate(values);
  const gateOnly = Object.keys(GATE_OPTIONS).find((k) => values[k as keyof typeof GATE_OPTIONS] !== undefined);
  if (gateOnly) throw new StewardError('STEWARD_USAGE', `--${gateOnly} is an option of 'steward report gate'\n${USAGE}`);
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

async function runGate(values: Record<string, string | boolean | undefined>): Promise<number> {
  const str = (k: string) => values[k] as string | undefined;
  const nowMs = parseNow(str('now'));
  const windowMs = parseWindow(str('window') ?? '1h');
  const hours = str('since-hours') === undefined ? 24 : Number(str('since-hours'));
  const limit = str('limit') === undefined ? 50 : Number(str('limit'));
  if (!(hours > 0) || !(limit >= 1)) throw new StewardError('STEWARD_USAGE', `--since-hours and --limit must be positive\n${USAGE}`);
  const opts = {
    nowMs,
    windowMs,
    sinceMs: nowMs - hours * 3_600_000,
    limit,
    farAwayMax: threshold(str('far-away-max'), '--far-away-max', DEFAULT_GATE_THRESHOLDS.farAwayMax),
    replanMin: threshold(str('replan-min'), '--replan-min', DEFAULT_GATE_THRESHOLDS.replanMin),
    retriesMax: threshold(str('retries-max'), '--retries-max', DEFAULT_GATE_THRESHOLDS.retriesMax),
  };
  const store = clickhouseStoreFromArgs(values as Parameters<typeof clickhouseStoreFromArgs>[0]);
  try {
    const report = await gateReport(store, opts);
    // Alert states are information: the command succeeds whether or not any fires.
    process.stdout.write(values.json ? `${JSON.stringify({ report: 'gate', ...report })}\n` : formatGateReport(report));
    return 0;
  } finally {
    await store.close();
  }
}
