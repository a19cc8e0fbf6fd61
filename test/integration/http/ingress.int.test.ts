// The HTTP ingress (docs/http.md) on real Kafka and Redis: API-key identity (D24), the acgp batch protocol
// into acgp.traces (key = the key's agent), idempotent retries, and refusals — malformed bodies, oversize
// batches, gzip bombs, bad events (with the DLQ's reason), rate limits.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { Collector, pipelineConfig, quietLogger, TestEngine, withPipelineEnv } from '../pipeline/harness.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { uniqueRedisPrefix, waitFor } from '../setup/helpers.js';
import { sseReader } from './sse-reader.js';

describe('HTTP ingress (real Kafka, Redis)', () => {
  it('batches into acgp.traces as the key\'s agent; retries deduplicated; bad keys, bodies and events refused', async () => {
    const pub = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-'));
    writeFileSync(
      join(dir, 'agents.yaml'),
      `agents:\n  - id: py-agent\n    tenant: acme\n    api_keys: ["${apiKeyHash('key-good')}"]\n  - id: signer\n    api_keys: ["${apiKeyHash('key-signer')}"]\n    public_keys:\n      - |\n${pub.trim().split('\n').map((l) => `        ${l}`).join('\n')}\n`,
    );
    await withPipelineEnv('http-ingress', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, redis: { key_prefix: uniqueRedisPrefix('http') }, http: { enabled: true, port: 0, limits: { max_body_bytes: 64 * 1024, max_batch_events: 10, rate_per_second: 1000 } } });
      const ing = await startHttpIngress(cfg, quietLogger());
      const out = await new Collector(adapter, [topics.traces]).start();
      const url = `http://127.0.0.1:${ing.port}/v1`;
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'key-good', ...headers }, body: typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body) });
      try {
        const events = [0, 1, 2].map((i) => ({ trace_id: `h-${i}`, agent_type: 'executor', goal: 'g', user_query: 'q', reasoning_text: `r${i}`, final_output: i === 2 ? 'done' : '', context_information: {}, documents_used: ['d.md'], timestamp: '2026-06-01T10:00:00', idempotency_key: `b1_h-${i}`, agent_id: 'spoofed' }));
        const batch = { batch_id: 'b1', events, event_count: 3 };
        const r1 = await post('/ingest/traces/batch', batch, { 'x-idempotency-key': 'b1' });
        expect(r1.status).toBe(200);
        expect(await r1.json()).toEqual({ accepted: 3, duplicates: 0, batch_id: 'b1' });
        // The retried batch, gzipped as the client does over 1 KB: nothing sent twice.
        const r2 = await post('/ingest/traces/batch', gzipSync(JSON.stringify(batch)), { 'x-idempotency-key': 'b1', 'content-encoding': 'gzip' });
        expect(await r2.json()).toEqual({ accepted: 0, duplicates: 3, batch_id: 'b1' });
        await waitFor(() => out.on(topics.traces).length >= 3, { timeoutMs: 20_000 });
        await new Promise((r) => setTimeout(r, 1000));
        const recs = out.on(topics.traces);
        expect(recs).toHaveLength(3);
        expect(recs.every((m) => m.key?.toString() === 'py-agent')).toBe(true);
        const t2 = out.json(topics.traces).find((t) => t.trace_id === 'h-2');
        expect(t2).toMatchObject({ agent_id: 'py-agent', hook: 'output', content: 'done', reasoning: 'r2', sources: [{ id: 'd.md' }], timestamp: '2026-06-01T10:00:00Z' });

        // Identity: unknown / missing key 401; an agent that must sign 403 (D24).
        expect((await post('/ingest/traces', events[0], { 'x-api-key': 'nope' })).status).toBe(401);
        expect((await fetch(`${url}/ingest/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
        const signer = await post('/ingest/traces', { trace_id: 's-1' }, { 'x-api-key': 'key-signer' });
        expect(signer.status).toBe(403);
        expect(((await signer.json()) as { error: string }).error).toBe('STEWARD_AGENT_SIGNATURE');

        // Malformed JSON, schema violations, oversize batches, gzip bombs, bad events.
        const bad = await post('/ingest/traces/batch', '{"events": [');
        expect(bad.status).toBe(400);
        expect((await post('/ingest/traces/batch', { events: 'x' })).status).toBe(400);
        const big = await post('/ingest/traces/batch', { events: Array.from({ length: 11 }, (_, i) => ({ trace_id: `x${i}` })) });
        expect(big.status).toBe(413);
        expect(((await big.json()) as { error: string }).error).toBe('STEWARD_HTTP_BATCH_TOO_LARGE');
        const bomb = gzipSync(Buffer.concat([Buffer.from('{"events":[{"trace_id":"'), Buffer.alloc(50 * 1024 * 1024, 'a'), Buffer.from('"}]}')]));
        expect(bomb.length).toBeLessThan(200 * 1024);
        const b = await post('/ingest/traces/batch', bomb, { 'content-encoding': 'gzip' });
        expect(b.status).toBe(413);
        expect(((await b.json()) as { error: string }).error).toBe('STEWARD_HTTP_BODY_TOO_LARGE');
        const ts = await post('/ingest/traces/batch', { events: [{ trace_id: 'ok-1' }, { trace_id: 'bad-ts', timestamp: 'yesterday' }] });
        expect(ts.status).toBe(422);
        expect(await ts.json()).toMatchObject({ error: 'STEWARD_TRACE_SCHEMA', index: 1 });
        const long = await post('/ingest/traces', { trace_id: 'big', final_output: 'x'.repeat(20_000) });
        expect(long.status).toBe(422);
        expect(((await long.json()) as { error: string }).error).toBe('STEWARD_TRACE_TOO_LARGE');
        // Nothing from the refused requests reached the topic.
        await new Promise((r) => setTimeout(r, 1000));
        expect(out.on(topics.traces)).toHaveLength(3);
      } finally {
        await out.stop();
        await ing.close();
      }
    });
  });

  it('POST /v1/decide answers the tripwire decision on the request (seen on the SSE stream, resumed by a second client with Last-Event-ID), and the contract fallback when no stage answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: dec-agent\n    tier: ACL-2\n    api_keys: ["${apiKeyHash('k-dec')}"]\n`);
    await withPipelineEnv('http-decide', async ({ cfg: base }) => {
      // llm.timeout_ms 1 s: /v1/finalize's default wait is 2 x 1 s + 5 s (finalizeTimeoutFor, spec-decisions D40).
      const cfg = pipelineConfig(base.topics.prefix, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, redis: { key_prefix: uniqueRedisPrefix('http') }, http: { enabled: true, port: 0 }, llm: { base_url: 'http://127.0.0.1:9', timeout_ms: 1000 } });
      const ing = await startHttpIngress(cfg, quietLogger());
      const pipe = await startPipeline(cfg, ['tripwire'], { engine: new TestEngine() }, { logger: quietLogger() });
      const decide = async (body: unknown) => {
        const r = await fetch(`http://127.0.0.1:${ing.port}/v1/decide`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k-dec' }, body: JSON.stringify(body) });
        return { status: r.status, body: (await r.json()) as Record<string, any> };
      };
      let stopped = false;
      try {
        // SSE: client A sees the halt; client B resumes after it with Last-Event-ID and sees only what followed.
        const a = await sseReader(`http://127.0.0.1:${ing.port}/v1/stream/traces`, { 'x-api-key': 'k-dec' });
        expect((await a.next()).event).toBe('connected');
        const halt = await decide({ trace_id: 'd-1', reasoning_text: 'clean up', timeout_ms: 20_000, steward: { tool: 'rm_rf', args: { path: '/' }, agent_id: 'spoofed' } });
        expect(halt.status).toBe(200);
        expect(halt.body).toMatchObject({ trace_id: 'd-1', agent_id: 'dec-agent', intervention: 'halt' });
        let seen = await a.next();
        while (seen.event !== 'trace_processed') seen = await a.next();
        expect(JSON.parse(seen.data)).toMatchObject({ trace_id: 'd-1', intervention: 'halt' });
        a.close();
        const ok = await decide({ trace_id: 'd-2', timeout_ms: 20_000, steward: { tool: 'search' } });
        expect(ok.body).toMatchObject({ trace_id: 'd-2', intervention: 'ok' });
        const bClient = await sseReader(`http://127.0.0.1:${ing.port}/v1/stream/traces`, { 'x-api-key': 'k-dec', 'last-event-id': seen.id! });
        expect((await bClient.next()).event).toBe('connected');
        let next = await bClient.next();
        while (next.event !== 'trace_processed') next = await bClient.next();
        expect(JSON.parse(next.data)).toMatchObject({ trace_id: 'd-2', intervention: 'ok' });
        bClient.close();
        // finalize: a final_answer without job_id is refused fail-closed (contracts C5), through the real stage.
        const fr = await fetch(`http://127.0.0.1:${ing.port}/v1/finalize`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k-dec' }, body: JSON.stringify({ trace_id: 'f-1', final_output: 'the answer', timeout_ms: 20_000 }) });
        expect(fr.status).toBe(200);
        const fin = (await fr.json()) as Record<string, any>;
        expect(fin).toMatchObject({ action: 'block' });
        expect(fin.rejected).toMatchObject({ code: expect.any(String) });
        await pipe.stop();
        stopped = true;
        const fb = await decide({ trace_id: 'd-3', timeout_ms: 300, steward: { tool: 'search' } });
        expect(fb.body).toMatchObject({ trace_id: 'd-3', fallback: true });
        // timeout_ms 0 is raised to the ACL-2 max latency budget (150 ms, D3): the stage is asked, not skipped (D49).
        const z0 = performance.now();
        const zero = await decide({ trace_id: 'd-5', timeout_ms: 0, steward: { tool: 'search' } });
        expect(performance.now() - z0).toBeGreaterThanOrEqual(145);
        expect(zero.body).toMatchObject({ trace_id: 'd-5', fallback: true });
        // A final answer or feedback through /v1/decide: refused, not the approved ACL-2 fallback (D49).
        const fa = await decide({ trace_id: 'd-6', final_output: 'Your SSN is 123-45-6789.', timeout_ms: 300, steward: { hook: 'final_answer', job_id: 'j-6' } });
        expect(fa).toMatchObject({ status: 422, body: { error: 'STEWARD_USAGE', message: expect.stringContaining('/v1/finalize') } });
        expect(await decide({ trace_id: 'd-7', steward: { hook: 'user_feedback', job_id: 'j-6', feedback: 'up' } })).toMatchObject({ status: 422, body: { error: 'STEWARD_USAGE' } });
        // A final answer nobody answers, without timeout_ms: the finalize default (7 s here), not decide's 5 s, and
        // blocked though the ACL-2 contract fallback allows (D40: no judge and no tier-1 scan saw the draft).
        const t0 = Date.now();
        const fr2 = await fetch(`http://127.0.0.1:${ing.port}/v1/finalize`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k-dec' }, body: JSON.stringify({ trace_id: 'f-2', final_output: 'card 4111 1111 1111 1111', steward: { job_id: 'j-2' } }) });
        const waited = Date.now() - t0;
        expect(waited).toBeGreaterThanOrEqual(6_900);
        expect(waited).toBeLessThan(20_000);
        expect(await fr2.json()).toMatchObject({ trace_id: 'f-2', job_id: 'j-2', fallback: true, action: 'block', approved: false });
        expect((await decide({ trace_id: 'd-4', timestamp: 'nope' })).status).toBe(422);
      } finally {
        if (!stopped) await pipe.stop();
        await ing.close();
      }
    });
  });

  it('backpressure: past max_in_flight_bytes a request gets 503 + Retry-After, not buffered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: a\n    api_keys: ["${apiKeyHash('k')}"]\n`);
    const cfg = pipelineConfig(`http-bp-${process.pid}`, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, http: { enabled: true, port: 0, limits: { max_in_flight_bytes: 2048 } } });
    const ing = await startHttpIngress(cfg, quietLogger());
    try {
      const r = await fetch(`http://127.0.0.1:${ing.port}/v1/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body: JSON.stringify({ events: [{ trace_id: 'x', reasoning_text: 'y'.repeat(4000) }] }) });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
    } finally {
      await ing.close();
    }
  });

  it('per-key rate limit: 429 with Retry-After', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: a\n    api_keys: ["${apiKeyHash('k')}"]\n`);
    const cfg = pipelineConfig(`http-rate-${process.pid}`, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, http: { enabled: true, port: 0, limits: { rate_per_second: 1 } } });
    const ing = await startHttpIngress(cfg, quietLogger());
    try {
      const codes: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`http://127.0.0.1:${ing.port}/v1/ingest/traces/batch`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body: JSON.stringify({ events: [] }) });
        codes.push(r.status);
        if (r.status === 429) retryAfter = r.headers.get('retry-after');
      }
      expect(codes).toEqual([200, 200, 429]);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    } finally {
      await ing.close();
    }
  });
});

describe('HTTP queries (real ClickHouse)', () => {
  it('GET /v1/query/{scores,feedback,oversight}/{trace_id}: the key\'s agent\'s rows only, values escaped', async () => {
    const dbName = `steward_http_${process.pid}_${Date.now().toString(36)}`;
    const dir = mkdtempSync(join(tmpdir(), 'steward-http-'));
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: q-agent\n    api_keys: ["${apiKeyHash('k-q')}"]\n`);
    const cfg = pipelineConfig(`http-q-${process.pid}`, { blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false }, clickhouse: { database: dbName }, http: { enabled: true, port: 0 } });
    const store = new ClickHouseStore(cfg.clickhouse);
    await store.command(`CREATE DATABASE IF NOT EXISTS ${dbName}`);
    await migrate(store);
    const ing = await startHttpIngress(cfg, quietLogger());
    try {
      const v = { trace_id: 'q-1', agent_id: 'q-agent', tenant: 'default', blueprint: 'b', intervention: 'flag', approved: 1, stage: 'ctq', ctq: 0.42, risk: 0.3, confidence: 0.9, policy_violations: ['p1'], metric_names: ['m'], metric_scores: [0.42], metric_statuses: ['ok'], metrics_json: '{}', verdict_json: '{"ctq":0.42}', signature: 's', event_time_ms: Date.now(), scored_at_ms: Date.now(), ingested_at_ms: Date.now() };
      await store.insert('verdicts', [v, { ...v, trace_id: 'q-other', agent_id: 'someone-else' }]);
      const d1 = { trace_id: 'q-1', agent_id: 'q-agent', tenant: 'default', blueprint: 'b', intervention: 'block', approved: 0, stage: 'tripwire', halted: 0, severity: 'high', reasons: ['no'], tripwires_fired: ['t'], rules_failed: [], tripwires_json: '[]', rules_json: '[]', latency_ms: 1, event_time_ms: Date.now(), decided_at_ms: Date.now(), hook: 'tool_call', tool: 'x', session_id: '', engine_version: '1', fallback: 0, ingested_at_ms: Date.now() };
      await store.insert('decisions', [d1, { ...d1, trace_id: 'q-other', agent_id: 'someone-else' }]);
      const get = async (path: string) => {
        const r = await fetch(`http://127.0.0.1:${ing.port}/v1/query/${path}`, { headers: { 'x-api-key': 'k-q' } });
        return { status: r.status, body: (await r.json()) as Record<string, any> };
      };
      expect(await get('scores/q-1')).toMatchObject({ status: 200, body: { status: 'processed', trace_id: 'q-1', ctq: 0.42, intervention: 'flag', scores: { ctq: 0.42, risk: 0.3, confidence: 0.9 } } });
      // The acgp client's get_feedback() waits for `feedback`, get_oversight_mode() reads `oversight_mode` (D43).
      expect(await get('feedback/q-1')).toMatchObject({ status: 200, body: { status: 'processed', policy_violations: ['p1'], verdict: { ctq: 0.42 }, feedback: { source: 'verdict', intervention: 'flag', approved: true, ctq: 0.42, oversight_mode: 'strict_guardian' } } });
      expect(await get('oversight/q-1')).toMatchObject({ status: 200, body: { intervention: 'block', stage: 'tripwire', reasons: ['no'], halted: false, ctq: 0.42, oversight_mode: 'strict_guardian' } });
      // A halted trace has a decision and no verdict: feedback from the decision, no scores.
      const d = { trace_id: 'q-2', agent_id: 'q-agent', tenant: 'default', blueprint: 'b', intervention: 'halt', approved: 0, stage: 'tripwire', halted: 1, severity: 'critical', reasons: ['cap'], tripwires_fired: ['cap'], rules_failed: [], tripwires_json: '[]', rules_json: '[]', latency_ms: 1, event_time_ms: Date.now(), decided_at_ms: Date.now(), hook: 'tool_call', tool: 'x', session_id: '', engine_version: '1', fallback: 0, ingested_at_ms: Date.now() };
      await store.insert('decisions', [d, { ...d, trace_id: 'q-3', intervention: 'ok', approved: 1, halted: 0, reasons: [], tripwires_fired: [] }]);
      await store.insert('verdicts', [{ ...v, trace_id: 'q-3', intervention: 'ok', ctq: 0.9, risk: 0.1 }]);
      expect(await get('feedback/q-2')).toMatchObject({ status: 200, body: { status: 'processed', feedback: { source: 'decision', intervention: 'halt', approved: false, halted: true, reasons: ['cap'], oversight_mode: 'strict_guardian' } } });
      // Never scored (halted): the not-stored answer, which get_score() waits on rather than raising (D43).
      expect(await get('scores/q-2')).toEqual({ status: 200, body: { status: 'not_found', trace_id: 'q-2' } });
      expect(await get('oversight/q-3')).toMatchObject({ status: 200, body: { intervention: 'ok', ctq: 0.9, oversight_mode: 'socratic_philosopher' } });
      // An allowed trace not scored yet: no `feedback` (get_feedback() keeps waiting for the verdict's); a verdict
      // that blocks at a high CTQ makes the oversight strict all the same.
      await store.insert('decisions', [{ ...d, trace_id: 'q-4', intervention: 'ok', approved: 1, halted: 0, reasons: [], tripwires_fired: [] }, { ...d, trace_id: 'q-5', intervention: 'ok', approved: 1, halted: 0, reasons: [], tripwires_fired: [] }]);
      await store.insert('verdicts', [{ ...v, trace_id: 'q-4', intervention: 'block', approved: 0, ctq: 0.75, risk: 0.25 }]);
      const pending = await get('feedback/q-5');
      expect(pending).toMatchObject({ status: 200, body: { status: 'pending', trace_id: 'q-5', intervention: 'ok' } });
      expect(pending.body.feedback).toBeUndefined();
      expect(await get('oversight/q-4')).toMatchObject({ status: 200, body: { intervention: 'ok', verdict_intervention: 'block', ctq: 0.75, oversight_mode: 'strict_guardian' } });
      // Nothing stored, another agent's trace and an injection attempt answer alike: 200 `not_found`, nothing more.
      for (const kind of ['scores', 'feedback', 'oversight']) {
        expect(await get(`${kind}/q-none`), kind).toEqual({ status: 200, body: { status: 'not_found', trace_id: 'q-none' } });
        expect(await get(`${kind}/q-other`), kind).toEqual({ status: 200, body: { status: 'not_found', trace_id: 'q-other' } });
      }
      expect(await get(`scores/${encodeURIComponent("x' OR 1=1 --")}`)).toEqual({ status: 200, body: { status: 'not_found', trace_id: "x' OR 1=1 --" } });
    } finally {
      await ing.close();
      await store.command(`DROP DATABASE IF EXISTS ${dbName}`);
      await store.close();
    }
  });
});
