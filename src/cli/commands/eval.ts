/**
 * `steward eval --blueprints DIR [--agents FILE] [--config FILE] [--sources FILE] [--signing-key PEM]
 *  [--public-key-out FILE] TRACES.jsonl|-` (contracts C3): one JSON line per input line, in order, the
 * same engine as the stream with in-memory state; time comes from trace timestamps (deterministic).
 * Exit 0 all evaluated, 1 any malformed line, 2 bad arguments or invalid blueprints.
 */
import { createReadStream, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { isStewardError } from '../../errors.js';
import { traceEventId } from '../../engine/event-id.js';
import { INTERVENTIONS, type Intervention } from '../../engine/types.js';
import { evalLine, errorLine } from '../eval-format.js';
import { EvalGate, isGateHook } from '../eval-gate.js';
import { createEvalBundles, type EvalBundles } from '../eval-bundles.js';
import { SetupError, setupOffline } from '../eval-setup.js';
import { parseTraceLine } from '../eval-trace.js';

export const USAGE = `usage: steward eval --blueprints DIR [--agents FILE] [--config FILE] [--sources FILE]
                    [--signing-key PEM] [--public-key-out FILE] [--bundles DIR] TRACES.jsonl|-`;

export interface EvalArgs {
  blueprints?: string;
  agents?: string;
  config?: string;
  sources?: string;
  signingKey?: string;
  publicKeyOut?: string;
  /** ACM run governance and one replay bundle per run, written here (src/cli/eval-bundles.ts). */
  bundles?: string;
  input?: string;
}

export function parseEvalArgs(argv: string[]): EvalArgs | string {
  const a: EvalArgs = {};
  const flags: Record<string, keyof EvalArgs> = {
    '--blueprints': 'blueprints',
    '--agents': 'agents',
    '--config': 'config',
    '--sources': 'sources',
    '--signing-key': 'signingKey',
    '--public-key-out': 'publicKeyOut',
    '--bundles': 'bundles',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flags[flag]) {
      const v = inline ?? argv[++i];
      if (v === undefined) return `${flag} needs a value`;
      a[flags[flag]] = v;
    } else if (arg.startsWith('-') && arg !== '-') return `unknown option '${arg}'`;
    else if (a.input !== undefined) return `only one TRACES file may be given`;
    else a.input = arg;
  }
  if (!a.blueprints) return '--blueprints DIR is required';
  if (!a.input) return 'TRACES.jsonl (or - for stdin) is required';
  return a;
}

export interface EvalIo {
  input: NodeJS.ReadableStream;
  out: (line: string) => void | Promise<void>;
  err: (line: string) => void;
  stderrIsTty: boolean;
  env?: NodeJS.ProcessEnv;
  llm?: import('../../engine/types.js').LlmClient | null;
  /** Lines evaluated ahead of the output (default 64). */
  window?: number;
}

export async function runEval(a: EvalArgs, io: EvalIo): Promise<number> {
  let setup;
  try {
    setup = await setupOffline({ ...a, blueprints: a.blueprints!, env: io.env, llm: io.llm, warn: io.err });
  } catch (e) {
    if (e instanceof SetupError) {
      io.err(`steward eval: ${e.message}`);
      for (const p of e.problems) io.err(p);
      return 2;
    }
    throw e;
  }
  if (a.publicKeyOut) writeFileSync(a.publicKeyOut, setup.signer.publicKeyPem());
  let bundles: EvalBundles | undefined;
  try {
    bundles = a.bundles ? await createEvalBundles(setup, { dir: a.bundles, blueprints: a.blueprints!, agents: a.agents }) : undefined;
  } catch (e) {
    if (!(e instanceof SetupError)) throw e;
    io.err(`steward eval: ${e.message}`);
    for (const p of e.problems) io.err(p);
    return 2;
  }

  // contracts C5: final_answer lines are the finalization gate's answer; tool calls of a job are its evidence.
  // With --bundles, the bundles' engine (its own trust debt) answers every line, gate hooks included.
  const gate = new EvalGate(bundles?.engine ?? setup.engine);
  const counts = Object.fromEntries(INTERVENTIONS.map((i) => [i, 0])) as Record<Intervention, number>;
  let lineNo = 0;
  let evaluated = 0;
  let malformed = 0;
  let feedback = 0;
  const t0 = performance.now();
  const rl = createInterface({ input: io.input, crlfDelay: Infinity });
  // One agent's traces run strictly in order (trust debt, rate limits and storage are per agent, so
  // results are the same as a sequential run); different agents overlap, up to WINDOW lines ahead of
  // the output, which keeps LLM-bound runs from waiting on one judge call at a time.
  // --bundles: one line at a time, so a run's events from several agents (an approver's approval) are
  // governed in input order, deterministically (docs/acm.md).
  const window = a.bundles ? 1 : Math.max(1, io.window ?? 64);
  const pending: Promise<string>[] = [];
  const tails = new Map<string, Promise<string>>();
  const flushOne = async (): Promise<void> => {
    const line = await pending.shift()!;
    await io.out(line);
    if (io.stderrIsTty && ++flushed % 500 === 0) process.stderr.write(`\r${flushed} lines…`);
  };
  let flushed = 0;
  // contracts C1: trace_id is unique. As in the stream, a repeated id with the same record (here: the same
  // line text) is a redelivery and its state effects (trust debt, rate-limit hits) apply once; another
  // trace under the same id gets its own idempotency id (trace_id#digest) and counts. stderr says which.
  const firstSeen = new Map<string, { line: number; digest: string }>();
  let repeated = 0;
  for await (const raw of rl) {
    lineNo++;
    if (raw.trim() === '') continue;
    const n = lineNo;
    const p = parseTraceLine(raw);
    let job: Promise<string>;
    if (!p.ok) {
      malformed++;
      job = Promise.resolve(JSON.stringify(errorLine(n, p.code, p.message)));
    } else {
      const agent = p.trace.agent_id;
      const digest = traceEventId(p.trace.trace_id, Buffer.from(raw.trim()));
      const first = firstSeen.get(p.trace.trace_id);
      let eventId: string | undefined;
      if (first === undefined) firstSeen.set(p.trace.trace_id, { line: n, digest });
      else {
        const same = first.digest === digest;
        if (!same) eventId = digest;
        if (++repeated <= 10)
          io.err(
            `warning: line ${n} repeats trace_id ${JSON.stringify(p.trace.trace_id)} of line ${first.line}: ` +
              (same ? 'same record, applied once like a redelivery' : 'a different trace, evaluated and counted as a separate one (trace ids must be unique)'),
          );
      }
      const prev = tails.get(agent) ?? Promise.resolve('');
      // A gate hook takes the stream's path for it (eval-gate.ts, spec-decisions D50), never evaluate().
      const answer = isGateHook(p.trace.hook)
        ? () => gate.answer(p.trace, p.nowMs, eventId)
        : async () => {
            const rec = await (bundles ? bundles.evaluate(raw, p.trace, p.nowMs, eventId) : setup.engine.evaluate(p.trace, p.nowMs, eventId));
            return { line: bundles ? bundles.line(rec, evalLine(rec)) : evalLine(rec), intervention: rec.score.intervention };
          };
      job = prev
        .then(answer)
        .then(
          ({ line, intervention }) => {
            if (intervention) counts[intervention]++;
            else feedback++;
            evaluated++;
            return JSON.stringify(line);
          },
          (e: unknown) => {
            // An engine failure on one trace is reported like a malformed line; the run continues.
            malformed++;
            return JSON.stringify(errorLine(n, isStewardError(e) ? e.code : 'STEWARD_EVAL', (e as Error)?.message ?? String(e)));
          },
        );
      tails.set(agent, job);
      void job.then(() => {
        if (tails.get(agent) === job) tails.delete(agent);
      });
    }
    pending.push(job);
    while (pending.length >= window) await flushOne();
  }
  while (pending.length > 0) await flushOne();
  if (io.stderrIsTty && flushed >= 500) process.stderr.write('\r\x1b[K');
  if (bundles) io.err(`steward eval: ${await bundles.write()} replay bundle(s) written to ${a.bundles}`);
  const secs = (performance.now() - t0) / 1000;
  const dist = INTERVENTIONS.filter((i) => counts[i] > 0).map((i) => `${i} ${counts[i]}`).join(', ');
  io.err(
    `steward eval: ${evaluated} trace(s) evaluated${dist ? ` (${dist})` : ''}, ${malformed} malformed line(s), ` +
      `${secs.toFixed(2)} s${evaluated > 0 ? `, ${Math.round(evaluated / Math.max(secs, 1e-9))} traces/s` : ''}` +
      (repeated > 0 ? `, ${repeated} repeated trace_id(s)` : '') +
      (feedback > 0 ? `, ${feedback} of them user_feedback (no intervention)` : ''),
  );
  return malformed > 0 ? 1 : 0;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const a = parseEvalArgs(argv);
  if (typeof a === 'string') {
    process.stderr.write(`steward eval: ${a}\n${USAGE}\n`);
    return 2;
  }
  let input: NodeJS.ReadableStream;
  if (a.input === '-') input = process.stdin;
  else {
    const s = createReadStream(a.input!);
    const opened = await new Promise<Error | null>((res) => {
      s.once('open', () => res(null));
      s.once('error', (e) => res(e));
    });
    if (opened) {
      process.stderr.write(`steward eval: cannot read ${a.input}: ${opened.message}\n`);
      return 2;
    }
    input = s;
  }
  // stdout may be a pipe that closes early (| head): stop quietly.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
  });
  return runEval(a, {
    input,
    // Respect backpressure so a large input does not pile up in memory behind a slow reader.
    out: (l) => (process.stdout.write(l + '\n') ? undefined : new Promise<void>((r) => process.stdout.once('drain', () => r()))),
    err: (l) => process.stderr.write(l + '\n'),
    stderrIsTty: process.stderr.isTTY === true,
  });
}
