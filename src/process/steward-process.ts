/**
 * The Steward process: the selected stages, their engine runtime (Redis, watchers, LLM, signer), the sink and
 * the observability server, started and stopped as one. `steward run` and the demo start it.
 */
import { generateKeyPairSync } from 'node:crypto';
import { startSinkFromConfig } from './sink-stage.js';
import { ledgerSignerFrom, type PoolableLedgerSigner } from '../adapters/clickhouse/ledger-keys.js';
import { startPipeline, type StageName, type PipelineDeps } from './pipeline.js';
import { bootstrapEngine } from './engine-runtime.js';
import { StewardMetrics } from '../observability/metrics.js';
import { ObservabilityServer } from '../observability/http-server.js';
import { startHttpIngress, type RunningIngress } from './http-ingress.js';
import { startDashboard, type RunningDashboard } from './dashboard.js';
import { StewardError } from '../errors.js';
import type { StewardConfig } from '../config/steward-config.js';
import type { Logger } from '../logger.js';
import { heapTidyAvailable } from './heap-tidy.js';

/**
 * Ledger entries are signed with signing.ledger_key (STEWARD_LEDGER_KEY), else the steward signing key (the
 * same resolution `steward ledger verify` uses), else an ephemeral key (verifiable only during this run).
 */
export function ledgerSignerFor(cfg: Pick<StewardConfig, 'signing' | 'ledgerSigning'> & { requireSigningKey?: boolean }, logger: Logger): PoolableLedgerSigner {
  const key = cfg.ledgerSigning ?? cfg.signing;
  if (key) {
    try {
      return ledgerSignerFrom(key.key, key.keyId);
    } catch (e) {
      // Names the setting the key came from; ledger-keys' messages never echo the value.
      throw new StewardError('STEWARD_CONFIG', `ledger signing key (${cfg.ledgerSigning ? 'signing.ledger_key / STEWARD_LEDGER_KEY' : 'signing.key / STEWARD_SIGNING_KEY'}): ${(e as Error).message}`, { cause: e });
    }
  }
  if (cfg.requireSigningKey) {
    throw new StewardError('STEWARD_CONFIG', 'signing.require_key is set but no ledger signing key is configured (STEWARD_LEDGER_KEY or signing.key / STEWARD_SIGNING_KEY): refusing to sign ledger entries with a key nobody keeps');
  }
  logger.warn('neither STEWARD_LEDGER_KEY nor STEWARD_SIGNING_KEY set: ledger entries signed with an ephemeral key');
  return ledgerSignerFrom(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
}

function sinkStarter(cfg: StewardConfig, logger: Logger, metrics: StewardMetrics): PipelineDeps['startSink'] {
  return async () => startSinkFromConfig(cfg, logger.child({ stage: 'sink' }), ledgerSignerFor(cfg, logger), metrics);
}

export interface RunningProcess {
  stop(): Promise<void>;
  isReady(): boolean;
  /**
   * Settles when a stage's consumer was refused by the broker before it ever joined its group (configuration or
   * credentials): the process cannot do its work, and `steward run` exits 1 naming the stage and the reason.
   */
  fatal: Promise<StewardError>;
  /** The analyst dashboard's port when dashboard.enabled (docs/dashboard.md). */
  dashboardPort?: number;
  /** The HTTP ingress's port when http.enabled (http.port 0: the one the system chose). */
  httpPort?: number;
}

/** Names the brokers in a Kafka startup failure (kafkajs' own message is often just its class name). */
export function kafkaStartupError(e: unknown, brokers: readonly string[]): StewardError {
  const parts: string[] = [];
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    const m = c instanceof Error ? c.message || c.name : String(c);
    if (m && !parts.includes(m)) parts.push(m);
  }
  return new StewardError('STEWARD_KAFKA', `kafka failed at startup (brokers ${brokers.join(',')}): ${parts.join(': ') || 'unknown error'}`, { cause: e });
}

function isKafkaError(e: unknown): boolean {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    if (c instanceof StewardError && c.code === 'STEWARD_KAFKA') return true;
    if (c instanceof Error && c.name.startsWith('KafkaJS')) return true;
  }
  return false;
}

/**
 * Starts stages + observability; used by `steward run` and by the demo. When a step fails, everything
 * opened so far (HTTP server, Redis, watchers) is closed before the error propagates, and a Kafka
 * failure names the brokers.
 */
export async function startStewardProcess(cfg: StewardConfig, stages: StageName[], logger: Logger, metricsPort?: number): Promise<RunningProcess> {
  const metrics = new StewardMetrics({ defaultMetrics: true });
  const server = new ObservabilityServer(metrics);
  let ingress: RunningIngress | undefined;
  let dashboard: RunningDashboard | undefined;
  let rt: Awaited<ReturnType<typeof bootstrapEngine>> | undefined;
  let pipe: Awaited<ReturnType<typeof startPipeline>> | undefined;
  let onFatal!: (e: StewardError) => void;
  const fatal = new Promise<StewardError>((resolve) => (onFatal = resolve));
  try {
    if (cfg.observability.enabled || metricsPort !== undefined) {
      const port = await server.listen(metricsPort ?? cfg.observability.port, cfg.observability.host);
      logger.info({ port }, 'observability on /metrics /healthz /readyz');
    }
    if (cfg.http.enabled) {
      // The acgp client's HTTP ingress (docs/http.md); loopback unless http.host says otherwise.
      ingress = await startHttpIngress(cfg, logger.child({ component: 'http' }));
      logger.info({ port: ingress.port, host: cfg.http.host, tls: Boolean(cfg.http.tls) }, 'http ingress on /v1 (docs/http.md)');
    }
    if (cfg.dashboard.enabled) {
      // The analyst dashboard (docs/dashboard.md): read-only ClickHouse, loopback unless dashboard.host says otherwise.
      dashboard = await startDashboard(cfg);
      logger.info({ port: dashboard.port, host: cfg.dashboard.host }, 'analyst dashboard (docs/dashboard.md)');
    }
    // Not ready until every stage has joined its group.
    server.setReady('stages', false);
    const engineStages = stages.filter((s) => s !== 'sink');
    rt = engineStages.length > 0 ? await bootstrapEngine(cfg, engineStages, logger, metrics) : undefined;
    const deps: PipelineDeps = { ...(rt?.deps ?? {}), startSink: stages.includes('sink') ? sinkStarter(cfg, logger, metrics) : undefined };
    try {
      pipe = await startPipeline(cfg, stages, deps, {
        logger,
        metrics,
        onFatal: (stage, err) => onFatal(new StewardError('STEWARD_KAFKA', `stage ${stage}: the broker refused its consumer group (${err.message}); check consumer.* settings and the credentials' group access`, { cause: err })),
      });
    } catch (e) {
      throw isKafkaError(e) ? kafkaStartupError(e, cfg.kafka.brokers) : e;
    }
  } catch (e) {
    await Promise.allSettled([rt?.close(), server.close(), ingress?.close(), dashboard?.close()]);
    throw e;
  }
  const running = pipe;
  const redis = rt?.redis;
  // Ready: every stage joined its group, and Redis (when a stage uses it) is connected: a stage waiting out a
  // Redis outage holds its partitions but decides nothing.
  const ready = () => running.isReady() && (!redis || redis.status === 'ready');
  const readyTimer = setInterval(() => {
    server.setReady('stages', running.isReady());
    server.setReady('redis', !redis || redis.status === 'ready');
  }, 250);
  logger.info({ stages, topics: running.topics }, 'steward running');
  if (!heapTidyAvailable()) logger.info('node runs without --expose-gc: no full collection after compiling (docs/pipeline.md "Start-up leaves a full root map"); the image starts node with it; elsewhere set NODE_OPTIONS=--expose-gc');
  const engine = rt;
  const http = ingress;
  const dash = dashboard;
  return {
    isReady: ready,
    fatal,
    dashboardPort: dash?.port,
    httpPort: http?.port,
    async stop() {
      clearInterval(readyTimer);
      server.setReady('stages', false);
      // Stop taking requests before the stages that answer them stop.
      await http?.close().catch(() => undefined);
      await dash?.close().catch(() => undefined);
      try {
        await running.stop();
      } finally {
        await Promise.allSettled([engine?.close(), server.close()]);
      }
    },
  };
}
