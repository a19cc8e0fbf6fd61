/**
 * `steward calibrate --blueprints DIR [--agents FILE] [--config FILE] [--sources FILE]
 *  [--expected-correlation X] [--json] DATASET.jsonl|-` (ACGP-1004 §7.6). Each line is
 * `{"label": "pass"|"fail"|"borderline", "trace": {...}}` (or a trace with a `label` field).
 * Exit 0 when the correlation meets the expectation, 1 when it does not (or lines were bad), 2 on bad arguments.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { SetupError, setupOffline } from '../eval-setup.js';
import { parseTraceLine } from '../eval-trace.js';
import { calibrate, formatReport, LABELS, type CalibrationPoint, type Label } from '../eval-calibrate.js';
import type { LlmClient } from '../../engine/types.js';

export const USAGE = 'usage: steward calibrate --blueprints DIR [--agents FILE] [--config FILE] [--sources FILE] [--expected-correlation 0.85] [--json] DATASET.jsonl|-';

export interface CalibrateIo {
  input: NodeJS.ReadableStream;
  out: (s: string) => void;
  err: (s: string) => void;
  llm?: LlmClient | null;
  env?: NodeJS.ProcessEnv;
}

export async function runCalibrate(argv: string[], io: CalibrateIo): Promise<number> {
  const o: { blueprints?: string; agents?: string; config?: string; sources?: string; input?: string; expected: number; json: boolean } = { expected: 0.85, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (['--blueprints', '--agents', '--config', '--sources'].includes(a)) {
      const v = argv[++i];
      if (v === undefined) return bad(io, `${a} needs a value`);
      o[a.slice(2) as 'blueprints'] = v;
    } else if (a === '--expected-correlation') {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v)) return bad(io, '--expected-correlation needs a number');
      o.expected = v;
    } else if (a === '--json') o.json = true;
    else if (a.startsWith('-') && a !== '-') return bad(io, `unknown option '${a}'`);
    else o.input = a;
  }
  if (!o.blueprints || !o.input) return bad(io, '--blueprints DIR and DATASET are required');
  let setup;
  try {
    setup = await setupOffline({ blueprints: o.blueprints, agents: o.agents, config: o.config, sources: o.sources, llm: io.llm, env: io.env, ephemeralKeyOk: true, warn: io.err });
  } catch (e) {
    if (e instanceof SetupError) {
      io.err(`steward calibrate: ${e.message}`);
      e.problems.forEach((p) => io.err(p));
      return 2;
    }
    throw e;
  }
  const points: CalibrationPoint[] = [];
  let lineNo = 0;
  let badLines = 0;
  for await (const raw of createInterface({ input: io.input, crlfDelay: Infinity })) {
    lineNo++;
    if (raw.trim() === '') continue;
    let label: unknown;
    let traceText = raw;
    try {
      const obj = JSON.parse(raw) as Record<string, unknown>;
      label = obj.label;
      if (obj.trace && typeof obj.trace === 'object') traceText = JSON.stringify(obj.trace);
      else {
        const { label: _l, ...rest } = obj;
        traceText = JSON.stringify(rest);
      }
    } catch {
      // parseTraceLine reports the JSON error below
    }
    if (!LABELS.includes(label as Label)) {
      badLines++;
      io.err(`line ${lineNo}: label must be one of ${LABELS.join(', ')}`);
      continue;
    }
    const p = parseTraceLine(traceText);
    if (!p.ok) {
      badLines++;
      io.err(`line ${lineNo}: ${p.code}: ${p.message}`);
      continue;
    }
    const rec = await setup.engine.evaluate(p.trace, p.nowMs);
    points.push({ label: label as Label, ctq: rec.score.ctq, intervention: rec.score.intervention });
  }
  const report = calibrate(points);
  io.out(o.json ? JSON.stringify({ ...report, expected_correlation: o.expected, bad_lines: badLines }) : formatReport(report, o.expected));
  const meets = report.correlation !== null && report.correlation >= o.expected;
  return badLines > 0 || !meets ? 1 : 0;
}

function bad(io: CalibrateIo, msg: string): number {
  io.err(`steward calibrate: ${msg}\n${USAGE}`);
  return 2;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const file = argv.filter((a, i) => !a.startsWith('-') && !['--blueprints', '--agents', '--config', '--sources', '--expected-correlation'].includes(argv[i - 1])).at(-1);
  const input = !file || file === '-' ? process.stdin : createReadStream(file);
  if (input !== process.stdin) {
    const err = await new Promise<Error | null>((res) => {
      input.once('open', () => res(null));
      input.once('error', (e: Error) => res(e));
    });
    if (err) {
      process.stderr.write(`steward calibrate: cannot read ${file}: ${err.message}\n`);
      return 2;
    }
  }
  return runCalibrate(argv, { input, out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') });
}
