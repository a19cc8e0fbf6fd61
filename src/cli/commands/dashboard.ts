/**
 * `steward dashboard [--host 127.0.0.1] [--port 8790] [--refresh 10] [--keys FILE|DIR]... [--no-redis]
 *  [--redis URL] [--prefix P] [--gate-window 1h] [--config FILE] [--url URL] [--database DB]`
 * Serves the analyst dashboard (docs/dashboard.md): a live page over the ClickHouse views, read-only
 * (readonly=1 on every statement; point --url at a read-only profile user), loopback unless --host says
 * otherwise. Runs until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import type { KeyObject } from 'node:crypto';
import { loadPublicKeys } from '../../adapters/clickhouse/ledger-keys.js';
import { ReadOnlyClickHouseStore } from '../../adapters/dashboard/read-only-store.js';
import { DashboardServer } from '../../adapters/dashboard/server.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';
import { CLICKHOUSE_OPTIONS } from './migrate.js';
import { parseWindow } from './report.js';
import { retierQueueSource } from '../../process/dashboard.js';

export const USAGE =
  'usage: steward dashboard [--host 127.0.0.1] [--port 8790] [--refresh SECONDS] [--keys FILE|DIR]... [--gate-window 1h]\n' +
  '                         [--redis URL] [--prefix P] [--no-redis] [--config FILE] [--url URL] [--database DB]';

const OPTIONS = {
  ...CLICKHOUSE_OPTIONS,
  host: { type: 'string' },
  port: { type: 'string' },
  refresh: { type: 'string' },
  keys: { type: 'string', multiple: true },
  'gate-window': { type: 'string' },
  redis: { type: 'string' },
  prefix: { type: 'string' },
  'no-redis': { type: 'boolean' },
} as const;

function usage(message: string): StewardError {
  return new StewardError('STEWARD_USAGE', `${message}\n${USAGE}`);
}

/** --keys, else STEWARD_LEDGER_PUBLIC_KEYS, else the signing key's public half (as `steward ledger verify`); none: hash-only status. */
function ledgerKeys(keys: string[] | undefined, cfg: ReturnType<typeof loadStewardConfig>): Map<string, KeyObject> | undefined {
  if (keys && keys.length > 0) return loadPublicKeys(keys);
  const env = process.env.STEWARD_LEDGER_PUBLIC_KEYS;
  if (env) return loadPublicKeys(env.split(':').filter(Boolean));
  const key = (cfg.ledgerSigning ?? cfg.signing)?.key;
  return key ? loadPublicKeys([key]) : undefined;
}

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS }));
  } catch (e) {
    throw usage((e as Error).message);
  }
  const port = values.port === undefined ? 8790 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw usage(`--port must be a port number, got '${values.port}'`);
  const refresh = values.refresh === undefined ? 10 : Number(values.refresh);
  if (!Number.isFinite(refresh) || refresh < 1) throw usage(`--refresh must be at least 1 (seconds), got '${values.refresh}'`);
  const gateWindowMs = values['gate-window'] === undefined ? undefined : parseWindow(values['gate-window']);
  const cfg = loadStewardConfig(values.config);
  const store = new ReadOnlyClickHouseStore({ ...cfg.clickhouse, url: values.url ?? cfg.clickhouse.url, database: values.database ?? cfg.clickhouse.database });
  // The deployment's Redis (a Cluster when redis.cluster_nodes is set: every master's re-tiering queues), unless
  // --redis names one server; none with --no-redis.
  const retier = values['no-redis'] ? undefined : retierQueueSource(cfg, { redisUrl: values.redis, prefix: values.prefix });
  const server = new DashboardServer({
    store,
    host: values.host ?? '127.0.0.1',
    port,
    refreshMs: refresh * 1000,
    // Host names besides loopback and --host (dashboard.allowed_hosts / STEWARD_DASHBOARD_ALLOWED_HOSTS).
    allowedHosts: cfg.dashboard.allowedHosts,
    gateWindowMs,
    ledgerKeys: ledgerKeys(values.keys, cfg),
    retierQueue: retier?.retierQueue,
  });
  const bound = await server.listen();
  // A wildcard bind is no name the Host check answers: print a loopback URL that works.
  const shown = values.host === undefined || values.host === '0.0.0.0' || values.host === '::' ? '127.0.0.1' : values.host.includes(':') ? `[${values.host}]` : values.host;
  process.stdout.write(`steward dashboard on http://${shown}:${bound}/ (ClickHouse ${store.database}, read-only)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
  await store.close();
  retier?.close();
  return 0;
}
