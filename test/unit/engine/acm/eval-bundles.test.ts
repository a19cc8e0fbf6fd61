/** `steward eval --bundles` with bad input, and the `steward replay` command line. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval } from '../../../../src/cli/commands/eval.js';
import { parseKeysFile, run as replay } from '../../../../src/cli/commands/replay.js';

const BLUEPRINTS = join(__dirname, '../../../../examples/refund-run/blueprints');
const tmp = mkdtempSync(join(tmpdir(), 'acm-eval-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ev = (n: number, hook: string, f: Record<string, unknown>) => JSON.stringify({ trace_id: `q-${n}`, agent_id: 'refund-agent-1', timestamp: `2026-01-01T00:00:0${n}Z`, hook, run: { runId: 'run-bad' }, ...f });

async function evalLines(lines: string[], bundles: string): Promise<{ code: number; out: any[]; err: string[] }> {
  const out: any[] = [];
  const err: string[] = [];
  const code = await runEval(
    { blueprints: BLUEPRINTS, input: '-', bundles },
    { input: Readable.from([lines.join('\n') + '\n']), out: (l) => void out.push(JSON.parse(l)), err: (l) => void err.push(l), stderrIsTty: false, llm: null },
  );
  return { code, out, err };
}

const io = () => {
  const lines: string[] = [];
  return { lines, io: { out: (l: string) => void lines.push(l), err: (l: string) => void lines.push(l) } };
};

describe('eval --bundles with bad input', () => {
  it('a plan with a cycle or a live source is an error line with code and path; the run stays verifiable', async () => {
    const dir = join(tmp, 'b1');
    const { code, out } = await evalLines(
      [
        ev(1, 'context.packet', { context: { id: 'c1', sources: ['https://crm.example.com/live'], facts: {} } }),
        ev(2, 'context.packet', { context: { id: 'c1', sources: ['kb-snap://ok'], facts: {} } }),
        ev(3, 'plan', { goal: { id: 'G' }, selection: { method: 'llm', chosenPlanId: 'p' }, plans: [{ id: 'p', contextRef: 'c1', tasks: [{ id: 't1' }, { id: 't2' }], edges: [{ from: 't1', to: 't2' }, { from: 't2', to: 't1' }] }] }),
        ev(4, 'plan', { goal: { id: 'G' }, selection: { method: 'llm', chosenPlanId: 'p' }, plans: [{ id: 'p', contextRef: 'c1', tasks: [{ id: 't1' }, { id: 't2' }], edges: [{ from: 't1', to: 't2', guard: '$t2.x == 1' }] }] }),
        ev(5, 'task.pre', { task: { id: 't1' } }),
      ],
      dir,
    );
    expect(code).toBe(1);
    expect(out[0].error.code).toBe('STEWARD_ACM_SNAPSHOT');
    expect(out[0].error.message).toContain('$.context.sources[0]');
    expect(out[2].error).toMatchObject({ code: 'STEWARD_ACM_PLAN_CYCLE' });
    expect(out[2].error.message).toContain('$.plans[0].edges[1]');
    expect(out[3].error).toMatchObject({ code: 'STEWARD_ACM_GUARD_UNRECORDED' });
    expect(out[3].error.message).toContain('$.plans[0].edges[0].guard@0');
    expect(out[4]).toMatchObject({ intervention: 'block', acm: { violations: [{ code: 'STEWARD_ACM_NO_PLAN' }] } });
    // Nothing of the run is lost: the rejected traces are in engine-trace/, and the bundle verifies.
    expect(readFileSync(join(dir, 'run-bad/engine-trace/traces.jsonl'), 'utf8').split('\n').filter(Boolean)).toHaveLength(5);
    const v = io();
    expect(await replay(['verify', join(dir, 'run-bad')], { io: v.io })).toBe(0);
    expect(v.lines).toEqual([]);
  });
});

describe('steward replay', () => {
  it('bad arguments exit 2', async () => {
    for (const argv of [[], ['verify'], ['verify', 'a', 'b'], ['verify', 'a', '--nope'], ['export', '--run', 'r'], ['frobnicate']]) {
      expect(await replay(argv, { io: io().io }), argv.join(' ')).toBe(2);
    }
    expect(await replay(['verify', join(tmp, 'missing')], { io: io().io })).toBe(2);
  });

  it('export from ClickHouse without public keys for the bundle says so (exit 2); with a source it writes the bundle', async () => {
    const a = io();
    const env = { key: process.env.STEWARD_SIGNING_KEY, ledger: process.env.STEWARD_LEDGER_KEY };
    delete process.env.STEWARD_SIGNING_KEY;
    delete process.env.STEWARD_LEDGER_KEY;
    try {
      expect(await replay(['export', '--run', 'r', '--out', join(tmp, 'x'), '--blueprints', 'examples/refund-run/blueprints'], { io: a.io })).toBe(2);
    } finally {
      if (env.key !== undefined) process.env.STEWARD_SIGNING_KEY = env.key;
      if (env.ledger !== undefined) process.env.STEWARD_LEDGER_KEY = env.ledger;
    }
    expect(a.lines.join('\n')).toMatch(/no public keys for the bundle/);
    const b = io();
    expect(await replay(['export', '--run', 'nope', '--out', join(tmp, 'x')], { io: b.io, source: async () => ({ run: async () => undefined }) })).toBe(1);
  });

  it('--keys takes JSON {kid: PEM} or PEM public keys', () => {
    const pem = '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n';
    const byPem = parseKeysFile(pem);
    expect(Object.keys(byPem)).toHaveLength(1);
    expect(Object.keys(byPem)[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(parseKeysFile(JSON.stringify({ k1: pem }))).toEqual({ k1: pem });
    expect(() => parseKeysFile('nothing')).toThrow();
    writeFileSync(join(tmp, 'keys.pem'), pem);
  });
});

describe('acm.yaml', () => {
  it('unknown keys and interventions are errors (exit 2), not silently the defaults', async () => {
    const { cpSync } = await import('node:fs');
    const bp = join(tmp, 'bp-bad-options');
    cpSync(BLUEPRINTS, bp, { recursive: true });
    writeFileSync(join(bp, 'acm.yaml'), 'allowreplan: true\non: { forbidden_branch: deny }\n');
    const err: string[] = [];
    const code = await runEval({ blueprints: bp, input: '-', bundles: join(tmp, 'b2') }, { input: Readable.from(['']), out: () => undefined, err: (l) => void err.push(l), stderrIsTty: false, llm: null });
    expect(code).toBe(2);
    expect(err.join('\n')).toMatch(/\$\.allowreplan: STEWARD_ACM_SCHEMA: unknown field/);
    expect(err.join('\n')).toMatch(/\$\.on\.forbidden_branch: STEWARD_ACM_SCHEMA: must be one of/);
  });
});

describe('redelivery', () => {
  it('the same line twice gets the same answer and is recorded once; the bundle verifies', async () => {
    const lines = readFileSync(join(BLUEPRINTS, '../trace.jsonl'), 'utf8').split('\n').filter(Boolean);
    const branch = lines.findIndex((l) => l.includes('"refund-09"'));
    lines.splice(branch + 1, 0, lines[branch]!);
    const dir = join(tmp, 'b3');
    const { code, out } = await evalLines(lines, dir);
    expect(code).toBe(0);
    expect(out.filter((o) => o.trace_id === 'refund-09').map((o) => o.intervention)).toEqual(['block', 'block']);
    const v = io();
    expect(await replay(['verify', join(dir, 'run-2025-10-03-REFUND-001')], { io: v.io })).toBe(0);
    expect(v.lines).toEqual([]);
  });
});
