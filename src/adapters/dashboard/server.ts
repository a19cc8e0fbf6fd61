/**
 * The dashboard's HTTP server (docs/dashboard.md): one page, uPlot served from node_modules (no CDN: the
 * page works without internet; the Content-Security-Policy allows only this origin), and the JSON API the
 * page polls. Read-only: only GET routes, and every ClickHouse statement carries readonly=1
 * (read-only-store.ts). Loopback by default, and only requests naming one of its own hosts are answered.
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { StewardError } from '../../errors.js';
import type { RetierRequest } from '../../engine/trust-debt/index.js';
import type { ClickHouseStore } from '../clickhouse/client.js';
import { loadPanels, type ClickHousePanels } from './data.js';
import { PanelCache } from './panel-cache.js';
import { PAGE_HTML } from './page-html.js';
import { PAGE_SCRIPT } from './page-script.js';
import { DIMENSION_NAMES, sqlFor } from './panel-sql.js';
import { allowedHostNames, hostHeaderName, parseChoice, parseLimit, parseMs, parseRange, parseText } from './params.js';
import { pointTraces, traceStory } from './trace-story.js';

export interface DashboardServerOptions {
  store: ClickHouseStore;
  host?: string;
  port?: number;
  /** Trusted ledger keys (kid → key) for the trace story's verification status; without them: hash only. */
  ledgerKeys?: Map<string, KeyObject>;
  retierQueue?: () => Promise<RetierRequest[]>;
  /** The page's refresh interval (ms, default 10 000). */
  refreshMs?: number;
  gateWindowMs?: number;
  /**
   * Keep the ClickHouse panels per request and data fingerprint for up to one refresh interval (panel-cache.ts;
   * default on). Off: every load reads the raw rows (the benchmark's cold measure).
   */
  panelCache?: boolean;
  /**
   * Host header names accepted besides localhost, 127.0.0.1, ::1 and `host` (dashboard.allowed_hosts): a request
   * naming any other host is refused with 403, so a page on another site cannot rebind its name to this address
   * and read the API with the browser's help.
   */
  allowedHosts?: readonly string[];
  now?: () => number;
}

/** uPlot's browser build and stylesheet, read once from the installed package. */
function uplotAssets(): { js: string; css: string } {
  const dist = dirname(createRequire(import.meta.url).resolve('uplot'));
  return { js: readFileSync(join(dist, 'uPlot.iife.min.js'), 'utf8'), css: readFileSync(join(dist, 'uPlot.min.css'), 'utf8') };
}

const CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

export class DashboardServer {
  readonly app: FastifyInstance;
  private readonly now: () => number;
  /** The ClickHouse panels kept per request and data fingerprint (undefined when `panelCache: false`). */
  readonly panelCache: PanelCache<ClickHousePanels> | undefined;

  constructor(private readonly opts: DashboardServerOptions) {
    this.now = opts.now ?? Date.now;
    const refreshMs = Math.max(1000, Math.trunc(opts.refreshMs ?? 10_000));
    this.panelCache = opts.panelCache === false ? undefined : new PanelCache({ ttlMs: refreshMs, now: this.now });
    // Trace ids may be 256 characters (docs/security.md); Fastify's default caps a path parameter at 100.
    this.app = Fastify({ logger: false, routerOptions: { maxParamLength: 1024 } });
    const uplot = uplotAssets();
    const html = PAGE_HTML.replace('__REFRESH_MS__', String(refreshMs));
    this.app.addHook('onSend', async (_req, reply, payload) => {
      reply.header('Content-Security-Policy', CSP);
      reply.header('X-Content-Type-Options', 'nosniff');
      reply.header('Cache-Control', 'no-store');
      return payload;
    });
    // DNS rebinding: the dashboard has no login (loopback is its boundary), and a browser sends the attacker's
    // name in Host after rebinding it to 127.0.0.1 — so only our own names get an answer.
    const hosts = allowedHostNames(opts.host, opts.allowedHosts);
    this.app.addHook('onRequest', async (req, reply) => {
      const name = hostHeaderName(req.headers.host);
      if (name !== undefined && hosts.has(name)) return;
      reply
        .status(403)
        .type('application/json; charset=utf-8')
        .send({ error: 'STEWARD_DASHBOARD_HOST', message: `dashboard: Host ${JSON.stringify(req.headers.host ?? '')} is not one of this dashboard's names; add it to dashboard.allowed_hosts if it is` });
      return reply;
    });
    this.app.setErrorHandler((err, _req, reply) => fail(reply, err));
    this.app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').send(html));
    this.app.get('/assets/uPlot.iife.min.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(uplot.js));
    this.app.get('/assets/uPlot.min.css', async (_req, reply) => reply.type('text/css; charset=utf-8').send(uplot.css));
    this.app.get('/assets/dashboard.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(PAGE_SCRIPT));
    this.app.get('/favicon.ico', async (_req, reply) => reply.status(204).send());
    this.app.get('/api/health', async () => ({ ok: await opts.store.ping() }));
    this.app.get('/api/extent', async () => {
      const [x] = await opts.store.query<{ min_ms: string; max_ms: string; n: string }>(sqlFor(opts.store.database).extent());
      return { min_ms: Number(x?.min_ms ?? 0), max_ms: Number(x?.max_ms ?? 0), decisions: Number(x?.n ?? 0) };
    });
    this.app.get('/api/panels', async (req) => {
      const q = req.query as Record<string, unknown>;
      return loadPanels({ store: opts.store, retierQueue: opts.retierQueue, gateWindowMs: opts.gateWindowMs, cache: this.panelCache }, parseRange(q, this.now()), this.now());
    });
    this.app.get('/api/points', async (req) => {
      const q = req.query as Record<string, unknown>;
      const r = parseRange(q, this.now());
      const dim = parseChoice(q.dim, 'dim', DIMENSION_NAMES);
      const key = parseText(q.key, 'key');
      const t = parseMs(q.t, 't', Number.NaN);
      if (Number.isNaN(t)) throw new StewardError('STEWARD_USAGE', 'dashboard: t (the bucket start, epoch ms) is required');
      return { dim, key, t, bucket_ms: r.bucketMs, traces: await pointTraces(opts.store, r, dim, key, t, parseLimit(q.limit, 100)) };
    });
    this.app.get('/api/trace/:id', async (req) => traceStory(opts.store, parseText((req.params as { id?: string }).id, 'trace id'), opts.ledgerKeys));
  }

  /** Starts listening; resolves to the bound port. */
  async listen(): Promise<number> {
    await this.app.listen({ host: this.opts.host ?? '127.0.0.1', port: this.opts.port ?? 0 });
    return (this.app.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    await this.app.close();
  }
}

function fail(reply: FastifyReply, err: unknown): FastifyReply {
  const e = err instanceof StewardError ? err : undefined;
  const status = e?.code === 'STEWARD_USAGE' ? 400 : (err as { statusCode?: number }).statusCode && (err as { statusCode: number }).statusCode < 500 ? (err as { statusCode: number }).statusCode : 502;
  return reply.status(status).type('application/json; charset=utf-8').send({ error: e?.code ?? 'STEWARD_DASHBOARD', message: (err as Error).message ?? String(err) });
}
