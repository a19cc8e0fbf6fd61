/**
 * The one allowed stand-in: a real node:http server speaking the OpenAI chat-completions wire protocol
 * (POST /v1/chat/completions) and Anthropic messages (POST /v1/messages). Tests script each answer:
 * a fixed score, a delay, an HTTP status, a malformed JSON body, or non-JSON content.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Token usage the answer reports, in each protocol's own fields (default 1 in, 1 out); null: no `usage` at all. */
export type ScriptedUsage = { input: number; output: number; cacheRead?: number } | null;

export type Behaviour =
  | { kind: 'score'; score: number; explanation?: string; delayMs?: number; usage?: ScriptedUsage }
  | { kind: 'content'; content: string; delayMs?: number; usage?: ScriptedUsage }
  | { kind: 'status'; status: number; body?: string; delayMs?: number }
  | { kind: 'malformed-body'; delayMs?: number }
  | { kind: 'hang' };

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface LlmStandIn {
  url: string;
  requests: RecordedRequest[];
  /** Next answers in order; when empty, `fallback` answers. */
  script(...b: Behaviour[]): void;
  setDefault(b: Behaviour | ((req: RecordedRequest) => Behaviour)): void;
  maxConcurrent: number;
  close(): Promise<void>;
}

export async function startLlmServer(initial: Behaviour = { kind: 'score', score: 0.8 }): Promise<LlmStandIn> {
  const queue: Behaviour[] = [];
  let fallback: Behaviour | ((req: RecordedRequest) => Behaviour) = initial;
  const requests: RecordedRequest[] = [];
  let active = 0;
  const state = { maxConcurrent: 0 };
  const hanging = new Set<ServerResponse>();

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end('{"error":"bad json"}');
        return;
      }
      const rec: RecordedRequest = { path: req.url ?? '', headers: req.headers, body };
      requests.push(rec);
      const anthropic = rec.path.endsWith('/v1/messages');
      if (!anthropic && !rec.path.endsWith('/v1/chat/completions')) {
        res.writeHead(404).end('{"error":"not found"}');
        return;
      }
      const b = queue.shift() ?? (typeof fallback === 'function' ? fallback(rec) : fallback);
      active++;
      state.maxConcurrent = Math.max(state.maxConcurrent, active);
      const finish = () => {
        active--;
      };
      if (b.kind === 'hang') {
        hanging.add(res);
        res.on('close', () => {
          hanging.delete(res);
          finish();
        });
        return;
      }
      const answer = () => {
        finish();
        if (res.destroyed) return;
        if (b.kind === 'status') {
          res.writeHead(b.status, { 'content-type': 'application/json' }).end(b.body ?? '{"error":{"message":"scripted failure"}}');
          return;
        }
        if (b.kind === 'malformed-body') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [ {"message": ');
          return;
        }
        const content = b.kind === 'score' ? JSON.stringify({ score: b.score, explanation: b.explanation ?? 'scripted' }) : b.content;
        const model = typeof body.model === 'string' ? body.model : 'stand-in';
        const u = b.usage === undefined ? { input: 1, output: 1 } : b.usage;
        // As the providers send it: Anthropic's input_tokens leaves out cached prompt tokens (cache_read_input_tokens).
        const anthropicUsage = u && { input_tokens: u.input, output_tokens: u.output, ...(u.cacheRead !== undefined && { cache_creation_input_tokens: 0, cache_read_input_tokens: u.cacheRead }) };
        const openAiUsage = u && { prompt_tokens: u.input + (u.cacheRead ?? 0), completion_tokens: u.output, total_tokens: u.input + (u.cacheRead ?? 0) + u.output };
        const payload = anthropic
          ? { id: 'msg_1', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: content }], stop_reason: 'end_turn', ...(anthropicUsage && { usage: anthropicUsage }) }
          : {
              id: 'chatcmpl-1',
              object: 'chat.completion',
              created: 0,
              model,
              choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
              ...(openAiUsage && { usage: openAiUsage }),
            };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      };
      // No delay: answered at once (a 0 ms timer still waits for the next timers phase, ~1 ms).
      if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  });
  // Node clients keep a socket only while the server's Keep-Alive timeout is more than a second away: with 1 s
  // every call opened a new connection (measured), which no real LLM endpoint makes them do.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...b) => queue.push(...b),
    setDefault: (b) => {
      fallback = b;
    },
    get maxConcurrent() {
      return state.maxConcurrent;
    },
    set maxConcurrent(v: number) {
      state.maxConcurrent = v;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
