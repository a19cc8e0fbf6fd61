import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCalibrate } from '../../../src/cli/commands/calibrate.js';
import { bestCut, calibrate, pearson } from '../../../src/cli/eval-calibrate.js';
import type { LlmClient } from '../../../src/engine/types.js';

const CORE = join(import.meta.dirname, '../../golden/eval/blueprints/core');
const judge: LlmClient = {
  async complete(req) {
    const m = /score=([0-9.]+)/.exec(req.prompt);
    return { text: JSON.stringify({ score: Number(m?.[1] ?? 0.5) }), latencyMs: 0 };
  },
};

describe('calibration statistics', () => {
  it('pearson and best cut', () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBeCloseTo(1);
    expect(pearson([1, 2, 3], [3, 2, 1])).toBeCloseTo(-1);
    expect(pearson([1, 1], [0, 1])).toBeNull();
    expect(bestCut([0.1, 0.2], [0.5, 0.6])).toBeCloseTo(0.35);
  });
  it('confusion matrix maps decisions onto labels', () => {
    const r = calibrate([
      { label: 'pass', ctq: 0.9, intervention: 'ok' },
      { label: 'fail', ctq: 0.2, intervention: 'block' },
      { label: 'fail', ctq: 0.8, intervention: 'nudge' },
      { label: 'borderline', ctq: 0.5, intervention: 'escalate' },
    ]);
    expect(r.confusion.fail).toEqual({ pass: 1, borderline: 0, fail: 1 });
    expect(r.accuracy).toBe(0.75);
  });
});

describe('steward calibrate', () => {
  const line = (label: string, score: number, i: number) =>
    JSON.stringify({ label, trace: { trace_id: `cal-${i}`, agent_id: 'a2', timestamp: `2025-01-01T00:${String(i).padStart(2, '0')}:00Z`, hook: 'answer', content: `score=${score}` } });

  async function run(lines: string[], extra: string[] = []) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCalibrate(['--blueprints', CORE, ...extra, '-'], { input: Readable.from(lines.map((l) => l + '\n')), out: (s) => void out.push(s), err: (s) => void err.push(s), llm: judge, env: {} });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('reports correlation, confusion matrix and suggested thresholds; exit 0 when correlation meets the expectation', async () => {
    const data = [
      ...[0.95, 0.9, 0.88, 0.92].map((s, i) => line('pass', s, i)),
      ...[0.6, 0.55].map((s, i) => line('borderline', s, 10 + i)),
      ...[0.2, 0.15, 0.3].map((s, i) => line('fail', s, 20 + i)),
    ];
    const r = await run(data, ['--json']);
    expect(r.code, r.err).toBe(0);
    const rep = JSON.parse(r.out);
    expect(rep.n).toBe(9);
    expect(rep.correlation).toBeGreaterThan(0.9);
    expect(rep.confusion.pass.pass).toBe(4);
    expect(rep.confusion.fail.fail).toBe(3);
    // pass risks <= .12, borderline .40-.45, fail >= .70: the cuts fall in the gaps
    expect(rep.suggested.ok).toBeGreaterThan(0.12);
    expect(rep.suggested.ok).toBeLessThan(0.4);
    expect(rep.suggested.block).toBeGreaterThan(0.45);
    expect(rep.suggested.block).toBeLessThan(0.7);
    const text = await run(data);
    expect(text.out).toMatch(/confusion matrix/);
    expect(text.out).toMatch(/thresholds:\n\s+ok: /);
  });

  it('exit 1 when labels and scores disagree (correlation below expectation) or a label is missing', async () => {
    const data = [line('pass', 0.2, 1), line('pass', 0.3, 2), line('fail', 0.9, 3), line('fail', 0.95, 4)];
    const r = await run(data);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/BELOW EXPECTATION/);
    const r2 = await run([JSON.stringify({ trace_id: 'x', agent_id: 'a2', timestamp: '2025-01-01T00:00:00Z', hook: 'answer' })]);
    expect(r2.code).toBe(1);
    expect(r2.err).toMatch(/label must be one of/);
  });
});
