/**
 * Offline replay round trip (docs/acm.md): `steward eval --bundles` on the refund example, then
 * `replay verify` passes; tampering with each kind of file and recomputing bundle.json is still named.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEval } from '../../../../src/cli/commands/eval.js';
import { readBundleDir, runReplayVerify, writeBundleDir } from '../../../../src/cli/commands/replay.js';
import { resealManifest, verifyReplayBundle, type BundleFiles } from '../../../../src/engine/acm/index.js';
import { entryHash, ed25519Signer } from '../../../../src/engine/ledger/crypto.js';
import type { LedgerEntry } from '../../../../src/engine/ledger/types.js';

const EXAMPLE = join(__dirname, '../../../../examples/refund-run');
const RUN1 = 'run-2025-10-03-REFUND-001';
const RUN2 = 'run-2025-10-03-REFUND-002';
let dir: string;
const lines: string[] = [];
const bundles: Record<string, BundleFiles> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acm-bundles-'));
  const code = await runEval(
    { blueprints: join(EXAMPLE, 'blueprints'), input: join(EXAMPLE, 'trace.jsonl'), bundles: dir },
    { input: createReadStream(join(EXAMPLE, 'trace.jsonl')), out: (l) => void lines.push(l), err: () => undefined, stderrIsTty: false, llm: null },
  );
  expect(code).toBe(0);
  for (const r of [RUN1, RUN2]) bundles[r] = await readBundleDir(join(dir, r));
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Edits one file, recomputes bundle.json, and returns the problem lines. */
async function tamper(run: string, path: string, edit: (text: string) => string, keys?: Record<string, string>): Promise<string[]> {
  const files = new Map(bundles[run]);
  const before = files.get(path);
  expect(before, path).toBeDefined();
  const after = edit(before!);
  expect(after, `the edit of ${path} changed nothing`).not.toBe(before);
  files.set(path, after);
  const problems = await verifyReplayBundle(resealManifest(files), { keys });
  return problems.map((p) => `${p.path}: ${p.code}: ${p.message}`);
}

const editJsonl = (match: string, f: (o: any) => void) => (text: string) =>
  text
    .split('\n')
    .map((l) => (l.includes(match) ? JSON.stringify(((o) => (f(o), o))(JSON.parse(l))) : l))
    .join('\n');

describe('replay round trip', () => {
  it('eval answers the forbidden branch and the unreached task with block, and names the violation', () => {
    const out = lines.map((l) => JSON.parse(l));
    const branch = out.find((o) => o.trace_id === 'refund-09');
    expect(branch.intervention).toBe('block');
    expect(branch.acm.violations[0].code).toBe('STEWARD_ACM_FORBIDDEN_BRANCH');
    // Trust debt moves by the combined answer (block: +0.15).
    expect(branch.trust_debt.after - branch.trust_debt.before).toBeCloseTo(0.15, 6);
    expect(out.find((o) => o.trace_id === 'refund-10').acm.violations[0].code).toBe('STEWARD_ACM_UNREACHED_TASK');
  });

  it('writes the §17 layout with every directory filled', () => {
    const paths = [...bundles[RUN1]!.keys()];
    for (const d of ['bundle.json', 'context/', 'memory-ledger/', 'policy/requests/', 'policy/responses/', 'engine-trace/', 'task-io/', 'planner/']) {
      expect(paths.some((p) => p.startsWith(d)), d).toBe(true);
    }
  });

  it('verify passes on untouched bundles (exit 0, no output)', async () => {
    for (const r of [RUN1, RUN2]) {
      const out: string[] = [];
      expect(await runReplayVerify(join(dir, r), undefined, { out: (l) => void out.push(l), err: (l) => void out.push(l) })).toBe(0);
      expect(out).toEqual([]);
    }
  });

  it('a changed file without a new bundle.json is a hash mismatch', async () => {
    const files = new Map(bundles[RUN1]);
    files.set('task-io/t1.json', files.get('task-io/t1.json')!.replace('180', '181'));
    const problems = await verifyReplayBundle(files);
    expect(problems.map((p) => `${p.path}: ${p.code}`)).toContain('task-io/t1.json: STEWARD_REPLAY_FILE_HASH');
  });

  const cases: [string, string, (t: string) => string, RegExp][] = [
    ['engine-trace (a recorded output)', 'engine-trace/traces.jsonl', (t) => t.replace('"risk":"LOW"', '"risk":"HIGH"'), /^engine-trace\/traces\.jsonl:8: STEWARD_REPLAY_TRACE_DIGEST/],
    ['memory-ledger (a forbidden branch made allowed)', 'memory-ledger/ledger.jsonl', editJsonl('"bt:refund-09#', (o) => (o.payload.allowed = true)), /^memory-ledger\/ledger\.jsonl:11: STEWARD_REPLAY_LEDGER_EDITED/],
    ['policy request (a recorded trust debt)', 'policy/requests/requests.jsonl', editJsonl('"refund-09"', (o) => (o.trust_debt.debt = 0.9)), /^policy\/requests\/requests\.jsonl:9: STEWARD_REPLAY_REQUEST_DIGEST/],
    ['policy response (block turned ok)', 'policy/responses/responses.jsonl', editJsonl('"refund-09"', (o) => ((o.intervention = 'ok'), (o.approved = true))), /^policy\/responses\/responses\.jsonl:9: STEWARD_REPLAY_(RESPONSE_DIGEST|DECISION)/],
    ['context packet (a fact)', 'context/ctx-2025-10-03-001@1.json', (t) => t.replace('"region": "EU"', '"region": "US"'), /^context\/ctx-2025-10-03-001@1\.json: STEWARD_REPLAY_CONTEXT_DIGEST/],
    ['task-io (an output)', 'task-io/t3.json', (t) => t.replace('"LOW"', '"HIGH"'), /^task-io\/t3\.json: STEWARD_REPLAY_TASK_IO/],
    ['planner (a rationale)', 'planner/plan-1.json', (t) => t.replace('Minimize cost', 'Maximize cost'), /^planner\/plan-1\.json: STEWARD_REPLAY_PLANNER/],
    ['blueprint (a limit)', 'policy/blueprints/refund_run@1.0.yaml', (t) => t.replace('<= 500', '<= 50'), /^policy\/: STEWARD_REPLAY_POLICY_DIGEST/],
    ['verification sheet', 'policy/verify/refund.verify.yaml', (t) => t.replace('output.amount > 0', 'output.amount > 1000'), /^policy\/: STEWARD_REPLAY_POLICY_DIGEST/],
  ];
  for (const [what, path, edit, want] of cases) {
    it(`tampering with ${what} and recomputing bundle.json is named`, async () => {
      const problems = await tamper(RUN1, path, edit);
      expect(problems.some((p) => want.test(p)), problems.join('\n')).toBe(true);
    });
  }

  it('a blueprint change is also caught by re-evaluation', async () => {
    const problems = await tamper(RUN2, 'policy/blueprints/refund_run@1.0.yaml', (t) => t.replace('<= 500', '<= 5000'));
    expect(problems.some((p) => /^policy\/responses\/responses\.jsonl:\d+: STEWARD_REPLAY_DECISION/.test(p)), problems.join('\n')).toBe(true);
  });

  it('bundle.json naming another run, agent or tenant is caught against the signed ledger', async () => {
    for (const edit of [(m: any) => (m.run.tenant = 'other'), (m: any) => (m.run.agent_id = 'x'), (m: any) => (m.run.id = 'run-x')]) {
      const problems = await tamper(RUN1, 'bundle.json', (t) => {
        const m = JSON.parse(t);
        edit(m);
        return JSON.stringify(m);
      });
      expect(problems.some((p) => p.startsWith('bundle.json: STEWARD_REPLAY_MANIFEST: run ')), problems.join('\n')).toBe(true);
    }
  });

  it('a ledger entry re-signed with a key the bundle does not trust is an unknown-key problem', async () => {
    const other = ed25519Signer(generateKeyPairSync('ed25519').privateKey);
    const problems = await tamper(
      RUN1,
      'memory-ledger/ledger.jsonl',
      editJsonl('"bt:refund-09#', (o: LedgerEntry) => {
        o.payload.allowed = true;
        o.kid = other.kid;
        o.hash = entryHash(o);
        o.signature = other.sign(o.hash);
      }),
    );
    expect(problems.some((p) => /^memory-ledger\/ledger\.jsonl:11: STEWARD_REPLAY_LEDGER_UNKNOWN_KEY/.test(p)), problems.join('\n')).toBe(true);
  });

  it('with --keys only those keys are trusted', async () => {
    const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const problems = await verifyReplayBundle(bundles[RUN1]!, { keys: { stranger: other } });
    expect(problems.some((p) => p.code === 'STEWARD_REPLAY_LEDGER_UNKNOWN_KEY')).toBe(true);
    expect(problems.some((p) => p.code === 'STEWARD_REPLAY_UNKNOWN_KEY')).toBe(true);
  });

  it('an added request or response line is an orphan', async () => {
    for (const path of ['policy/requests/requests.jsonl', 'policy/responses/responses.jsonl']) {
      const problems = await tamper(RUN1, path, (t) => t + t.split('\n')[0] + '\n');
      expect(problems.some((p) => p.startsWith(`${path}:20: STEWARD_REPLAY_ORPHAN`)), problems.join('\n')).toBe(true);
    }
  });

  it('a deleted file with a resealed manifest is named', async () => {
    const files = new Map(bundles[RUN1]);
    files.delete('task-io/t5.json');
    const problems = await verifyReplayBundle(resealManifest(files));
    expect(problems.map((p) => `${p.path}: ${p.code}`)).toContain('task-io/t5.json: STEWARD_REPLAY_TASK_IO');
  });

  it('records of the wrong shape are reported, never a crash', async () => {
    for (const path of ['engine-trace/traces.jsonl', 'memory-ledger/ledger.jsonl', 'policy/requests/requests.jsonl', 'policy/responses/responses.jsonl']) {
      for (const junk of ['5', 'null', '{}', '[]', '"x"', '{"seq":1,"trace_id":"refund-01","blueprint":{}}']) {
        const files = new Map(bundles[RUN1]);
        const lines = files.get(path)!.split('\n');
        lines[2] = junk;
        files.set(path, lines.join('\n'));
        const problems = await verifyReplayBundle(resealManifest(files));
        expect(problems.length, `${path} ← ${junk}`).toBeGreaterThan(0);
        expect(problems.some((p) => p.code === 'STEWARD_REPLAY_INTERNAL'), `${path} ← ${junk}: ${problems.map((p) => p.message).join('; ')}`).toBe(false);
      }
    }
    for (const path of ['bundle.json', 'policy/engine-config.json', 'policy/acm-options.json', 'context/ctx-2025-10-03-001@1.json']) {
      for (const junk of ['5', 'null', '[]', '{"files": 3}']) {
        const files = new Map(bundles[RUN1]);
        files.set(path, junk);
        const problems = await verifyReplayBundle(path === 'bundle.json' ? files : resealManifest(files));
        expect(problems.length, `${path} ← ${junk}`).toBeGreaterThan(0);
      }
    }
  });

  it('a bundle written back to disk verifies the same', async () => {
    const d = mkdtempSync(join(tmpdir(), 'acm-copy-'));
    try {
      await writeBundleDir(d, bundles[RUN2]!);
      expect(await runReplayVerify(d, undefined, { out: () => undefined, err: () => undefined })).toBe(0);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
