/**
 * /metrics (Prometheus text), /healthz (process alive) and /readyz (every component reported ready: the
 * stages joined their groups, Redis connected) on node:http. Components report through `setReady`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StewardMetrics } from './metrics.js';

export class ObservabilityServer {
  private server?: Server;
  private readonly ready = new Map<string, boolean>();

  constructor(private readonly metrics: StewardMetrics) {}

  setReady(component: string, ready: boolean): void {
    this.ready.set(component, ready);
  }

  isReady(): boolean {
    return this.ready.size > 0 && [...this.ready.values()].every(Boolean);
  }

  async listen(port: number, host = '127.0.0.1'): Promise<number> {
    this.server = createServer((req, res) => {
      const url = (req.url ?? '/').split('?')[0];
      if (url === '/metrics') {
        this.metrics.registry.metrics().then(
          (body) => {
            res.writeHead(200, { 'content-type': this.metrics.registry.contentType });
            res.end(body);
          },
          (e: unknown) => {
            res.writeHead(500);
            res.end(String(e));
          },
        );
      } else if (url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'ok' }));
      } else if (url === '/readyz') {
        const ok = this.isReady();
        res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: ok ? 'ready' : 'not_ready', components: Object.fromEntries(this.ready) }));
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    const server = this.server;
    this.server = undefined;
    const closed = new Promise<void>((r) => server.close(() => r()));
    // Keep-alive scrapers must not hold the shutdown open.
    server.closeAllConnections();
    await closed;
  }
}
