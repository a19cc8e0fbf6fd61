// Proxies the fault tests put in front of a real service, with a switch the test flips:
// - HttpFaultProxy: forwards HTTP requests to a target, or answers them itself (a proxy's 502 page, 413, 400
//   without a ClickHouse code, a connection reset) as `decide(request)` says.
// - TcpFaultProxy: forwards bytes both ways, with an added delay per chunk (a slow Redis) or with new
//   connections refused and open ones cut (an outage).
import http from 'node:http';
import net from 'node:net';

/** `forwardThen`: the request reaches the target, but the client gets this answer instead of the target's. */
export type HttpAnswer = 'pass' | 'reset' | { status: number; body: string; headers?: Record<string, string> } | { forwardThen: { status: number; body: string } };

export interface SeenRequest {
  method: string;
  url: string;
  body: Buffer;
}

export class HttpFaultProxy {
  /** What to do with each request; the default forwards it. */
  decide: (r: SeenRequest) => HttpAnswer = () => 'pass';
  readonly answered: { status: number | 'reset' | 'pass' }[] = [];
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<HttpFaultProxy> {
    const t = new URL(target);
    const agent = new http.Agent({ keepAlive: true });
    const ref: { self?: HttpFaultProxy } = {};
    const server = http.createServer((req, res) => {
      const self = ref.self;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const seen = { method: req.method ?? 'GET', url: req.url ?? '/', body: Buffer.concat(chunks) };
        const answer = self!.decide(seen);
        if (answer === 'reset') {
          self!.answered.push({ status: 'reset' });
          req.socket.destroy();
          return;
        }
        if (answer !== 'pass' && !('forwardThen' in answer)) {
          self!.answered.push({ status: answer.status });
          res.writeHead(answer.status, { 'content-type': 'text/html', ...answer.headers });
          res.end(answer.body);
          return;
        }
        const replaced = answer === 'pass' ? undefined : answer.forwardThen;
        self!.answered.push({ status: replaced ? replaced.status : 'pass' });
        const headers = { ...req.headers, host: t.host };
        delete headers['content-length'];
        const up = http.request({ hostname: t.hostname, port: t.port, path: seen.url, method: seen.method, headers: { ...headers, 'content-length': String(seen.body.length) }, agent }, (ur) => {
          if (replaced) {
            ur.resume();
            ur.on('end', () => {
              res.writeHead(replaced.status, { 'content-type': 'text/html' });
              res.end(replaced.body);
            });
            return;
          }
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          ur.pipe(res);
        });
        up.on('error', () => req.socket.destroy());
        up.end(seen.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const self = new HttpFaultProxy(server, `http://127.0.0.1:${port}${t.pathname === '/' ? '' : t.pathname}`);
    ref.self = self;
    server.on('close', () => agent.destroy());
    return self;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

export class TcpFaultProxy {
  /** Milliseconds each chunk waits before it is passed on (both directions). */
  delayMs = 0;
  private down = false;
  private readonly sockets = new Set<net.Socket>();
  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpFaultProxy> {
    const ref: { self?: TcpFaultProxy } = {};
    const server = net.createServer((client) => {
      const self = ref.self;
      if (self!.down) {
        client.destroy();
        return;
      }
      const upstream = net.connect(targetPort, targetHost);
      self!.track(client);
      self!.track(upstream);
      // Chunks leave in the order they came, each no earlier than its delay: a timer per chunk let a chunk that came
      // after delayMs was lowered overtake the ones still waiting, which reordered the byte stream (Redis replies
      // then reached the wrong commands: ioredis matches them by order).
      const pipe = (from: net.Socket, to: net.Socket) => {
        const queue: { at: number; c: Buffer }[] = [];
        let timer: NodeJS.Timeout | undefined;
        const drain = () => {
          timer = undefined;
          const now = Date.now();
          while (queue.length > 0 && queue[0]!.at <= now) {
            const { c } = queue.shift()!;
            if (to.writable) to.write(c);
          }
          if (queue.length > 0) timer = setTimeout(drain, queue[0]!.at - now);
        };
        from.on('data', (c: Buffer) => {
          const d = self!.delayMs;
          if (d <= 0 && queue.length === 0) {
            to.write(c);
            return;
          }
          queue.push({ at: Math.max(Date.now() + Math.max(d, 0), queue.at(-1)?.at ?? 0), c });
          if (!timer) timer = setTimeout(drain, queue[0]!.at - Date.now());
        });
        from.on('close', () => to.destroy());
        from.on('error', () => to.destroy());
      };
      pipe(client, upstream);
      pipe(upstream, client);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const self = new TcpFaultProxy(server, (server.address() as net.AddressInfo).port);
    ref.self = self;
    return self;
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
  }

  /** Refuses new connections and cuts the open ones (true), or serves again (false). */
  setDown(down: boolean): void {
    this.down = down;
    if (down) for (const s of this.sockets) s.destroy();
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }
}
