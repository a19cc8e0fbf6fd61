/**
 * `replay export` over a ReplaySource: a source that holds what the stream records (traces as received,
 * PDP records, ledger, context versions, policy files, keys) — here read back from an eval bundle —
 * exports the same bytes, with task-io rebuilt by replaying the records.
 */
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval } from '../../../../src/cli/commands/eval.js';
import { readBundleDir, run as replay } from '../../../../src/cli/commands/replay.js';
import { exportReplayBundle, verifyReplayBundle, type BundleFiles, type BundleManifest, type ReplayRun, type ReplaySource } from '../../../../src/engine/acm/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';

const EXAMPLE = join(__dirname, '../../../../examples/refund-run');
const tmp = mkdtempSync(join(tmpdir(), 'acm-export-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const lines = (t: string | undefined) => (t ?? '').split('\n').filter(Boolean);

/** What a ClickHouse source would return for the run, rebuilt from a bundle. */
function sourceFrom(files: BundleFiles): ReplaySource {
  const m = JSON.parse(files.get('bundle.json')!) as BundleManifest;
  const requests = lines(files.get('policy/requests/requests.jsonl')).map((l) => JSON.parse(l));
  const traces = lines(files.get('engine-trace/traces.jsonl')).map((line, i) => {
    const trace = JSON.parse(line);
    const req = requests.find((r) => r.trace_line === i + 1);
    return { line, trace, now_ms: req?.now_ms ?? Date.parse(trace.timestamp) };
  });
  const dirFiles = (prefix: string) => [...files].filter(([p]) => p.startsWith(prefix)).map(([p, text]) => ({ name: p.slice(prefix.length), text }));
  const run: ReplayRun = {
    record: {
      run_id: m.run.id,
      agent_id: m.run.agent_id,
      tenant: m.run.tenant ?? '',
      traces,
      requests,
      responses: lines(files.get('policy/responses/responses.jsonl')).map((l) => JSON.parse(l)),
      ledger: lines(files.get('memory-ledger/ledger.jsonl')).map((l) => JSON.parse(l)),
      contexts: [...files].filter(([p]) => p.startsWith('context/')).map(([, t]) => {
        const c = JSON.parse(t);
        return { id: c.id, version: c.version, digest: c.digest, packet: c.packet, ...(c.trace_id !== null ? { trace_id: c.trace_id } : {}) };
      }),
    },
    policy: {
      blueprints: dirFiles('policy/blueprints/'),
      agents: files.get('policy/agents.yaml'),
      config: { ...defaultEngineConfig(), ...JSON.parse(files.get('policy/engine-config.json')!) },
      sheets: dirFiles('policy/verify/'),
      acm: JSON.parse(files.get('policy/acm-options.json')!),
    },
    keys: m.keys.map((k) => ({ kid: k.kid, public_key: k.public_key, signs: k.signs ?? [] })),
    engine: m.engine,
  };
  return { run: async (id) => (id === m.run.id ? run : undefined) };
}

describe('replay export', () => {
  it('exports the same bundle a ReplaySource describes, and it verifies', async () => {
    const dir = join(tmp, 'eval');
    expect(
      await runEval(
        { blueprints: join(EXAMPLE, 'blueprints'), input: join(EXAMPLE, 'trace.jsonl'), bundles: dir },
        { input: createReadStream(join(EXAMPLE, 'trace.jsonl')), out: () => undefined, err: () => undefined, stderrIsTty: false, llm: null },
      ),
    ).toBe(0);
    for (const run of ['run-2025-10-03-REFUND-001', 'run-2025-10-03-REFUND-002']) {
      const original = await readBundleDir(join(dir, run));
      const exported = await exportReplayBundle(sourceFrom(original), run);
      expect([...exported!.keys()].sort()).toEqual([...original.keys()].sort());
      for (const [p, t] of original) expect(exported!.get(p), p).toBe(t);
      expect(await verifyReplayBundle(exported!)).toEqual([]);
    }
  });

  it('steward replay export writes it to --out', async () => {
    const original = await readBundleDir(join(tmp, 'eval', 'run-2025-10-03-REFUND-001'));
    const out = join(tmp, 'exported');
    const msgs: string[] = [];
    const io = { out: (l: string) => void msgs.push(l), err: (l: string) => void msgs.push(l) };
    expect(await replay(['export', '--run', 'run-2025-10-03-REFUND-001', '--out', out], { io, source: async () => sourceFrom(original) })).toBe(0);
    expect(await replay(['verify', out], { io })).toBe(0);
    expect(msgs.filter((m) => !m.includes('file(s) written'))).toEqual([]);
  });
});
