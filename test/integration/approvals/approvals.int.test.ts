/**
 * Approvals on real Kafka, Redis and ClickHouse (gate spec §6; docs/approvals.md): a tool call matching
 * `requires_approval` is answered `escalate` with an approval id; approvers answer with signed messages on
 * acgp.approval-answers (an unknown role, a forged signature, an answer on acgp.approvals are dead-lettered) or over the authenticated HTTP route; the waiting
 * agent gets the outcome through the client SDK; a deadline survives the stop of every instance and fires
 * once when two fresh instances sweep at the same time; every outcome is a ledger entry and a ClickHouse row.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HttpIngress } from '../../../src/adapters/http/ingress-server.js';
import { RedisApprovalStore } from '../../../src/adapters/redis/approval-store.js';
import { signedAnswer } from '../../../src/cli/commands/approve.js';
import { run as denyCli } from '../../../src/cli/commands/deny.js';
import { StewardClient } from '../../../src/client/steward-client.js';
import { answerOverHttp } from '../../../src/consumers/approvals.js';
import { approvalAnswerJson } from '../../../src/contracts/approvals.js';
import { apiKeyHash, parseApproverRegistry } from '../../../src/engine/approvals/approvers.js';
import { createAgentRegistry } from '../../../src/engine/blueprint/registry.js';
import type { Trace } from '../../../src/engine/types.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline, type StageName } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ledgerSignerFor } from '../../../src/process/steward-process.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { clickhouseClient, deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';

const BLUEPRINT = `id: support/refunds@1.0
version: "1.0.0"
description: refunds need a supervisor above 500
tools:
  - id: process_refund
    requires_approval: "args.amount > 500"
    approval: { timeout: 1h, default_action: deny, role: supervisor }
  - id: wire_transfer
    requires_approval: "args.amount > 0"
    approval: { timeout: 3s, default_action: deny, role: supervisor }
`;
const AGENTS = 'agents:\n  - { id: support-a, tenant: acme, tier: ACL-2, tools: [process_refund, wire_transfer] }\n';
const pair = () => {
  const k = generateKeyPairSync('ed25519');
  return { priv: k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), pub: k.publicKey.export({ type: 'spki', format: 'pem' }).toString() };
};

describe('approvals (real Kafka, Redis, ClickHouse)', () => {
  it('escalate → signed answer / HTTP answer → outcome to the waiting agent; a timeout survives a full restart and fires once', async () => {
    const alice = pair();
    const bob = pair();
    const forger = pair();
    const dir = mkdtempSync(join(tmpdir(), 'steward-approvals-'));
    writeFileSync(join(dir, 'refunds.yaml'), BLUEPRINT);
    writeFileSync(join(dir, 'agents.yaml'), AGENTS);
    const approversFile = join(dir, 'approvers.yaml');
    writeFileSync(
      approversFile,
      `approvers:\n  - id: alice\n    public_keys: [${JSON.stringify(alice.pub)}]\n    api_keys: ["${apiKeyHash('alice-http-key')}"]\n    roles: [{ role: supervisor, tenants: [acme] }]\n  - id: bob\n    public_keys: [${JSON.stringify(bob.pub)}]\n    api_keys: ["${apiKeyHash('bob-http-key')}"]\n    roles: [clerk]\n`,
    );
    const redisPrefix = uniqueRedisPrefix('ap');
    const redis = redisClient();
    await withClickHouseDatabase(async (db) => {
      await withPipelineEnv('pl-ap', async ({ cfg: base, topics, adapter }) => {
        const cfg = pipelineConfig(base.topics.prefix, {
          blueprints: { dir, watch: false },
          redis: { key_prefix: redisPrefix },
          clickhouse: { database: db.name },
          approvals: { approvers_file: approversFile, sweep_interval_ms: 200 },
          trust_debt: { audit_sweep_interval_ms: 0 },
        });
        const logger = quietLogger();
        const start = async (stages: StageName[]) => {
          const rt = await bootstrapEngine(cfg, stages.filter((s) => s !== 'sink'), logger);
          const pipe = await startPipeline(cfg, stages, { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSignerFor(cfg, logger)) }, { logger });
          return { stop: async () => (await pipe.stop(), await rt.close()) };
        };
        const out = await new Collector(adapter, [topics.approvals, topics.dlq]).start();
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const store = new RedisApprovalStore(redis, { prefix: redisPrefix });
        const producer = await adapter.producer();
        let running = [await start(['tripwire', 'approvals', 'sink'])];
        let n = 0;
        const call = (tool: string, amount: number): Trace => ({ trace_id: `t-${++n}`, agent_id: 'support-a', timestamp: new Date().toISOString(), hook: 'tool_call', tool, args: { amount, order_id: `o-${n}` } });
        const outcomes = (id: string) => out.json(topics.approvals).filter((m) => m.kind === 'outcome' && m.approval_id === id);
        try {
          // Below the threshold: allowed, no approval.
          const small = await client.decide(call('process_refund', 100), { timeoutMs: 20_000 });
          expect(small.intervention).toBe('ok');
          expect(small.approval_id).toBeUndefined();

          // Above: escalate with an approval id and deadline; the request is stored in Redis by the approvals stage.
          const big = await client.decide(call('process_refund', 900), { timeoutMs: 20_000 });
          expect(big).toMatchObject({ intervention: 'escalate', approved: false, approval_id: expect.stringMatching(/^ap-[0-9a-f]{24}$/) });
          expect(big.reasons.some((r) => r.startsWith(`approval:${big.approval_id}: process_refund requires approval by supervisor`))).toBe(true);
          const id1 = big.approval_id as string;
          await waitFor(async () => (await store.status(id1))?.status === 'pending', { timeoutMs: 20_000, message: 'request stored' });

          // Refused answers: a clerk (no supervisor role), a forged signature. Dead-lettered with their reason.
          // Approvers write acgp.approval-answers (spec-decisions D35); an answer on acgp.approvals is refused too.
          const send = (a: Parameters<typeof approvalAnswerJson>[0], topic = topics.approvalAnswers) => producer.send([{ topic, messages: [{ key: a.approval_id, value: approvalAnswerJson(a) }] }]);
          await send(signedAnswer({ approval_id: id1, decision: 'deny', approver: 'bob', ts_ms: Date.now() }, bob.priv));
          await send(signedAnswer({ approval_id: id1, decision: 'deny', approver: 'alice', ts_ms: Date.now() }, forger.priv));
          await send(signedAnswer({ approval_id: id1, decision: 'deny', approver: 'alice', ts_ms: Date.now() }, alice.priv), topics.approvals);
          await waitFor(() => out.on(topics.dlq).length >= 3, { timeoutMs: 20_000, message: 'refused answers dead-lettered' });
          const codes = out.on(topics.dlq).map((m) => m.headers?.['x-steward-error-code']?.toString());
          expect(codes).toEqual(expect.arrayContaining(['STEWARD_APPROVAL_FORBIDDEN', 'STEWARD_APPROVAL_SIGNATURE', 'STEWARD_APPROVAL_MESSAGE']));
          expect((await store.status(id1))?.status).toBe('pending');

          // Alice approves; the agent waiting through the SDK gets the outcome. A later answer changes nothing.
          const waiting = client.waitForApproval(id1, { timeoutMs: 30_000, sinceMs: big.event_time_ms - 360_000 });
          await send(signedAnswer({ approval_id: id1, decision: 'approve', approver: 'alice', reason: 'customer verified', ts_ms: Date.now() }, alice.priv));
          expect(await waiting).toMatchObject({ approval_id: id1, status: 'approved', decision: 'approve', approver: 'alice', via: 'kafka', reason: 'customer verified' });
          await send(signedAnswer({ approval_id: id1, decision: 'deny', approver: 'alice', ts_ms: Date.now() }, alice.priv));
          // an agent that starts waiting after the outcome still finds it
          expect(await client.waitForApproval(id1, { timeoutMs: 30_000, sinceMs: big.event_time_ms - 360_000 })).toMatchObject({ status: 'approved' });

          // Over HTTP: an approver key answers; an agent-less unknown key 401, a clerk 403, a second answer 409.
          const viaHttp = await client.decide(call('process_refund', 700), { timeoutMs: 20_000 });
          const id2 = viaHttp.approval_id as string;
          await waitFor(async () => (await store.status(id2))?.status === 'pending', { timeoutMs: 20_000, message: 'request 2 stored' });
          const approvers = parseApproverRegistry(`approvers:\n  - { id: alice, api_keys: ["${apiKeyHash('alice-http-key')}"], roles: [{ role: supervisor, tenants: [acme] }] }\n  - { id: bob, api_keys: ["${apiKeyHash('bob-http-key')}"], roles: [clerk] }\n`, 'inline');
          const ingress = new HttpIngress(
            { host: '127.0.0.1', port: 0, maxBodyBytes: 65536 },
            {
              registry: () => createAgentRegistry([], 'ACL-2'),
              publish: async () => undefined,
              approvals: { approverOf: (key) => approvers.byApiKey(key)?.id, answer: (key, id, decision, reason) => answerOverHttp({ store, topics, approvers: () => approvers, producer }, key, id, decision, reason) },
            },
          );
          await ingress.ready();
          const port = await ingress.listen();
          const post = (key: string, id: string, decision: string) =>
            fetch(`http://127.0.0.1:${port}/v1/approvals/${id}/${decision}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'over HTTP' }) });
          try {
            expect((await post('nobody', id2, 'approve')).status).toBe(401);
            expect((await post('bob-http-key', id2, 'approve')).status).toBe(403);
            const ok = await post('alice-http-key', id2, 'deny');
            expect(ok.status).toBe(200);
            expect(await ok.json()).toMatchObject({ approval_id: id2, status: 'denied', approver: 'alice', via: 'http' });
            expect((await post('alice-http-key', id2, 'approve')).status).toBe(409);
          } finally {
            await ingress.close();
          }
          expect(await client.waitForApproval(id2, { timeoutMs: 30_000, sinceMs: viaHttp.event_time_ms - 360_000 })).toMatchObject({ status: 'denied', via: 'http' });

          // `steward deny ID --wait-ms`: the CLI signs, publishes and prints the outcome (exit 0: its own answer won).
          const viaCli = await client.decide(call('process_refund', 800), { timeoutMs: 20_000 });
          const id4 = viaCli.approval_id as string;
          await waitFor(async () => (await store.status(id4))?.status === 'pending', { timeoutMs: 20_000, message: 'request 4 stored' });
          const keyFile = join(dir, 'alice.pem');
          writeFileSync(keyFile, alice.priv, { mode: 0o600 });
          const printed: string[] = [];
          const write = process.stdout.write.bind(process.stdout);
          process.stdout.write = ((c: string | Uint8Array) => (printed.push(String(c)), true)) as typeof process.stdout.write;
          let code: number;
          try {
            code = await denyCli([id4, '--approver', 'alice', '--key', keyFile, '--reason', 'duplicate refund', '--wait-ms', '30000', '--topic-prefix', cfg.topics.prefix]);
          } finally {
            process.stdout.write = write;
          }
          expect(code).toBe(0);
          expect(JSON.parse(printed.at(-1)!)).toEqual({ approval_id: id4, status: 'denied', decision: 'deny', approver: 'alice', via: 'kafka' });

          // Timeout across a restart of every instance: stored, all stopped, deadline passes, two fresh instances race.
          const wire = await client.decide(call('wire_transfer', 50), { timeoutMs: 20_000 });
          const id3 = wire.approval_id as string;
          // Counted from the broker's append time of the trace (a few ms after the agent's own timestamp here).
          expect((wire.approval_deadline_ms as number) - wire.event_time_ms).toBeGreaterThanOrEqual(3000);
          expect((wire.approval_deadline_ms as number) - wire.event_time_ms).toBeLessThan(3000 + 10_000);
          await waitFor(async () => (await store.status(id3))?.status === 'pending', { timeoutMs: 20_000, message: 'request 3 stored' });
          for (const r of running) await r.stop();
          running = [];
          await waitFor(() => Date.now() > (wire.approval_deadline_ms as number) + 200, { timeoutMs: 20_000, intervalMs: 100, message: 'deadline passed while nothing ran' });
          expect((await store.status(id3))?.status).toBe('pending');
          running = await Promise.all([start(['approvals', 'sink']), start(['approvals'])]);
          expect(await client.waitForApproval(id3, { timeoutMs: 30_000, sinceMs: wire.event_time_ms - 360_000 })).toMatchObject({ approval_id: id3, status: 'timed_out', decision: 'deny', approver: null, via: 'timeout' });
          // Exactly once: one outcome message, its publication confirmed (the outbox is empty), and nothing more after further sweeps.
          await waitFor(async () => (await redis.zcard(`${redisPrefix}{ap}:outbox`)) === 0, { timeoutMs: 20_000, message: 'outcome publication confirmed' });
          await waitFor(() => outcomes(id3).length >= 1, { timeoutMs: 20_000, message: 'timeout outcome collected' });
          const swept = await store.claim(Date.now());
          expect(swept).toEqual({ due: [], unpublished: [] });
          expect(outcomes(id3)).toHaveLength(1);
          expect(outcomes(id1)).toHaveLength(1);
          expect(outcomes(id2)).toHaveLength(1);
          expect(outcomes(id4)).toHaveLength(1);

          // ClickHouse: the approvals table (pending rows replaced by outcomes) and the ledger's POLICY_DECISION entries.
          const ch = clickhouseClient(db.name);
          try {
            await waitFor(
              async () => {
                const rs = await ch.query({ query: "SELECT approval_id, status, approver, via FROM v_approvals WHERE status != 'pending' ORDER BY approval_id", format: 'JSONEachRow' });
                return ((await rs.json()) as unknown[]).length === 4;
              },
              { timeoutMs: 60_000, message: 'approval rows in ClickHouse' },
            );
            const rs = await ch.query({ query: 'SELECT approval_id, status, approver, via, tool, role FROM v_approvals ORDER BY approval_id', format: 'JSONEachRow' });
            const rows = (await rs.json()) as Record<string, string>[];
            expect(Object.fromEntries(rows.map((r) => [r.approval_id, [r.status, r.approver, r.via, r.tool, r.role]]))).toEqual({
              [id1]: ['approved', 'alice', 'kafka', 'process_refund', 'supervisor'],
              [id2]: ['denied', 'alice', 'http', 'process_refund', 'supervisor'],
              [id3]: ['timed_out', '', 'timeout', 'wire_transfer', 'supervisor'],
              [id4]: ['denied', 'alice', 'kafka', 'process_refund', 'supervisor'],
            });
            await waitFor(
              async () => {
                const l = await ch.query({ query: "SELECT entry_id FROM ledger WHERE entry_id LIKE 'ap:%'", format: 'JSONEachRow' });
                return ((await l.json()) as unknown[]).length >= 4;
              },
              { timeoutMs: 60_000, message: 'approval ledger entries' },
            );
            const l = await ch.query({ query: "SELECT entry_id, type, payload FROM ledger WHERE entry_id LIKE 'ap:%' ORDER BY entry_id", format: 'JSONEachRow' });
            const entries = (await l.json()) as { entry_id: string; type: string; payload: string }[];
            expect(entries.map((e) => e.entry_id).sort()).toEqual([`ap:${id1}`, `ap:${id2}`, `ap:${id3}`, `ap:${id4}`].sort());
            expect(entries.every((e) => e.type === 'POLICY_DECISION')).toBe(true);
            expect(JSON.parse(entries.find((e) => e.entry_id === `ap:${id3}`)!.payload)).toMatchObject({ source: 'approval', status: 'timed_out', decision: 'deny', via: 'timeout' });
          } finally {
            await ch.close();
          }
        } finally {
          for (const r of running) await r.stop().catch(() => undefined);
          await producer.disconnect();
          await client.close();
          await out.stop();
          await deleteRedisPrefix(redis, redisPrefix);
        }
      });
    });
    await redis.quit();
  }, 240_000);
});
