/**
 * Process configuration: steward.yaml (snake_case, schemas/steward-config.schema.json) + environment
 * overrides → a typed StewardConfig. Problems surface as STEWARD_CONFIG errors naming the file, line,
 * column and JSON path, all of them at once.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { LineCounter, parseDocument, type Node } from 'yaml';
import AjvDraft7 from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { StewardError, StewardAggregateError } from '../errors.js';
import { defaultEngineConfig, DEFAULT_TIERS, normalizeTier, type EngineConfig, type TierSettings } from '../engine/config.js';
import type { AclTier, FallbackOnTimeout } from '../engine/types.js';
import type { IdentityPolicy } from '../engine/identity.js';
import { rangeEnd } from '../engine/blueprint/source.js';
import { packageRoot } from '../adapters/kafka/serde.js';
import type { KafkaSettings } from '../adapters/kafka/client.js';
import { describeHidden, redactSecrets } from '../observability/redact.js';
import { SECRET_ENV, SETTING_LIST, SETTINGS, parseEnvText, settingValue as v } from './settings.js';

export interface StewardConfig {
  kafka: KafkaSettings;
  /**
   * kafka.require_log_append_time: the event-time clamp (limits.max_event_time_skew_ms) trusts the broker's
   * timestamp of acgp.traces; with CreateTime the agent writes both. Refuse to start (or warn) unless LogAppendTime.
   */
  requireLogAppendTime: boolean;
  schemaRegistryUrl?: string;
  topics: { prefix: string; partitions: number; replicationFactor: number; replyPartitions: number };
  /**
   * trustDebtReadCacheMs: how long the decision path reuses an agent's raw trust-debt state read from
   * Redis (decay is still computed at each event's time); 0 reads Redis for every decision.
   */
  redis: { url: string; keyPrefix: string; trustDebtReadCacheMs: number; clusterNodes: string[]; oomRetryMs: number };
  clickhouse: { url: string; database: string; username?: string; password?: string };
  blueprints: { dir: string; agents?: string; watch: boolean };
  /** Certified Source Registry file for source-match metrics (ACGP-1004 §7.2.3, §8); the file `steward eval --sources` reads. */
  sources?: string;
  engine: EngineConfig;
  llm?: { provider: 'openai' | 'anthropic'; baseUrl: string; apiKey?: string; model?: string; timeoutMs: number; maxInFlight: number; thread: boolean };
  /**
   * maxEventTimeSkewMs: a trace's own timestamp is agent-controlled, yet it drives rate-limit windows and
   * trust-debt decay; it is clamped to within this many ms of the Kafka record time (LogAppendTime on
   * topics we create). null trusts trace timestamps (replays and simulations that move time on purpose).
   * maxMessageBytes: the largest record a stage may produce (key + value + headers); every output is checked
   * before it is sent and an input whose outputs would exceed it is dead-lettered (STEWARD_TRACE_TOO_LARGE),
   * so no input can make a send fail forever. Default 1 000 000, below the broker's default
   * max.message.bytes (1 048 588). Keep maxTraceBytes well below it: the scoring message is the trace plus
   * its decision record (~1-2 KB), so a trace within that margin of the limit is dead-lettered, not scored.
   */
  limits: { maxTraceBytes: number; maxMessageBytes: number; chunkSize: number; partitionsConcurrently: number; shutdownTimeoutMs: number; maxEventTimeSkewMs: number | null };
  /** groupPrefixDefaulted: no group_prefix was given (it derives from the topic prefix). */
  /** exactlyOnce: stages whose outputs commit with their input offsets in Kafka transactions (consumers/stage-runner.ts). */
  consumer: { groupPrefix: string; sessionTimeoutMs: number; autoCommitIntervalMs: number; groupPrefixDefaulted?: boolean; exactlyOnce: ('tripwire' | 'scorer')[]; scorerDedupTtlSeconds: number; scorerInput: 'scoring' | 'join' };
  /** Periodic good-behaviour audit of the trust-debt stage (ACGP-1004 §10.4.2); interval 0 = lazy credits only. */
  /** dedupTtlSeconds: how long an applied trust-debt event id is remembered (a replay of older records applies them again). */
  trustDebt: { auditSweepIntervalMs: number; auditSweepLagMs: number; dedupTtlSeconds: number };
  observability: { enabled: boolean; host: string; port: number };
  /** rollout.*: triggers, shadow evaluation and the review queue (docs/rollout.md). */
  rollout: { windowMs: number; minSamples: number; refreshMs: number; shadowBlueprints?: string; shadowId?: string; reviewQueue: boolean; reviewSlaMs: number };
  /** http.*: the acgp client's HTTP ingress (docs/http.md); tls files resolved against the config file. */
  /** docs/approvals.md: the approver registry file and the deadline sweep's period. */
  approvals: { approversFile?: string; sweepIntervalMs: number };
  /** dashboard.*: the analyst dashboard inside `steward run` (docs/dashboard.md). */
  dashboard: { enabled: boolean; host: string; port: number; refreshMs: number; allowedHosts: string[] };
  http: { enabled: boolean; host: string; port: number; tls?: { certFile: string; keyFile: string }; maxBodyBytes: number; maxBatchEvents: number; maxInFlightBytes: number; ratePerSecond: number; clientTimeoutMs: number };
  signing?: { key: string; keyId?: string };
  /** signing.ledger_key / STEWARD_LEDGER_KEY: the ledger's own key; signing.key signs the ledger when unset. */
  ledgerSigning?: { key: string; keyId?: string };
  /** Who may send traces: agents.* (docs/security.md). */
  agents: IdentityPolicy;
  /** signing.require_key / STEWARD_REQUIRE_SIGNING_KEY: refuse to run the scorer with an ephemeral key (production). */
  requireSigningKey: boolean;
  /** signing.allow_ephemeral / STEWARD_ALLOW_EPHEMERAL_KEY: `steward run` may sign with a throwaway key (trials). */
  allowEphemeralKey: boolean;
  logLevel: string;
  /** The file it came from (undefined for defaults + env only). */
  file?: string;
  /** Settings that were given but take no effect (logged by `steward run` at startup). */
  warnings?: string[];
}

type Raw = Record<string, any>;

let validator: ValidateFunction | undefined;
function schemaValidator(): ValidateFunction {
  if (!validator) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), 'schemas', 'steward-config.schema.json'), 'utf8')) as Raw;
    const Ctor = ((AjvDraft7 as unknown as { default?: unknown }).default ?? AjvDraft7) as new (o: object) => { compile(s: object): ValidateFunction };
    const { $id: _id, ...rest } = schema;
    validator = new Ctor({ allErrors: true, strict: false }).compile(rest);
  }
  return validator;
}

function jsonPath(instancePath: string): string {
  return '$' + instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`)).join('');
}

function nodeAt(doc: ReturnType<typeof parseDocument>, instancePath: string): Node | undefined {
  const parts = instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~')));
  // Walk as far as the path exists: a missing key is reported at its parent.
  for (let n = parts.length; n >= 0; n--) {
    const node = doc.getIn(parts.slice(0, n), true) as Node | undefined;
    if (node && (node as { range?: unknown }).range) return node;
    if (n === 0) return doc.contents ?? undefined;
  }
  return undefined;
}

/** The key node of `key` in the mapping at `instancePath` (its value node would put the position after the key). */
function keyNodeAt(doc: ReturnType<typeof parseDocument>, instancePath: string, key: string): Node | undefined {
  const map = nodeAt(doc, instancePath) as { items?: { key?: unknown }[] } | undefined;
  for (const pair of map?.items ?? []) {
    const k = pair.key as (Node & { value?: unknown }) | undefined;
    if (k && k.value === key && k.range) return k;
  }
  return undefined;
}

function describe(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') return `unknown key '${(e.params as { additionalProperty: string }).additionalProperty}'`;
  if (e.keyword === 'enum') return `${e.message}: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  return e.message ?? 'invalid';
}

/** Parses and validates YAML text; `file` only labels error positions. */
export function parseConfigText(text: string, file?: string): Raw {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new StewardAggregateError(
      'STEWARD_CONFIG',
      doc.errors.map((e) => {
        const p = lc.linePos(e.pos[0]);
        return new StewardError('STEWARD_CONFIG', e.message.split('\n')[0], { position: { file, line: p.line, col: p.col, ...rangeEnd(text, lc, e.pos[0], e.pos[1]) } });
      }),
    );
  }
  const raw = (doc.toJS() ?? {}) as Raw;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new StewardError('STEWARD_CONFIG', 'config must be a mapping', { position: { file, line: 1, col: 1 } });
  const v = schemaValidator();
  if (!v(raw)) {
    const errs = (v.errors ?? [])
      .filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'if')
      .map((e) => {
        // An unknown key is reported at the key itself, not at its parent mapping.
        const extra = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty: string }).additionalProperty : undefined;
        const ip = extra !== undefined ? `${e.instancePath}/${extra}` : e.instancePath;
        const node = (extra !== undefined ? keyNodeAt(doc, e.instancePath, extra) : undefined) ?? nodeAt(doc, ip);
        const pos = node?.range ? lc.linePos(node.range[0]) : { line: 1, col: 1 };
        return new StewardError('STEWARD_CONFIG', `${jsonPath(ip)}: ${describe(e)}`, {
          position: { file, line: pos.line, col: pos.col, ...(node?.range ? rangeEnd(text, lc, node.range[0], node.range[1]) : {}), path: jsonPath(ip) },
        });
      });
    throw new StewardAggregateError('STEWARD_CONFIG', errs);
  }
  return raw;
}

/** An environment override: the variable and the config path (`/observability/port`) it sets. */
interface EnvSource {
  name: string;
  value: string;
  path: string;
}

/** Applies every variable of the settings table that is set (empty counts as unset: docker-compose passes an unset ${VAR} as ""). */
function envOverrides(raw: Raw, env: NodeJS.ProcessEnv): { raw: Raw; sources: EnvSource[] } {
  const out: Raw = structuredClone(raw);
  const sources: EnvSource[] = [];
  for (const st of SETTING_LIST) {
    const text = st.env ? env[st.env] : undefined;
    if (!st.env || !text) continue;
    const path = st.path.split('.');
    let o = out;
    for (const k of path.slice(0, -1)) o = o[k] = o[k] && typeof o[k] === 'object' ? o[k] : {};
    o[path[path.length - 1]] = parseEnvText(st.kind, text);
    sources.push({ name: st.env, value: text, path: '/' + path.join('/') });
  }
  return { raw: out, sources };
}

/** `NAME=value` for an error message: secrets hidden, URL passwords masked, long values cut. */
function envShown(s: EnvSource): string {
  if (SECRET_ENV.has(s.name)) return `${s.name} (${describeHidden(s.value)})`;
  const v = redactSecrets(s.value);
  return `${s.name}=${v.length > 120 ? `${v.slice(0, 120)}…` : v}`;
}

/**
 * Validates the config after environment overrides. A problem with a value that came from the
 * environment names the variable (`STEWARD_METRICS_PORT=abc: $.observability.port must be integer`);
 * there is no file position for it. Anything else is reported like a file problem.
 */
function validateWithEnv(raw0: Raw, raw: Raw, sources: EnvSource[], file?: string): void {
  const v = schemaValidator();
  if (v(raw)) return;
  const envErrs: StewardError[] = [];
  let fileProblem = false;
  for (const e of (v.errors ?? []).filter((x) => x.keyword !== 'oneOf' && x.keyword !== 'if')) {
    const ip = e.keyword === 'additionalProperties' ? `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}` : e.instancePath;
    // The variable that set this path (or a value inside it), or whose path lies in an object only the environment created.
    let from = sources.filter((s) => ip === s.path || ip.startsWith(`${s.path}/`));
    if (from.length === 0) {
      const parts = ip.split('/').slice(1);
      let inFile: unknown = raw0;
      for (const p of parts) inFile = inFile && typeof inFile === 'object' ? (inFile as Raw)[p] : undefined;
      if (inFile === undefined) from = sources.filter((s) => s.path.startsWith(`${ip}/`));
    }
    if (from.length === 0) {
      fileProblem = true;
      continue;
    }
    envErrs.push(new StewardError('STEWARD_CONFIG', `${from.map(envShown).join(', ')}: ${jsonPath(ip)} ${describe(e)}`));
  }
  // Problems not caused by a variable: reported with the file's positions, as before.
  if (fileProblem && envErrs.length === 0) parseConfigText(JSON.stringify(raw), file ? `${file} (+env)` : '(env)');
  if (envErrs.length > 0) throw envErrs.length === 1 ? envErrs[0] : new StewardAggregateError('STEWARD_CONFIG', envErrs);
}

function readMaybe(base: string, f: string | undefined, setting: string): string | undefined {
  if (f === undefined) return undefined;
  const path = resolve(base, f);
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new StewardError('STEWARD_CONFIG', `${setting}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

function engineFrom(raw: Raw): EngineConfig {
  const tiers: Record<AclTier, TierSettings> = { ...DEFAULT_TIERS };
  for (const [k, t] of Object.entries(v(raw, 'engine.tiers') as Record<string, Raw>)) {
    const tier = normalizeTier(k)!;
    const base = tiers[tier];
    tiers[tier] = {
      thresholds: { ...base.thresholds, ...(t.thresholds ?? {}) },
      latencyBudgetMs: { ...base.latencyBudgetMs, ...(t.latency_budget_ms ?? {}) },
    };
  }
  return defaultEngineConfig({
    defaultTier: normalizeTier(v(raw, 'engine.default_tier'))!,
    tiers,
    restrictedModeTightening: v(raw, 'engine.restricted_mode_tightening'),
    lists: v(raw, 'engine.lists'),
    internalDomains: v(raw, 'engine.internal_domains'),
    internalCidrs: v(raw, 'engine.internal_cidrs'),
    namedPatterns: v(raw, 'engine.named_patterns'),
    fallbackOnTimeout: v(raw, 'engine.fallback_on_timeout') as FallbackOnTimeout | undefined,
    humanReviewConfidence: v(raw, 'engine.human_review_confidence'),
  });
}

/** Default limits.max_trace_bytes: leaves ~100 KB of the output limit for the decision record the scoring message adds. */
export const DEFAULT_MAX_TRACE_BYTES = SETTINGS['limits.max_trace_bytes'].default;
/** Default limits.max_message_bytes: below the broker's default max.message.bytes (1 048 588). */
export const DEFAULT_MAX_MESSAGE_BYTES = SETTINGS['limits.max_message_bytes'].default;
/** Default trust_debt.dedup_ttl_seconds: 7 days (docs/trust-debt.md: keep input retention below it). */
export const DEFAULT_DEDUP_TTL_SECONDS = SETTINGS['trust_debt.dedup_ttl_seconds'].default;

/** Builds the typed config from an already validated raw object (after env overrides). */
export function buildConfig(raw0: Raw, env: NodeJS.ProcessEnv = process.env, file?: string): StewardConfig {
  const { raw, sources } = envOverrides(raw0, env);
  // Env values must obey the same schema as the file.
  validateWithEnv(raw0, raw, sources, file);
  const base = file ? dirname(resolve(file)) : process.cwd();
  const fromEnv = (name: string) => sources.some((s) => s.name === name);
  // signing.key is PEM text or a path: a path from the file is relative to the file (as ssl files are).
  const keyPath = (k: string) => (k.includes('-----BEGIN') || fromEnv('STEWARD_SIGNING_KEY') ? k : resolve(base, k));
  const k = (raw.kafka ?? {}) as Raw;
  let ssl: KafkaSettings['ssl'];
  if (typeof k.ssl === 'boolean') ssl = k.ssl;
  else if (k.ssl) {
    ssl = {
      ca: readMaybe(base, k.ssl.ca_file, '$.kafka.ssl.ca_file'),
      cert: readMaybe(base, k.ssl.cert_file, '$.kafka.ssl.cert_file'),
      key: readMaybe(base, k.ssl.key_file, '$.kafka.ssl.key_file'),
      rejectUnauthorized: k.ssl.reject_unauthorized ?? true,
    };
  }
  const bpDir = resolve(base, v(raw, 'blueprints.dir'));
  const agents = v(raw, 'blueprints.agents');
  const topicPrefix = v(raw, 'topics.prefix');
  const skew = v(raw, 'limits.max_event_time_skew_ms');
  const ledgerKey = v(raw, 'signing.ledger_key');
  return {
    kafka: {
      brokers: v(raw, 'kafka.brokers'),
      clientId: v(raw, 'kafka.client_id'),
      ssl,
      sasl: v(raw, 'kafka.sasl') as KafkaSettings['sasl'],
      connectionTimeoutMs: v(raw, 'kafka.connection_timeout_ms'),
      requestTimeoutMs: v(raw, 'kafka.request_timeout_ms'),
    },
    requireLogAppendTime: v(raw, 'kafka.require_log_append_time'),
    schemaRegistryUrl: v(raw, 'schema_registry.url'),
    topics: {
      prefix: topicPrefix,
      partitions: v(raw, 'topics.partitions'),
      replicationFactor: v(raw, 'topics.replication_factor'),
      replyPartitions: v(raw, 'topics.reply_partitions'),
    },
    redis: { url: v(raw, 'redis.url'), keyPrefix: v(raw, 'redis.key_prefix'), trustDebtReadCacheMs: v(raw, 'redis.trust_debt_read_cache_ms'), clusterNodes: v(raw, 'redis.cluster_nodes'), oomRetryMs: v(raw, 'redis.oom_retry_ms') },
    clickhouse: { url: v(raw, 'clickhouse.url'), database: v(raw, 'clickhouse.database'), username: v(raw, 'clickhouse.username'), password: v(raw, 'clickhouse.password') },
    blueprints: {
      dir: bpDir,
      agents: agents ? resolve(base, agents) : existsSync(join(bpDir, 'agents.yaml')) ? join(bpDir, 'agents.yaml') : undefined,
      watch: v(raw, 'blueprints.watch'),
    },
    // A path from the file is relative to the file, like every path in it; one from the environment to the working directory.
    sources: typeof raw.sources === 'string' ? resolve(fromEnv('STEWARD_SOURCES') ? process.cwd() : base, raw.sources) : undefined,
    engine: engineFrom(raw),
    llm: v(raw, 'llm.base_url')
      ? {
          provider: v(raw, 'llm.provider') as 'openai' | 'anthropic',
          baseUrl: v(raw, 'llm.base_url')!,
          apiKey: v(raw, 'llm.api_key'),
          model: v(raw, 'llm.model'),
          timeoutMs: v(raw, 'llm.timeout_ms'),
          maxInFlight: v(raw, 'llm.max_in_flight'),
          thread: v(raw, 'llm.thread'),
        }
      : undefined,
    limits: {
      maxTraceBytes: v(raw, 'limits.max_trace_bytes'),
      maxMessageBytes: v(raw, 'limits.max_message_bytes'),
      chunkSize: v(raw, 'limits.chunk_size'),
      partitionsConcurrently: v(raw, 'limits.partitions_concurrently'),
      shutdownTimeoutMs: v(raw, 'limits.shutdown_timeout_ms'),
      maxEventTimeSkewMs: skew,
    },
    consumer: {
      // Deployments on one cluster told apart by their topic prefix must not share consumer groups: kafkajs would
      // hand one deployment's partitions to the other's members, which drop topics they did not subscribe to.
      groupPrefix: v(raw, 'consumer.group_prefix') ?? defaultGroupPrefix(topicPrefix),
      groupPrefixDefaulted: v(raw, 'consumer.group_prefix') === undefined,
      sessionTimeoutMs: v(raw, 'consumer.session_timeout_ms'),
      autoCommitIntervalMs: v(raw, 'consumer.auto_commit_interval_ms'),
      // The scorer by default: a recomputed verdict can differ from the first (LLM judge), so a redelivery must
      // not leave two behind. The tripwire stage decides deterministically and answers synchronous clients,
      // whose replies a transaction would hold back until its commit.
      exactlyOnce: [...new Set(v(raw, 'consumer.exactly_once'))],
      scorerDedupTtlSeconds: v(raw, 'consumer.scorer_dedup_ttl_seconds'),
      scorerInput: v(raw, 'consumer.scorer_input'),
    },
    trustDebt: {
      auditSweepIntervalMs: v(raw, 'trust_debt.audit_sweep_interval_ms'),
      auditSweepLagMs: v(raw, 'trust_debt.audit_sweep_lag_ms'),
      dedupTtlSeconds: v(raw, 'trust_debt.dedup_ttl_seconds'),
    },
    observability: { enabled: v(raw, 'observability.enabled'), host: v(raw, 'observability.host'), port: v(raw, 'observability.port') },
    http: {
      enabled: v(raw, 'http.enabled'),
      host: v(raw, 'http.host'),
      port: v(raw, 'http.port'),
      tls: (() => {
        const cert = v(raw, 'http.tls.cert_file');
        const key = v(raw, 'http.tls.key_file');
        if (cert === undefined && key === undefined) return undefined;
        if (cert === undefined || key === undefined) throw new StewardError('STEWARD_CONFIG', 'http.tls needs both cert_file (STEWARD_HTTP_TLS_CERT) and key_file (STEWARD_HTTP_TLS_KEY)');
        return { certFile: resolve(fromEnv('STEWARD_HTTP_TLS_CERT') ? process.cwd() : base, cert), keyFile: resolve(fromEnv('STEWARD_HTTP_TLS_KEY') ? process.cwd() : base, key) };
      })(),
      maxBodyBytes: v(raw, 'http.limits.max_body_bytes'),
      maxBatchEvents: v(raw, 'http.limits.max_batch_events'),
      maxInFlightBytes: v(raw, 'http.limits.max_in_flight_bytes'),
      ratePerSecond: v(raw, 'http.limits.rate_per_second'),
      clientTimeoutMs: v(raw, 'http.limits.client_timeout_ms'),
    },
    dashboard: { enabled: v(raw, 'dashboard.enabled'), host: v(raw, 'dashboard.host'), port: v(raw, 'dashboard.port'), refreshMs: v(raw, 'dashboard.refresh_ms'), allowedHosts: v(raw, 'dashboard.allowed_hosts') },
    approvals: (() => {
      const f = v(raw, 'approvals.approvers_file');
      return { approversFile: f ? resolve(fromEnv('STEWARD_APPROVERS_FILE') ? process.cwd() : base, f) : undefined, sweepIntervalMs: v(raw, 'approvals.sweep_interval_ms') };
    })(),
    signing: raw.signing?.key ? { key: keyPath(raw.signing.key), keyId: v(raw, 'signing.key_id') } : undefined,
    ledgerSigning: ledgerKey ? { key: fromEnv('STEWARD_LEDGER_KEY') || ledgerKey.includes('-----BEGIN') ? ledgerKey : resolve(base, ledgerKey), keyId: v(raw, 'signing.ledger_key_id') } : undefined,
    agents: { requireRegistered: v(raw, 'agents.require_registered'), keyMustMatch: v(raw, 'agents.key_must_match'), requireSignature: v(raw, 'agents.require_signature') },
    requireSigningKey: v(raw, 'signing.require_key'),
    allowEphemeralKey: v(raw, 'signing.allow_ephemeral'),
    rollout: (() => {
      const shadow = v(raw, 'rollout.shadow_blueprints');
      const shadowDir = shadow ? resolve(fromEnv('STEWARD_SHADOW_BLUEPRINTS') ? process.cwd() : base, shadow) : undefined;
      return {
        windowMs: v(raw, 'rollout.window_ms'),
        minSamples: v(raw, 'rollout.min_samples'),
        refreshMs: v(raw, 'rollout.refresh_ms'),
        shadowBlueprints: shadowDir,
        shadowId: v(raw, 'rollout.shadow_id') ?? (shadowDir ? shadowDir.split(/[\\/]/).filter(Boolean).pop() : undefined),
        reviewQueue: v(raw, 'rollout.review_queue'),
        reviewSlaMs: v(raw, 'rollout.review_sla_ms'),
      };
    })(),
    logLevel: v(raw, 'log_level'),
    file,
    warnings: ignoredSettings(raw),
  };
}

/** Values the operator set that this configuration ignores: said out loud rather than silently dropped. */
function ignoredSettings(raw: Raw): string[] {
  const out: string[] = [];
  if (!raw.llm?.base_url && (raw.llm?.api_key !== undefined || raw.llm?.model !== undefined)) {
    out.push('llm.api_key / llm.model (or STEWARD_LLM_API_KEY / STEWARD_LLM_MODEL) set without llm.base_url (STEWARD_LLM_BASE_URL): no LLM is configured, llm metrics are skipped');
  }
  if (raw.observability?.enabled === false && (raw.observability?.port !== undefined || raw.observability?.host !== undefined)) {
    out.push('observability.port / host (or STEWARD_METRICS_PORT / STEWARD_METRICS_HOST) set while observability.enabled is false: /metrics is not served (--metrics-port serves it anyway)');
  }
  return out;
}

/**
 * Loads `file` (or ./steward.yaml when present, else defaults), applies the environment and validates.
 * Throws STEWARD_CONFIG (a StewardAggregateError listing every problem) on invalid input.
 */
export function loadStewardConfig(file?: string, env: NodeJS.ProcessEnv = process.env): StewardConfig {
  const path = file ?? (existsSync('steward.yaml') ? 'steward.yaml' : undefined);
  if (path === undefined) return buildConfig({}, env);
  if (!existsSync(path)) throw new StewardError('STEWARD_CONFIG', `config file not found: ${path}`);
  return buildConfig(parseConfigText(readFileSync(path, 'utf8'), path), env, path);
}

/** `steward` for the default topic prefix `acgp`, else `steward-<topic prefix>` (dots kept: valid group ids). */
export function defaultGroupPrefix(topicPrefix: string): string {
  const p = topicPrefix.endsWith('.') ? topicPrefix.slice(0, -1) : topicPrefix;
  return p === 'acgp' ? 'steward' : `steward-${p}`;
}

/** Consumer group id of a stage: `${group_prefix}-${stage}` (all instances of a stage share it). */
export function groupId(cfg: StewardConfig, stage: string): string {
  return `${cfg.consumer.groupPrefix}-${stage}`;
}
