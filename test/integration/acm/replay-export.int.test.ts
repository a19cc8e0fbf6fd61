// `steward replay export` from ClickHouse (docs/acm.md "Replay bundles"): the refund example's runs, as
// `steward eval --bundles` collects them, stored in a real ClickHouse (acm_run_records, acm_ledger: what the
// stream writes), exported by the CLI, are the eval bundles byte for byte, verify (exit 0), and a tampered,
// resealed file is named. The stream writing these rows itself: stream-export.int.test.ts (docs/acm.md "Export from the stream").
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { storeRunRecord } from '../../../src/adapters/clickhouse/replay-source.js';
import { runEval } from '../../../src/cli/commands/eval.js';
import { readBundleDir, run as replay, writeBundleDir } from '../../../src/cli/commands/replay.js';
import { resealManifest, type BundleFiles, type BundleManifest, type RunRecord } from '../../../src/engine/acm/index.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const BLUEPRINTS = 'examples/refund-run/blueprints';
const tmp = mkdtempSync(join(tmpdir(), 'acm-export-ch-'));
const lines = (t: string | undefined) => (t ?? '').split('\n').filter(Boolean);

/** A run as a stage collects it (RunCollector's RunRecord), read back from its eval bundle. */
function recordOf(files: BundleFiles): RunRecord {
  const m = JSON.parse(files.get('bundle.json')!) as BundleManifest;
  const requests = lines(files.get('policy/requests/requests.jsonl')).map((l) => JSON.parse(l));
  return {
    run_id: m.run.id,
    agent_id: m.run.agent_id,
    tenant: m.run.tenant ?? '',
    traces: lines(files.get('engine-trace/traces.jsonl')).map((line, i) => ({ line, trace: JSON.parse(line), now_ms: requests.find((r) => r.trace_line === i + 1)?.now_ms ?? 0 })),
    requests,
    responses: lines(files.get('policy/responses/responses.jsonl')).map((l) => JSON.parse(l)),
    ledger: lines(files.get('memory-ledger/ledger.jsonl')).map((l) => JSON.parse(l)),
    contexts: [...files]
      .filter(([p]) => p.startsWith('context/'))
      .map(([, t]) => {
        const c = JSON.parse(t);
        return { id: c.id, version: c.version, digest: c.digest, packet: c.packet, ...(c.trace_id !== null ? { trace_id: c.trace_id } : {}) };
      }),
  };
}

const io = () => {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) } };
};

describe('steward replay export from ClickHouse (real ClickHouse)', () => {
  let store: ClickHouseStore;
  const evalDir = join(tmp, 'eval');
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_replay_export') });
    await migrate(store);
    const input = readFileSync('examples/refund-run/trace.jsonl', 'utf8');
    const code = await runEval({ blueprints: BLUEPRINTS, input: '-', bundles: evalDir }, { input: Readable.from([input]), out: () => undefined, err: () => undefined, stderrIsTty: false, llm: null });
    expect(code).not.toBe(2);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('exports every run as eval --bundles wrote it; the export verifies; a tampered, resealed file is named', async () => {
    const runs = ['run-2025-10-03-REFUND-001', 'run-2025-10-03-REFUND-002', 'run-2025-10-03-REFUND-003'];
    const bundles = new Map(await Promise.all(runs.map(async (r) => [r, await readBundleDir(join(evalDir, r))] as const)));
    for (const files of bundles.values()) expect(files.size).toBeGreaterThan(5);
    for (const files of bundles.values()) await storeRunRecord(store, recordOf(files), 1);
    // A redelivered copy of the records changes nothing (FINAL collapses it).
    await storeRunRecord(store, recordOf(bundles.get(runs[0]!)!), 2);
    const manifest = JSON.parse(bundles.get(runs[0]!)!.get('bundle.json')!) as BundleManifest;
    const keysFile = join(tmp, 'keys.json');
    writeFileSync(keysFile, JSON.stringify(Object.fromEntries(manifest.keys.map((k) => [k.kid, k.public_key]))));

    for (const runId of runs) {
      const out = join(tmp, 'export', runId);
      const x = io();
      const code = await replay(['export', '--run', runId, '--out', out, '--url', services().clickhouseUrl, '--database', store.database, '--blueprints', BLUEPRINTS, '--keys', keysFile], { io: x.io });
      expect(code, x.err.join('\n')).toBe(0);
      const exported = await readBundleDir(out);
      const offline = bundles.get(runId)!;
      // File for file, byte for byte: nothing differs, not even bundle.json.
      expect([...exported.keys()].sort()).toEqual([...offline.keys()].sort());
      for (const [path, text] of offline) expect(exported.get(path), `${runId}: ${path}`).toBe(text);
      const v = io();
      expect(await replay(['verify', out], { io: v.io }), v.out.join('\n')).toBe(0);
      expect(v.out).toEqual([]);
    }

    // Tamper with one exported file and recompute bundle.json: verify names the file.
    const dir = join(tmp, 'export', runs[0]!);
    const files = await readBundleDir(dir);
    const path = [...files.keys()].find((p) => p.startsWith('task-io/'))!;
    files.set(path, files.get(path)!.replace('"done"', '"failed"'));
    const tampered = join(tmp, 'tampered');
    await writeBundleDir(tampered, resealManifest(files));
    const v = io();
    expect(await replay(['verify', tampered], { io: v.io })).toBe(1);
    expect(v.out.some((l) => l.startsWith(`${path}: `))).toBe(true);
    expect(v.out.every((l) => !l.startsWith('bundle.json: STEWARD_REPLAY_FILE'))).toBe(true);

    // An unknown run is not an empty bundle.
    const u = io();
    expect(await replay(['export', '--run', 'no-such-run', '--out', join(tmp, 'none'), '--url', services().clickhouseUrl, '--database', store.database, '--blueprints', BLUEPRINTS, '--keys', keysFile], { io: u.io })).toBe(1);
    expect(u.err.join('\n')).toMatch(/unknown run no-such-run/);
  });
});
