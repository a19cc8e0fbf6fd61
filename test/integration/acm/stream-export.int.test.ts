// Replay export from the live stream (docs/acm.md "In the stream", issue #21's last acceptance item): the refund
// example runs go through the real stages — tripwire, scorer, sink — on real Kafka, registry, Redis and ClickHouse;
// the sink joins each run event's pending record (tripwire) and answer (scorer) into acm_run_records and the run's own
// chain; `steward replay export` writes each run's bundle from ClickHouse and `steward replay verify` passes (exit 0);
// a tampered, resealed file is named; the bundles equal what `steward eval --bundles` writes for the same trace bytes,
// file for file, except what differs by nature (signatures, hashes and digests under other keys, verdict times and
// latency, key ids); the same trace bytes again are recorded once. Runs with `consumer.scorer_input` scoring and join.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runEval } from '../../../src/cli/commands/eval.js';
import { readBundleDir, run as replay, writeBundleDir } from '../../../src/cli/commands/replay.js';
import { ledgerSignerFrom } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startPipeline } from '../../../src/process/pipeline.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { resealManifest, type BundleFiles } from '../../../src/engine/acm/index.js';
import { Ed25519Signer } from '../../../src/engine/verdict/sign.js';
import type { Trace } from '../../../src/engine/types.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, services, uniqueRedisPrefix, waitFor, withClickHouseDatabase } from '../setup/helpers.js';

const BLUEPRINTS = 'examples/refund-run/blueprints';
const lines = readFileSync('examples/refund-run/trace.jsonl', 'utf8').split('\n').filter((l) => l.trim());
const RUNS = ['run-2025-10-03-REFUND-001', 'run-2025-10-03-REFUND-002', 'run-2025-10-03-REFUND-003'];
const tmp = () => mkdtempSync(join(tmpdir(), 'acm-stream-export-'));
const jsonl = (t: string | undefined) => (t ?? '').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

const io = () => {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) } };
};

const omit = (o: Record<string, any>, keys: string[]) => Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));

/**
 * A bundle file without what differs by nature between two deployments deciding the same traces: signatures, hashes
 * and the digests over signed bytes (other keys), key ids, the verdict's issue time and latency, the engine version;
 * and the trust debt a request read: eval moves it synchronously after each event, the stream's trust-debt stage
 * after the fact (not started here: every stream request reads 0), so the request digests follow.
 */
function comparable(path: string, text: string): unknown {
  if (path === 'bundle.json') {
    const m = JSON.parse(text) as Record<string, any>;
    return { ...omit(m, ['files', 'keys', 'engine']), files: (m.files as { path: string }[]).map((f) => f.path) };
  }
  if (path === 'memory-ledger/ledger.jsonl') {
    return jsonl(text).map((e) => ({ ...omit(e, ['seq', 'prev_hash', 'hash', 'signature', 'kid']), payload: omit(e.payload, ['request_digest', 'response_digest', 'policy_digest', 'engine_version']) }));
  }
  if (path === 'policy/responses/responses.jsonl') {
    return jsonl(text).map((r) => ({ ...r, verdict: { ...omit(r.verdict, ['signature', 'timestamp', 'issued_at']), metadata: omit(r.verdict.metadata ?? {}, ['latency_ms', 'engine_version']) } }));
  }
  if (path === 'policy/requests/requests.jsonl') return jsonl(text).map((r) => omit(r, ['trust_debt']));
  return text;
}

async function evalBundles(dir: string): Promise<void> {
  const code = await runEval({ blueprints: BLUEPRINTS, input: '-', bundles: dir }, { input: Readable.from([lines.join('\n') + '\n']), out: () => undefined, err: () => undefined, stderrIsTty: false, llm: null });
  expect(code).not.toBe(2);
}

describe.each(['scoring', 'join'] as const)('replay export from the stream, scorer_input %s (real Kafka, registry, Redis, ClickHouse)', (scorerInput) => {
  it('the refund runs through tripwire, scorer and sink export from ClickHouse, verify, name a tampered file, equal eval --bundles, and record a redelivery once', async () => {
    const dir = tmp();
    const evalDir = join(dir, 'eval');
    await evalBundles(evalDir);
    const redisPrefix = uniqueRedisPrefix('acm-export');
    const ledgerKeys = generateKeyPairSync('ed25519');
    const ledgerSigner = ledgerSignerFrom(ledgerKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    const verdictPem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const verdictSigner = Ed25519Signer.fromPem(verdictPem, 'verdict-key');
    const keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ [ledgerSigner.kid]: ledgerKeys.publicKey.export({ type: 'spki', format: 'pem' }).toString(), [verdictSigner.kid]: verdictSigner.publicKeyPem() }));
    try {
      await withClickHouseDatabase(async (db) => {
        await withPipelineEnv('pl-acm-export', async ({ cfg: base, topics, adapter }) => {
          const cfg = pipelineConfig(base.topics.prefix, {
            blueprints: { dir: BLUEPRINTS, watch: false },
            redis: { key_prefix: redisPrefix },
            clickhouse: { database: db.name },
            consumer: { group_prefix: base.consumer.groupPrefix, scorer_input: scorerInput },
            signing: { key: verdictPem, key_id: 'verdict-key' },
            trust_debt: { audit_sweep_interval_ms: 0 },
          });
          const logger = quietLogger();
          const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer'], logger);
          const pipe = await startPipeline(cfg, ['tripwire', 'scorer', 'sink'], { ...rt.deps, startSink: () => startSinkFromConfig(cfg, logger, ledgerSigner) }, { logger });
          const out = await new Collector(adapter, [topics.decisions, topics.dlq]).start();
          const producer = await adapter.producer();
          const redis = redisClient();
          const count = async (sql: string) => Number((await (await db.client.query({ query: sql, format: 'JSONEachRow' })).json<{ n: string }>())[0]?.n ?? 0);
          try {
            // One at a time, as eval reads them: an approver's event (another key, maybe another partition) is decided before the branch after it.
            for (const line of lines) {
              const t = JSON.parse(line) as Trace;
              await producer.send([{ topic: topics.traces, messages: [{ key: t.agent_id, value: Buffer.from(line) }] }]);
              await waitFor(() => out.byId(topics.decisions).has(t.trace_id), { timeoutMs: 20_000, message: `decision of ${t.trace_id}` });
            }
            expect(out.on(topics.dlq)).toEqual([]);
            const want = new Map(await Promise.all(RUNS.map(async (r) => [r, await readBundleDir(join(evalDir, r))] as const)));
            const events = (r: string) => jsonl(want.get(r)!.get('policy/requests/requests.jsonl')).length;
            const responses = (r: string) => count(`SELECT count() AS n FROM acm_run_records FINAL WHERE run_id = '${r}' AND kind = 'response'`);
            await waitFor(async () => (await Promise.all(RUNS.map(async (r) => (await responses(r)) === events(r)))).every(Boolean), { timeoutMs: 60_000, message: 'every decided event of the runs recorded in ClickHouse' });
            // The sink inserts an event's records before its chain entries (a failed insert in between is repaired by
            // the retried batch), so the last events' entries may land just after their records: wait for the chains too.
            const wantEntries = (r: string) => jsonl(want.get(r)!.get('memory-ledger/ledger.jsonl')).length;
            const chained = (r: string) => count(`SELECT uniqExact(entry_id) AS n FROM acm_ledger WHERE run_id = '${r}'`);
            await waitFor(async () => (await Promise.all(RUNS.map(async (r) => (await chained(r)) === wantEntries(r)))).every(Boolean), { timeoutMs: 60_000, message: 'every run chain entry in ClickHouse' });

            const exported = new Map<string, BundleFiles>();
            for (const runId of RUNS) {
              const outDir = join(dir, 'export', runId);
              const x = io();
              const code = await replay(['export', '--run', runId, '--out', outDir, '--url', services().clickhouseUrl, '--database', db.name, '--blueprints', BLUEPRINTS, '--keys', keysFile], { io: x.io });
              expect(code, x.err.join('\n')).toBe(0);
              const v = io();
              expect(await replay(['verify', outDir, '--keys', keysFile], { io: v.io }), v.out.join('\n')).toBe(0);
              expect(v.out).toEqual([]);
              const files = await readBundleDir(outDir);
              exported.set(runId, files);
              // File for file as eval --bundles wrote it, modulo what differs by nature.
              const offline = want.get(runId)!;
              expect([...files.keys()].sort(), runId).toEqual([...offline.keys()].sort());
              for (const [path, text] of offline) expect(comparable(path, files.get(path)!), `${runId}: ${path}`).toEqual(comparable(path, text));
              for (const kind of ['engine-trace/', 'task-io/', 'planner/']) expect([...files.keys()].some((p) => p.startsWith(kind)), `${runId}: ${kind}`).toBe(true);
            }

            // One file tampered with, bundle.json recomputed: verify names the file.
            const files = new Map(exported.get(RUNS[0]!)!);
            const path = 'policy/requests/requests.jsonl';
            files.set(path, files.get(path)!.replace('"orderId":"O123"', '"orderId":"O999"'));
            expect(files.get(path)).not.toBe(exported.get(RUNS[0]!)!.get(path));
            const tampered = join(dir, 'tampered');
            await writeBundleDir(tampered, resealManifest(files));
            const v = io();
            expect(await replay(['verify', tampered, '--keys', keysFile], { io: v.io })).toBe(1);
            expect(v.out.some((l) => l.startsWith(`${path}:`)), v.out.join('\n')).toBe(true);
            expect(v.out.every((l) => !l.startsWith('bundle.json: STEWARD_REPLAY_FILE')), v.out.join('\n')).toBe(true);

            // A redelivery (the same trace bytes again) is recorded once: no second trace, request or chain entry.
            const last = lines.filter((l) => l.includes(RUNS[0]!)).at(-1)!;
            const rows = () => count(`SELECT count() AS n FROM acm_run_records FINAL WHERE run_id = '${RUNS[0]}' AND kind IN ('trace', 'request', 'response')`);
            const entries = () => count(`SELECT count() AS n FROM acm_ledger WHERE run_id = '${RUNS[0]}'`);
            const [rowsBefore, entriesBefore] = [await rows(), await entries()];
            const decisionsBefore = out.on(topics.decisions).length;
            await producer.send([{ topic: topics.traces, messages: [{ key: 'refund-agent-1', value: Buffer.from(last) }] }]);
            await waitFor(() => out.on(topics.decisions).length > decisionsBefore, { timeoutMs: 20_000, message: 'the redelivered trace decided again' });
            await new Promise((r) => setTimeout(r, 3000)); // a second record of it would have landed by now
            expect(await rows()).toBe(rowsBefore);
            expect(await entries()).toBe(entriesBefore);
            const again = join(dir, 'again');
            expect(await replay(['export', '--run', RUNS[0]!, '--out', again, '--url', services().clickhouseUrl, '--database', db.name, '--blueprints', BLUEPRINTS, '--keys', keysFile], { io: io().io })).toBe(0);
            const a = await readBundleDir(again);
            for (const [p, text] of exported.get(RUNS[0]!)!) expect(a.get(p), p).toBe(text);
          } finally {
            await producer.disconnect();
            await out.stop();
            await pipe.stop();
            await rt.close();
            await deleteRedisPrefix(redis, redisPrefix);
            await redis.quit();
          }
        });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
