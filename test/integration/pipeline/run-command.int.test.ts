// `steward run` as a real child process: /healthz and /readyz, synchronous decisions, blueprint hot
// reload while running (an edited tripwire takes effect without a restart), /metrics counters, and a
// graceful SIGTERM (exit 0).
import { describe, it, expect } from 'vitest';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { StewardClient } from '../../../src/client/steward-client.js';
import { withPipelineEnv } from './harness.js';
import { deleteRedisPrefix, services, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('steward run', () => {
  it('serves health, decides, hot-reloads blueprints, exposes metrics and stops gracefully', async () => {
    const work = mkdtempSync(join(tmpdir(), 'steward-run-'));
    const bpDir = join(work, 'blueprints');
    cpSync(join(ROOT, 'blueprints'), bpDir, { recursive: true });
    const redisPrefix = uniqueRedisPrefix('run');
    const port = await freePort();
    try {
      await withPipelineEnv('pl-run', async ({ cfg, adapter }) => {
        const s = services();
        const cfgFile = join(work, 'steward.yaml');
        writeFileSync(
          cfgFile,
          [
            `kafka: { brokers: [${JSON.stringify(s.kafkaBrokers[0])}] }`,
            `schema_registry: { url: ${JSON.stringify(s.schemaRegistryUrl)} }`,
            `topics: { prefix: ${cfg.topics.prefix}, partitions: 3, reply_partitions: 4 }`,
            `redis: { url: ${JSON.stringify(s.redisUrl)}, key_prefix: ${JSON.stringify(redisPrefix)} }`,
            `blueprints: { dir: blueprints, agents: blueprints/agents.yaml }`,
            `consumer: { group_prefix: ${cfg.topics.prefix}, session_timeout_ms: 6000 }`,
            `observability: { port: ${port} }`,
            `log_level: warn`,
            // a trial run: its verdicts need not verify after a restart (steward run otherwise requires signing.key)
            `signing: { allow_ephemeral: true }`,
            '',
          ].join('\n'),
        );
        const env = { ...process.env };
        delete env.REDIS_URL; // the file's settings apply
        const child = spawn(process.execPath, ['--import', pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href, join(ROOT, 'src/cli/main.ts'), 'run', '--stages', 'tripwire,scorer,trust-debt', '--config', cfgFile], { cwd: work, env, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
        const client = new StewardClient({ kafka: adapter, topicPrefix: cfg.topics.prefix });
        const get = async (path: string) => {
          const r = await fetch(`http://127.0.0.1:${port}${path}`);
          return { status: r.status, body: await r.text() };
        };
        try {
          await waitFor(async () => {
            if (child.exitCode !== null) throw new Error(`steward run exited: ${stderr}`);
            return (await get('/healthz')).status === 200;
          }, { timeoutMs: 30000, message: 'healthz' });
          await waitFor(async () => (await get('/readyz')).status === 200, { timeoutMs: 30000, message: 'readyz' });
          const refund = (id: string) => ({ trace_id: `${cfg.topics.prefix}-${id}`, agent_id: 'support-1', timestamp: new Date().toISOString(), hook: 'tool_call', tool: 'issue_refund', args: { amount: 1500, order_id: 'ORD-9' } });
          const before = await client.decide(refund('before'), { timeoutMs: 10000 });
          expect(before.intervention).toBe('escalate'); // rule: refunds above $250 need a supervisor

          // Tighten the hard cap from 2000 to 1000 while running.
          const file = join(bpDir, 'support', 'refund_agent@1.0.yaml');
          writeFileSync(file, readFileSync(file, 'utf8').replace('"args.amount <= 2000"', '"args.amount <= 1000"'));
          await waitFor(async () => /steward_blueprint_reloads_total\{outcome="ok"\} [1-9]/.test((await get('/metrics')).body), { timeoutMs: 20000, message: 'reload' });
          const after = await client.decide(refund('after'), { timeoutMs: 10000 });
          expect(after.intervention).toBe('halt');
          expect(after.tripwires.find((t) => t.id === 'refund_hard_cap')?.fired).toBe(true);

          // An invalid edit is rejected and the last good set keeps serving.
          writeFileSync(file, readFileSync(file, 'utf8').replace('id: support/refund_agent@1.0', 'id: [broken'));
          await waitFor(async () => /steward_blueprint_reloads_total\{outcome="rejected"\} [1-9]/.test((await get('/metrics')).body), { timeoutMs: 20000, message: 'rejected reload' });
          expect((await client.decide(refund('still'), { timeoutMs: 10000 })).intervention).toBe('halt');

          const metrics = (await get('/metrics')).body;
          expect(metrics).toMatch(/steward_interventions_total\{stage="tripwire",intervention="halt"\} 2/);
          expect(metrics).toMatch(/steward_stage_latency_seconds_count\{stage="tripwire"\} [3-9]/);
          expect(metrics).toContain('steward_consumer_lag{');

          // agents.yaml hot reload: support-1 leaves the trusted registry, so it is an unknown agent (default
          // tier, global blueprints only) for the next trace; an invalid registry edit is rejected.
          const agentsFile = join(bpDir, 'agents.yaml');
          const agentsText = readFileSync(agentsFile, 'utf8');
          expect(after.blueprint).toMatch(/^support\/refund_agent/);
          writeFileSync(agentsFile, agentsText.replace(/ {2}- id: support-1[\s\S]*$/, ''));
          await waitFor(async () => /steward_agent_registry_reloads_total\{outcome="ok"\} [1-9]/.test((await get('/metrics')).body), { timeoutMs: 20000, message: 'registry reload' });
          const unknown = await client.decide(refund('unregistered'), { timeoutMs: 10000 });
          expect(unknown.blueprint).not.toMatch(/^support\//);
          expect(unknown.intervention).not.toBe('halt');
          writeFileSync(agentsFile, agentsText.replace('tier: GT-2', 'tier: ACL-99'));
          await waitFor(async () => /steward_agent_registry_reloads_total\{outcome="rejected"\} [1-9]/.test((await get('/metrics')).body), { timeoutMs: 20000, message: 'rejected registry reload' });
          expect((await client.decide(refund('still-unregistered'), { timeoutMs: 10000 })).blueprint).not.toMatch(/^support\//);
        } finally {
          await client.close();
          child.kill('SIGTERM');
        }
        expect(await exited).toBe(0);
      });
    } finally {
      const r = new Redis(services().redisUrl);
      await deleteRedisPrefix(r, redisPrefix);
      r.disconnect();
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
