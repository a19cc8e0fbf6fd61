/**
 * `steward demo [--duration 45s] [--rate N] [--no-sink] [--keep-topics] [--config FILE]`
 * Runs Steward and the sample agents end to end on real services (scripts/services.sh starts them in
 * `npm run demo`), printing a live summary; with the sink (default) the run's decisions, verdicts and ledger
 * entries are counted back from ClickHouse at the end. Exits 0 when the run completed.
 */
import { parseArgs } from 'node:util';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';
import { createLogger } from '../../logger.js';
import { runDemo } from '../../demo/run-demo.js';

export const USAGE = 'usage: steward demo [--duration 45s] [--rate N] [--seed N] [--no-sink] [--keep-topics] [--config FILE]';

export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(s.trim());
  if (!m) throw new StewardError('STEWARD_USAGE', `bad duration '${s}' (e.g. 45s, 2m, 30000ms)`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '45s' },
      rate: { type: 'string', default: '2' },
      seed: { type: 'string', default: '1' },
      'no-sink': { type: 'boolean', default: false },
      'with-sink': { type: 'boolean', default: true }, // kept for old scripts: the sink is on by default
      'keep-topics': { type: 'boolean', default: false },
      config: { type: 'string' },
    },
  });
  const durationMs = parseDuration(values.duration!);
  if (durationMs > 10 * 60_000) throw new StewardError('STEWARD_USAGE', '--duration is capped at 10m');
  const rate = Number(values.rate);
  if (!(rate > 0 && rate <= 200)) throw new StewardError('STEWARD_USAGE', '--rate must be in (0, 200] traces/s per agent');
  const cfg = loadStewardConfig(values.config);
  // The demo's own output is the summary on stdout; logs stay quiet unless asked for.
  const logger = createLogger({ level: process.env.STEWARD_LOG_LEVEL ?? 'error' });
  const observability = { ...cfg.observability, enabled: false };
  await runDemo({ ...cfg, observability }, { durationMs, rate, withSink: !values['no-sink'], keepTopics: values['keep-topics']!, seed: Number(values.seed), out: process.stdout }, logger);
  return 0;
}
