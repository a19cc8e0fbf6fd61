// What the finalize route hands the gate and what the query routes answer when nothing is stored (docs/http.md
// "Mapping", "Queries"; audit #24 r2, findings 7 and 5), on the real Fastify app with the test's collaborators.
import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../../src/adapters/http/ingress-server.js';
import { apiKeyHash } from '../../../../src/adapters/http/ingress-auth.js';
import { createAgentRegistry } from '../../../../src/engine/blueprint/registry.js';
import type { AgentInfo, Trace } from '../../../../src/engine/types.js';

const agent: AgentInfo = { id: 'sq-agent', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], apiKeys: [apiKeyHash('sq-key')], registered: true };

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

async function start(stored: Record<string, Record<string, unknown>> = {}) {
  const registry = createAgentRegistry([agent]);
  const seen: { finalize: Trace[]; decide: Trace[]; queries: string[] } = { finalize: [], decide: [], queries: [] };
  ingress = new HttpIngress(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 100_000 },
    {
      registry: () => registry,
      publish: async () => undefined,
      finalize: async (t) => (seen.finalize.push(t), { trace_id: t.trace_id, action: 'finalize' }),
      decide: async (t) => (seen.decide.push(t), { trace_id: t.trace_id, intervention: 'ok' }),
      // The query port answers only the key's agent's rows (http-queries.ts): `${kind}:${agent}:${trace}`.
      query: async (kind, agentId, traceId) => (seen.queries.push(`${kind}:${agentId}:${traceId}`), stored[`${kind}:${agentId}:${traceId}`]),
    },
  );
  await ingress.ready();
  const post = (url: string, payload: unknown) => ingress!.app.inject({ method: 'POST', url, headers: { 'x-api-key': 'sq-key', 'content-type': 'application/json' }, payload: payload as object });
  const get = (url: string) => ingress!.app.inject({ method: 'GET', url, headers: { 'x-api-key': 'sq-key' } });
  return { seen, post, get };
}

describe('POST /v1/finalize: the acgp event\'s goal is the gate\'s goal', () => {
  it('goal → trace.goal (and still context.acgp.goal); a steward.goal wins; an empty goal is not one', async () => {
    const s = await start();
    const body = { trace_id: 'f1', goal: 'Explain how refunds are approved.', user_query: 'how do refunds work?', final_output: 'Refunds are approved by…', steward: { job_id: 'j1' } };
    expect((await s.post('/v1/finalize', body)).statusCode).toBe(200);
    // Before the fix the gate saw no goal: the judge's prompt read GOAL "(not given)".
    expect(s.seen.finalize[0]).toMatchObject({ hook: 'final_answer', job_id: 'j1', goal: 'Explain how refunds are approved.', content: 'Refunds are approved by…', context: { acgp: { goal: 'Explain how refunds are approved.' } } });
    await s.post('/v1/finalize', { ...body, trace_id: 'f2', steward: { job_id: 'j1', goal: 'The goal the agent states for the gate.' } });
    expect(s.seen.finalize[1].goal).toBe('The goal the agent states for the gate.');
    await s.post('/v1/finalize', { ...body, trace_id: 'f3', goal: '' });
    expect(s.seen.finalize[2]).not.toHaveProperty('goal');
  });

  it('decide does not map it: on other hooks `goal` is no string (ACM hooks: an object, contracts C1)', async () => {
    const s = await start();
    expect((await s.post('/v1/decide', { trace_id: 'd1', goal: 'g', steward: { tool: 'shell', args: {} } })).statusCode).toBe(200);
    expect(s.seen.decide[0]).not.toHaveProperty('goal');
    expect(s.seen.decide[0].context).toMatchObject({ acgp: { goal: 'g' } });
  });
});

describe('GET /v1/query/*: a trace with nothing stored', () => {
  it('answers 200 {status: "not_found", trace_id} — what the acgp client waits on — for every kind; a stored row as it is', async () => {
    const s = await start({ 'scores:sq-agent:t-1': { status: 'processed', trace_id: 't-1', scores: { ctq: 0.8 } } });
    for (const kind of ['scores', 'feedback', 'oversight']) {
      const r = await s.get(`/v1/query/${kind}/t-none`);
      // Before the fix: 404, on which get_score()/get_feedback() raise at once under ACGP_FAIL_SILENTLY=false.
      expect(r.statusCode, kind).toBe(200);
      expect(r.json(), kind).toEqual({ status: 'not_found', trace_id: 't-none' });
    }
    expect((await s.get('/v1/query/scores/t-1')).json()).toEqual({ status: 'processed', trace_id: 't-1', scores: { ctq: 0.8 } });
    // Asked as the key's agent only: another agent's trace is "nothing stored" (http-queries.ts filters by agent).
    expect(s.seen.queries.every((q) => q.split(':')[1] === 'sq-agent')).toBe(true);
  });
});
