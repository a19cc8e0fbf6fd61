/**
 * `steward run [--stages tripwire,scorer,gate,trust-debt,sink,approvals|none] [--config steward.yaml] [--metrics-port N]`
 * Runs the selected stages in this process; `none`: no stage, only the HTTP ingress and/or the dashboard (an ingress
 * replica: an engine in the same process made the ingress's work ~40 % dearer, docs/http.md "Benchmark"). Instances of the same stage share work through their
 * consumer group (`<group_prefix>-<stage>`). SIGTERM/SIGINT: stop consuming, drain, commit, disconnect.
 */
import { parseArgs } from 'node:util';
import { loadStewardConfig, type StewardConfig } from '../../config/steward-config.js';
import { STAGES, type StageName } from '../../process/pipeline.js';
import { startStewardProcess } from '../../process/steward-process.js';
import { StewardError } from '../../errors.js';
import { createLogger } from '../../logger.js';

export const USAGE = 'usage: steward run [--stages tripwire,scorer,gate,trust-debt,sink,approvals|none] [--config steward.yaml] [--metrics-port N]';

export function parseStages(s: string | undefined): StageName[] {
  if (s?.trim() === 'none') return [];
  const list = (s ?? STAGES.join(',')).split(',').map((x) => x.trim()).filter(Boolean);
  for (const x of list) if (!(STAGES as readonly string[]).includes(x)) throw new StewardError('STEWARD_USAGE', `unknown stage '${x}' (expected ${STAGES.join(', ')})`);
  // `--stages ,` would start nothing and report ready.
  if (list.length === 0) throw new StewardError('STEWARD_USAGE', `--stages names no stage (expected some of ${STAGES.join(', ')})`);
  return [...new Set(list)] as StageName[];
}

/**
 * Verdicts (scorer, gate) and ledger entries (sink) are signed: with a throwaway key nothing they signed
 * verifies after a restart, so `steward run` needs signing.key unless the operator asks for a trial run.
 * The offline commands and the demo keep an ephemeral key with a warning (docs/security.md).
 */
export function assertSigningKey(cfg: Pick<StewardConfig, 'signing' | 'ledgerSigning' | 'allowEphemeralKey'>, stages: readonly StageName[]): void {
  if (cfg.signing || cfg.allowEphemeralKey) return;
  const signing = stages.filter((s) => s === 'scorer' || s === 'gate' || (s === 'sink' && !cfg.ledgerSigning));
  if (signing.length === 0) return;
  throw new StewardError(
    'STEWARD_CONFIG',
    `stages ${signing.join(', ')} sign what they write, and no signing key is configured: run \`steward keys generate --out DIR\` and set signing.key (STEWARD_SIGNING_KEY) to DIR/steward.pem, or set signing.allow_ephemeral: true (STEWARD_ALLOW_EPHEMERAL_KEY=1) for a trial whose signatures nobody needs to verify later`,
  );
}

/** `--metrics-port`: an integer 0..65535 (0 picks a free port); anything else is a usage error. */
export function parseMetricsPort(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  const n = /^\d+$/.test(t) ? Number(t) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new StewardError('STEWARD_USAGE', `--metrics-port ${JSON.stringify(v)}: expected an integer port 0..65535\n${USAGE}`);
  return n;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { stages: { type: 'string' }, config: { type: 'string' }, 'metrics-port': { type: 'string' } } });
  const stages = parseStages(values.stages);
  const metricsPort = parseMetricsPort(values['metrics-port']);
  const cfg = loadStewardConfig(values.config);
  if (stages.length === 0 && !cfg.http.enabled && !cfg.dashboard.enabled) {
    throw new StewardError('STEWARD_USAGE', `--stages none runs only the HTTP ingress and the dashboard, and neither is enabled (http.enabled, dashboard.enabled)\n${USAGE}`);
  }
  assertSigningKey(cfg, stages);
  const logger = createLogger({ level: cfg.logLevel });
  for (const w of cfg.warnings ?? []) logger.warn(w);
  const proc = await startStewardProcess(cfg, stages, logger, metricsPort);
  let exitCode = 0;
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (sig: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ sig }, 'shutting down: draining in-flight work and committing offsets');
      const force = setTimeout(() => {
        logger.error('shutdown timed out');
        process.exit(1);
      }, cfg.limits.shutdownTimeoutMs);
      force.unref();
      proc.stop().then(resolve, (e: unknown) => {
        logger.error({ err: e }, 'error during shutdown');
        resolve();
      });
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    void proc.fatal.then((e) => {
      logger.error({ code: e.code, err: e.message }, 'stage cannot run: stopping');
      exitCode = 1;
      onSignal('fatal');
    });
  });
  return exitCode;
}
