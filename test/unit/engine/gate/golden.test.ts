/**
 * Data-driven gate tests: every YAML file under test/golden/gate holds a blueprint (compiled like any other,
 * on top of the built-in baseline) and cases. A case is a sequence of steps over one job and one in-memory
 * job store: `tool_call` steps (checked by the pre-tool gate, then recorded) and `final_answer` steps whose
 * judge answers are scripted (`judge:` — JSON text, or `{hang: true}` for a judge that never answers).
 * `expect` is a subset match on the GateOutcome (or ToolCallCheck); `directive_contains` checks text; `repeat: n`
 * sends a `tool_call` step n times as distinct events (to push calls out of the job state's kept window);
 * `refused: true` records an allowed call as not run (an approval held, then denied).
 * The judge is reached over HTTP: the OpenAI-compatible client against the local OpenAI-protocol server,
 * which answers each call with the next scripted answer.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAiCompatibleClient } from '../../../../src/adapters/llm/index.js';
import { parse } from 'yaml';
import { FinalizationGate, MemoryGateJobStore } from '../../../../src/engine/gate/index.js';
import type { AgentInfo, LlmClient, LlmRequest, Trace } from '../../../../src/engine/types.js';
import { startLlmServer, type LlmStandIn } from '../../../support/llm-server.js';
import { compileOne, type Answer } from './helpers.js';

interface Step {
  tool_call?: Record<string, unknown>;
  final_answer?: Record<string, unknown>;
  judge?: Answer[];
  event_id?: string;
  /** A `tool_call` step sent this many times (distinct events), e.g. to push calls out of the kept window. */
  repeat?: number;
  /** A `tool_call` the gate allowed that still did not run (held for approval, then denied): recorded as refused. */
  refused?: boolean;
  expect?: Record<string, unknown>;
  /** The step must throw a StewardError with this code. */
  expect_error?: string;
  directive_contains?: string[];
  judge_calls?: number;
}
interface Case {
  name: string;
  llm?: boolean;
  agent?: Partial<AgentInfo>;
  steps: Step[];
}
interface GoldenFile {
  blueprint: string;
  llm?: boolean;
  agent?: Partial<AgentInfo>;
  cases: Case[];
}

const DIR = join(__dirname, '../../../golden/gate');

let server: LlmStandIn;
beforeAll(async () => {
  server = await startLlmServer();
});
afterAll(() => server.close());

/** Each judge call scripts the server with the case's next answer, then goes over HTTP. */
class HttpJudge implements LlmClient {
  queue: Answer[] = [];
  requests: LlmRequest[] = [];
  private readonly client = new OpenAiCompatibleClient({ baseUrl: server.url, apiKey: 'test', model: 'judge-golden' });
  async complete(req: LlmRequest, signal?: AbortSignal) {
    this.requests.push(req);
    const a = this.queue.shift();
    if (a === undefined) throw new Error('test: no scripted judge answer left');
    server.script(typeof a === 'string' ? { kind: 'content', content: a } : { kind: 'hang' });
    return this.client.complete(req, signal);
  }
}

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'));

describe('gate golden cases', () => {
  it('has golden files', () => expect(files.length).toBeGreaterThan(3));
  for (const file of files) {
    const doc = parse(readFileSync(join(DIR, file), 'utf8')) as GoldenFile;
    describe(file, () => {
      const bp = compileOne(doc.blueprint);
      for (const c of doc.cases) {
        it(c.name, async () => {
          const llm = new HttpJudge();
          const useLlm = c.llm ?? doc.llm ?? true;
          const agent: AgentInfo = { id: 'agent-1', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true, ...(doc.agent ?? {}), ...(c.agent ?? {}) };
          const gate = new FinalizationGate({ llm: useLlm ? llm : undefined, jobStore: new MemoryGateJobStore(), limits: { judgeTimeoutMs: 200 } });
          let t = Date.parse('2026-01-01T00:00:00Z');
          for (const [i, s] of c.steps.entries()) {
            t += 60_000;
            const eventId = s.event_id ?? `ev-${i}`;
            const base = { trace_id: `t-${i}`, agent_id: agent.id, timestamp: new Date(t).toISOString(), job_id: 'job-1' };
            if (s.tool_call) {
              for (let r = 0; r < (s.repeat ?? 1); r++) {
                const id = s.repeat ? `${eventId}#${r}` : eventId;
                const trace: Trace = { ...base, ...(s.repeat && { trace_id: `t-${i}#${r}` }), hook: 'tool_call', ...s.tool_call };
                const check = await gate.checkToolCall(trace, agent, bp, t);
                await gate.recordToolCall(trace, agent, t, id, check.intervention === 'ok' && !s.refused, bp);
                if (s.expect) expect(check, `step ${i}`).toMatchObject(s.expect);
              }
              continue;
            }
            llm.queue.push(...(s.judge ?? []));
            const before = llm.requests.length;
            const trace: Trace = { ...base, hook: 'final_answer', ...(s.final_answer ?? {}) };
            if (s.expect_error) {
              await expect(gate.finalize(trace, agent, bp, t, eventId)).rejects.toMatchObject({ code: s.expect_error });
              continue;
            }
            const out = await gate.finalize(trace, agent, bp, t, eventId);
            if (s.expect) expect(out, `step ${i}: ${JSON.stringify(out, null, 1).slice(0, 1500)}`).toMatchObject(s.expect);
            for (const text of s.directive_contains ?? []) expect(out.directive ?? '', `step ${i}`).toContain(text);
            if (s.judge_calls !== undefined) expect(llm.requests.length - before, `step ${i} judge calls`).toBe(s.judge_calls);
          }
        });
      }
    });
  }
});
