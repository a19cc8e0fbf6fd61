/**
 * `steward run [--stages tripwire,scorer,trust-debt,sink] [--config steward.yaml] [--metrics-port N]`
 * Runs the selected stages in this process. Instances of the same stage share work through their
 * consumer group (`<group_prefix>-<stage>`). SIGTERM/SIGINT: stop consuming, drain, commit, disconnect.
 */
import { parseArgs } from 'node:util';
import { generateKeyPairSync } from 'node:crypto';
import { startSinkFromConfig } from '../../consumers/sink.js';
import { ledgerSignerFromEnv } from '../../adapters/clickhouse/ledger-keys.js';
import { ed25519Signer } from '../../engine/ledger/crypto.js';
import type { LedgerSigner } from '../../engine/ledger/crypto.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { STAGES, startPipeline, type StageName, type PipelineDeps } from '../../consumers/common-runtime.js';
import { bootstrapEngine } from '../../consumers/common-bootstrap.js';
import { StewardMetrics } from '../../observability/metrics.js';
import { ObservabilityServer } from '../../observability/http-server.js';
import { StewardError } from '../../errors.js';
import { createLogger } from '../../logger.js';
import type { StewardConfig } from '../../config/steward-config.js';
import type { Logger } from '../../logger.js';

export const USAGE = 'usage: steward run [--stages tripwire,scorer,trust-debt,sink] [--config steward.yaml] [--metrics-port N]';

export function parseStages(s: string | undefined): StageName[] {
  const list = (s ?? STAGES.join(',')).split(',').map((x) => x.trim()).filter(Boolean);
  for (const x of list) if (!(STAGES as readonly string[]).includes(x)) throw new StewardError('STEWARD_USAGE', `unknown stage '${x}' (expected ${STAGES.join(', ')})`);
  return [...new Set(list)] as StageName[];
}

/**
 * Ledger entries are signed with STEWARD_LEDGER_KEY, else the steward signing key (the same resolution
 * `steward ledger verify` uses), else an ephemeral key (verifiable only during this run).
 */
export function ledgerSignerFor(cfg: Pick<StewardConfig, 'signing'>, env: NodeJS.ProcessEnv, logger: Logger): LedgerSigner {
  const signer = ledgerSignerFromEnv(env, cfg.signing);
  if (signer) return signer;
  logger.warn('neither STEWARD_LEDGER_KEY nor STEWARD_SIGNING_KEY set: ledger entries signed with an ephemeral key');
  return ed25519Signer(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
}

function sinkStarter(cfg: StewardConfig, logger: Logger): PipelineDeps['startSink'] {
  return async () => startSinkFromConfig(cfg, logger.child({ stage: 'sink' }), ledgerSignerFor(cfg, process.env, logger));
}

export interface RunningProcess {
  stop(): Promise<void>;
  isReady(): boolean;
}

/** Starts stages + observability; used by `steward run` and by the demo. */
export async function startStewardProcess(cfg: StewardConfig, stages: StageName[], logger: Logger, metricsPort?: number): Promise<RunningProcess> {
  const metrics = new StewardMetrics({ defaultMetrics: true });
  const server = new ObservabilityServer(metrics);
  if (cfg.observability.enabled || metricsPort !== undefined) {
    const port = await server.listen(metricsPort ?? cfg.observability.port, cfg.observability.host);
    logger.info({ port }, 'observability on /metrics /healthz /readyz');
  }
  const engineStages = stages.filter((s) => s !== 'sink');
  const rt = engineStages.length > 0 ? await bootstrapEngine(cfg, engineStages, logger, metrics) : undefined;
  const deps: PipelineDeps = { ...(rt?.deps ?? {}), startSink: stages.includes('sink') ? sinkStarter(cfg, logger) : undefined };
  const pipe = await startPipeline(cfg, stages, deps, { logger, metrics });
  const readyTimer = setInterval(() => server.setReady('stages', pipe.isReady()), 250);
  server.setReady('stages', false);
  logger.info({ stages, topics: pipe.topics }, 'steward running');
  return {
    isReady: () => pipe.isReady(),
    async stop() {
      clearInterval(readyTimer);
      server.setReady('stages', false);
      await pipe.stop();
      await rt?.close();
      await server.close();
    },
  };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { stages: { type: 'string' }, config: { type: 'string' }, 'metrics-port': { type: 'string' } } });
  const stages = parseStages(values.stages);
  const cfg = loadStewardConfig(values.config);
  const logger = createLogger({ level: cfg.logLevel });
  const proc = await startStewardProcess(cfg, stages, logger, values['metrics-port'] !== undefined ? Number(values['metrics-port']) : undefined);
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
  });
  return 0;
}
