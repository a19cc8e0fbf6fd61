/**
 * Every process setting once: its path in steward.yaml, the environment variable that overrides it, how
 * that variable's text is read, its default, whether it is secret, and one line of documentation.
 * steward-config.ts reads values only through this table; the README's variable table and the comments of
 * steward.example.yaml are checked against it (test/unit/config/settings-table.test.ts).
 */
import { DEFAULT_DEDUP_TTL_SECONDS } from '../adapters/redis/trust-debt-store.js';
import { INGEST_SEND_TIMEOUT_MS, PENDING_WAIT_MS } from '../adapters/http/ingest-batch.js';
import { PENDING_STALE_MS } from '../adapters/redis/idempotency-claims.js';
import { DEFAULT_GATE_LOAD_LIMITS } from '../engine/gate/types.js';

/** How an environment variable's text becomes a value. Text that does not parse is passed on as text, so the schema check names the variable. */
export type EnvKind = 'string' | 'list' | 'int' | 'bool';

export interface Setting<T> {
  /** Path in steward.yaml, dot-separated. */
  path: string;
  env?: string;
  kind?: EnvKind;
  /** Value when neither the file nor the environment sets it; undefined = unset (or derived, see `doc`). */
  default: T;
  /** Never echoed in errors or logs. */
  secret?: boolean;
  doc: string;
}

const s = <T>(path: string, default_: T, doc: string, more: Omit<Setting<T>, 'path' | 'default' | 'doc'> = {}): Setting<T> => ({ path, default: default_, doc, ...more });
const unset = <T>(): T | undefined => undefined;

export const SETTINGS = {
  'kafka.brokers': s('kafka.brokers', ['127.0.0.1:19092'], 'bootstrap brokers (env: comma separated)', { env: 'KAFKA_BROKERS', kind: 'list' }),
  'kafka.client_id': s('kafka.client_id', 'steward', 'Kafka client id'),
  'kafka.ssl': s('kafka.ssl', unset<boolean | Record<string, unknown>>(), 'TLS: true, or { ca_file, cert_file, key_file, reject_unauthorized }'),
  'kafka.sasl': s('kafka.sasl', unset<Record<string, unknown>>(), 'SASL: { mechanism, username, password }', { secret: true }),
  'kafka.require_log_append_time': s('kafka.require_log_append_time', true, 'the tripwire stage refuses to start unless the traces topic stamps LogAppendTime (false: a warning)'),
  'kafka.connection_timeout_ms': s('kafka.connection_timeout_ms', unset<number>(), 'broker connection timeout (kafkajs default when unset)'),
  'kafka.request_timeout_ms': s('kafka.request_timeout_ms', unset<number>(), 'broker request timeout (kafkajs default when unset)'),
  'schema_registry.url': s('schema_registry.url', unset<string>(), 'Confluent-compatible schema registry', { env: 'SCHEMA_REGISTRY_URL' }),
  'topics.prefix': s('topics.prefix', 'acgp', 'topic name prefix (acgp.traces, ...)', { env: 'STEWARD_TOPIC_PREFIX' }),
  'topics.partitions': s('topics.partitions', 6, 'partitions of created topics'),
  'topics.replication_factor': s('topics.replication_factor', 1, 'replication factor of created topics'),
  'topics.reply_partitions': s('topics.reply_partitions', 12, 'partitions of the replies topic'),
  'topics.avro_outputs': s('topics.avro_outputs', [] as ('decisions' | 'verdicts' | 'trust_debt')[], 'output topics written in Avro through the schema registry (decisions, verdicts, trust_debt; env: comma separated); empty = JSON. Readers take both. The ledger stays JSON (docs/pipeline.md "Serde")', { env: 'STEWARD_AVRO_OUTPUTS', kind: 'list' }),
  'redis.url': s('redis.url', 'redis://127.0.0.1:16379', 'Redis (trust debt, rate windows, scorer marks)', { env: 'REDIS_URL' }),
  'redis.key_prefix': s('redis.key_prefix', 'steward:', 'prefix of every Redis key', { env: 'STEWARD_REDIS_PREFIX' }),
  'redis.cluster_nodes': s('redis.cluster_nodes', [] as string[], 'Redis Cluster seed nodes host:port (env: comma separated); set: a Cluster client is used and redis.url only lends its password', { env: 'REDIS_CLUSTER_NODES', kind: 'list' }),
  'redis.oom_retry_ms': s('redis.oom_retry_ms', 60_000, 'a write Redis refuses at maxmemory (OOM) is retried this long, then the input is dead-lettered as STEWARD_STATE_OOM; 0 = retried until memory is added'),
  'redis.trust_debt_read_cache_ms': s('redis.trust_debt_read_cache_ms', 250, 'decisions reuse an agent\'s stored debt state this long; 0 = read every time'),
  'clickhouse.url': s('clickhouse.url', 'http://127.0.0.1:18123', 'ClickHouse HTTP endpoint', { env: 'CLICKHOUSE_URL' }),
  'clickhouse.database': s('clickhouse.database', 'steward', 'ClickHouse database', { env: 'CLICKHOUSE_DATABASE' }),
  'clickhouse.username': s('clickhouse.username', unset<string>(), 'ClickHouse user', { env: 'CLICKHOUSE_USER' }),
  'clickhouse.password': s('clickhouse.password', unset<string>(), 'ClickHouse password', { env: 'CLICKHOUSE_PASSWORD', secret: true }),
  'blueprints.dir': s('blueprints.dir', 'blueprints', 'blueprint directory (hot-reloaded)'),
  'blueprints.agents': s('blueprints.agents', unset<string>(), 'agent registry file (default: agents.yaml in blueprints.dir when present)'),
  'blueprints.watch': s('blueprints.watch', true, 'hot-reload blueprints and the agent registry'),
  'blueprints.workflow_limits.max_steps': s('blueprints.workflow_limits.max_steps', DEFAULT_GATE_LOAD_LIMITS.maxWorkflowSteps, 'most steps in one tier-2 workflow guardrail (gate spec §11); more is STEWARD_GATE_WORKFLOW_LIMIT at load (validate --config, eval --config, run, hot reload)'),
  'blueprints.workflow_limits.max_workflows': s('blueprints.workflow_limits.max_workflows', DEFAULT_GATE_LOAD_LIMITS.maxWorkflows, 'most tier-2 workflows of one blueprint, inherited ones counted (gate spec §11); more is STEWARD_GATE_WORKFLOW_LIMIT at load'),
  sources: s('sources', unset<string>(), 'Certified Source Registry file for source-match metrics', { env: 'STEWARD_SOURCES' }),
  'engine.default_tier': s('engine.default_tier', 'ACL-2', 'tier of agents the registry does not list'),
  'engine.tiers': s('engine.tiers', {} as Record<string, Record<string, unknown>>, 'per-tier thresholds and latency budgets (defaults: docs/spec-decisions.md)'),
  'engine.restricted_mode_tightening': s('engine.restricted_mode_tightening', 0.1, 'how much restricted mode tightens every risk boundary'),
  'engine.lists': s('engine.lists', {} as Record<string, string[]>, 'named lists for in_allowlist / in_denylist'),
  'engine.internal_domains': s('engine.internal_domains', [] as string[], 'domains is_external treats as internal'),
  'engine.internal_cidrs': s('engine.internal_cidrs', [] as string[], 'networks is_external treats as internal'),
  'engine.named_patterns': s('engine.named_patterns', {} as Record<string, string>, 'named RE2 patterns for conditions'),
  'engine.fallback_on_timeout': s('engine.fallback_on_timeout', unset<string>(), 'deny | allow_and_log | cached_decision | escalate (default by tier)'),
  'engine.human_review_confidence': s('engine.human_review_confidence', 0.9, 'verdicts below this confidence are flagged for human review'),
  'agents.require_registered': s('agents.require_registered', false, 'refuse (dead-letter) traces of agents the registry does not list', { env: 'STEWARD_REQUIRE_REGISTERED', kind: 'bool' }),
  'agents.key_must_match': s('agents.key_must_match', true, 'the Kafka key of a trace must be its agent_id'),
  'agents.require_signature': s('agents.require_signature', false, 'every agent must sign its traces (agents with public_keys in the registry always must)'),
  'llm.provider': s('llm.provider', 'openai', 'openai (OpenAI-compatible /v1/chat/completions) | anthropic', { env: 'STEWARD_LLM_PROVIDER' }),
  'llm.base_url': s('llm.base_url', unset<string>(), 'LLM endpoint; unset = no LLM (llm metrics skipped)', { env: 'STEWARD_LLM_BASE_URL' }),
  'llm.api_key': s('llm.api_key', unset<string>(), 'LLM API key', { env: 'STEWARD_LLM_API_KEY', secret: true }),
  'llm.model': s('llm.model', unset<string>(), 'LLM model', { env: 'STEWARD_LLM_MODEL' }),
  'llm.timeout_ms': s('llm.timeout_ms', 10_000, 'timeout of one LLM call'),
  'llm.max_in_flight': s('llm.max_in_flight', 8, 'LLM calls in flight per process'),
  'llm.thread': s('llm.thread', false, 'run the LLM HTTP exchanges on a worker thread of their own (docs/pipeline.md "Gate stage")', { env: 'STEWARD_LLM_THREAD', kind: 'bool' }),
  'limits.max_trace_bytes': s('limits.max_trace_bytes', 900_000, 'larger traces are dead-lettered'),
  'limits.max_message_bytes': s('limits.max_message_bytes', 1_000_000, 'largest output record; keep below the topics\' max.message.bytes'),
  'limits.chunk_size': s('limits.chunk_size', 500, 'records per produce/commit unit inside a partition batch'),
  'limits.partitions_concurrently': s('limits.partitions_concurrently', 4, 'partitions a stage works on at once'),
  'limits.shutdown_timeout_ms': s('limits.shutdown_timeout_ms', 15_000, 'drain time on SIGTERM'),
  'limits.max_event_time_skew_ms': s('limits.max_event_time_skew_ms', 300_000 as number | null, 'trace timestamps are clamped to this distance from the broker time; null trusts them'),
  'consumer.group_prefix': s('consumer.group_prefix', unset<string>(), 'consumer group prefix (default: steward, or steward-<topic prefix>)', { env: 'STEWARD_GROUP_PREFIX' }),
  'consumer.session_timeout_ms': s('consumer.session_timeout_ms', 10_000, 'consumer group session timeout'),
  'consumer.auto_commit_interval_ms': s('consumer.auto_commit_interval_ms', 1000, 'offset commit interval of the at-least-once stages'),
  'consumer.exactly_once': s('consumer.exactly_once', ['scorer'] as ('tripwire' | 'scorer')[], 'stages that commit outputs and offsets in Kafka transactions'),
  'consumer.scorer_dedup_ttl_seconds': s('consumer.scorer_dedup_ttl_seconds', 86_400, 'how long the scorer remembers which record a trace was scored from'),
  'consumer.scorer_input': s('consumer.scorer_input', 'scoring' as 'scoring' | 'join', 'scoring: the tripwire stage writes acgp.scoring for the scorer; join: the scorer reads decisions and their traces (one record out per trace)'),
  'trust_debt.audit_sweep_interval_ms': s('trust_debt.audit_sweep_interval_ms', 900_000, 'good-behaviour audit sweep interval; 0 = lazy credits only'),
  'trust_debt.audit_sweep_lag_ms': s('trust_debt.audit_sweep_lag_ms', 3_600_000, 'credit only windows that ended this long ago (event time)'),
  'trust_debt.dedup_ttl_seconds': s('trust_debt.dedup_ttl_seconds', DEFAULT_DEDUP_TTL_SECONDS, 'how long an applied trust-debt event id is remembered'),
  'observability.enabled': s('observability.enabled', true, 'serve /metrics /healthz /readyz'),
  'observability.host': s('observability.host', '127.0.0.1', 'observability bind address', { env: 'STEWARD_METRICS_HOST' }),
  'observability.port': s('observability.port', 9464, 'observability port', { env: 'STEWARD_METRICS_PORT', kind: 'int' }),
  'http.enabled': s('http.enabled', false, 'serve the HTTP ingress of the acgp client protocol (docs/http.md)', { env: 'STEWARD_HTTP_ENABLED', kind: 'bool' }),
  'http.host': s('http.host', '127.0.0.1', 'HTTP ingress bind address (loopback unless configured)', { env: 'STEWARD_HTTP_HOST' }),
  'http.port': s('http.port', 8080, 'HTTP ingress port', { env: 'STEWARD_HTTP_PORT', kind: 'int' }),
  'http.tls.cert_file': s('http.tls.cert_file', unset<string>(), 'PEM certificate: with key_file, the ingress serves HTTPS', { env: 'STEWARD_HTTP_TLS_CERT' }),
  'http.tls.key_file': s('http.tls.key_file', unset<string>(), 'PEM private key of the ingress certificate', { env: 'STEWARD_HTTP_TLS_KEY' }),
  'http.limits.max_body_bytes': s('http.limits.max_body_bytes', 1_048_576, 'largest request body, after gzip decoding; larger gets 413'),
  'http.limits.max_batch_events': s('http.limits.max_batch_events', 500, 'most events in one batch; more gets 413'),
  'http.limits.max_in_flight_bytes': s('http.limits.max_in_flight_bytes', 67_108_864, 'request bytes handled at once; beyond, 503 + Retry-After (backpressure when Kafka is slow)'),
  'http.limits.max_in_flight_bytes_per_key': s('http.limits.max_in_flight_bytes_per_key', unset<number>(), 'one API key\'s most of max_in_flight_bytes (unset: an eighth of it); beyond, 429 STEWARD_HTTP_KEY_BUSY + Retry-After (one key cannot lock the others out)'),
  'http.limits.max_streams_per_key': s('http.limits.max_streams_per_key', 8, 'one API key\'s most open SSE streams; beyond, 429 STEWARD_HTTP_KEY_STREAMS + Retry-After'),
  'http.limits.rate_per_second': s('http.limits.rate_per_second', 50, 'requests per second per API key (burst: twice that); over gets 429 + Retry-After'),
  'http.limits.client_timeout_ms': s('http.limits.client_timeout_ms', 30_000, 'a request not fully received, or a connection (an SSE reader too) making no progress, this long is closed (slow clients)'),
  'http.idempotency.window_seconds': s('http.idempotency.window_seconds', 86_400, 'how long an ingested event\'s idempotency key is remembered at least (at most twice: keys live in buckets this long); a retry within it is a duplicate, not produced again'),
  'http.idempotency.send_timeout_ms': s('http.idempotency.send_timeout_ms', INGEST_SEND_TIMEOUT_MS, 'a batch whose Kafka send is not acknowledged within this is answered 503 + Retry-After; the send goes on and settles its keys'),
  'http.idempotency.pending_wait_ms': s('http.idempotency.pending_wait_ms', PENDING_WAIT_MS, 'how long a batch waits (from its start) for keys another request is still sending before answering 503 STEWARD_HTTP_PENDING; keep it + 10 s under the clients\' read timeout'),
  'http.idempotency.dedupe': s('http.idempotency.dedupe', 'ingress' as 'ingress' | 'pipeline', 'ingress: a batch\'s keys are claimed in Redis before it is produced, so a retried batch is produced once and the answer counts its duplicates (D39); pipeline: no claim on the request path, every event is produced with its key in a header and the tripwire stage drops the copies of an agent\'s key (D52; more throughput, retries reach acgp.traces again)'),
  'http.idempotency.groups': s('http.idempotency.groups', true, 'a batch in the acgp client\'s form (keys <batch key>_<suffix>) is claimed as one group (docs/spec-decisions.md D48); set false while replicas of a version before groups still serve (a rolling upgrade), true once none does', { kind: 'bool' }),
  'http.idempotency.pending_stale_ms': s('http.idempotency.pending_stale_ms', PENDING_STALE_MS, 'a key pending this long (its replica crashed) may be claimed again; must exceed send_timeout_ms (a send still running would be produced twice)'),
  'dashboard.enabled': s('dashboard.enabled', false, 'steward run also serves the analyst dashboard (docs/dashboard.md; read-only ClickHouse)', { env: 'STEWARD_DASHBOARD_ENABLED', kind: 'bool' }),
  'dashboard.host': s('dashboard.host', '127.0.0.1', 'dashboard bind address (loopback unless configured)', { env: 'STEWARD_DASHBOARD_HOST' }),
  'dashboard.port': s('dashboard.port', 8790, 'dashboard port', { env: 'STEWARD_DASHBOARD_PORT', kind: 'int' }),
  'dashboard.refresh_ms': s('dashboard.refresh_ms', 10_000, 'how often the dashboard page polls its panels'),
  'dashboard.allowed_hosts': s('dashboard.allowed_hosts', [] as string[], 'Host header names the dashboard answers besides localhost, 127.0.0.1, ::1 and dashboard.host (env: comma separated); others get 403 (DNS-rebinding guard): list the names people use when binding elsewhere', { env: 'STEWARD_DASHBOARD_ALLOWED_HOSTS', kind: 'list' }),
  'signing.key': s('signing.key', unset<string>(), 'Ed25519 private key (PEM text or file) for verdicts; unset: steward run refuses to start (see signing.allow_ephemeral)', { env: 'STEWARD_SIGNING_KEY', secret: true }),
  'signing.key_id': s('signing.key_id', unset<string>(), 'key id written into signatures (default: derived from the public key)'),
  'signing.require_key': s('signing.require_key', false, 'refuse to start without a signing key (production)', { env: 'STEWARD_REQUIRE_SIGNING_KEY', kind: 'bool' }),
  'signing.allow_ephemeral': s('signing.allow_ephemeral', false, 'let steward run sign with a throwaway key (a trial: nothing it signs verifies after a restart)', { env: 'STEWARD_ALLOW_EPHEMERAL_KEY', kind: 'bool' }),
  'signing.ledger_key': s('signing.ledger_key', unset<string>(), 'Ed25519 key for ledger entries (default: signing.key)', { env: 'STEWARD_LEDGER_KEY', secret: true }),
  'signing.ledger_key_id': s('signing.ledger_key_id', unset<string>(), 'key id of the ledger key', { env: 'STEWARD_LEDGER_KEY_ID' }),
  'approvals.approvers_file': s('approvals.approvers_file', unset<string>(), 'the approver registry (approvers.yaml: ids, public keys, hashed API keys, roles per tenant/tier; docs/approvals.md); unset: no answer is accepted, every approval times out', { env: 'STEWARD_APPROVERS_FILE' }),
  'approvals.sweep_interval_ms': s('approvals.sweep_interval_ms', 1000, 'how often the approvals stage looks for due approval deadlines in Redis', { env: 'STEWARD_APPROVAL_SWEEP_MS', kind: 'int' }),
  'rollout.window_ms': s('rollout.window_ms', 300_000, 'window of rollback triggers without their own "over" (docs/rollout.md)'),
  'rollout.min_samples': s('rollout.min_samples', 20, 'decisions an arm needs in a window before a trigger may judge it'),
  'rollout.refresh_ms': s('rollout.refresh_ms', 1000, 'how often each instance re-reads the shared rollout state from Redis'),
  'rollout.shadow_blueprints': s('rollout.shadow_blueprints', unset<string>(), 'candidate blueprint directory evaluated in shadow on live traffic (never answers); unset = no shadow', { env: 'STEWARD_SHADOW_BLUEPRINTS' }),
  'rollout.shadow_id': s('rollout.shadow_id', unset<string>(), 'name of the shadow run in shadow_diffs (default: the directory name)'),
  'rollout.review_queue': s('rollout.review_queue', true, 'verdicts below engine.human_review_confidence enter the review queue (acgp.review-queue)'),
  'rollout.review_sla_ms': s('rollout.review_sla_ms', 14_400_000, 'a queued review is overdue after this long (sla_due_ms, aging metrics)'),
  log_level: s('log_level', 'info', 'trace | debug | info | warn | error | fatal | silent', { env: 'STEWARD_LOG_LEVEL' }),
} as const;

export type SettingPath = keyof typeof SETTINGS;
export type SettingValue<K extends SettingPath> = (typeof SETTINGS)[K]['default'];

export const SETTING_LIST: readonly Setting<unknown>[] = Object.values(SETTINGS);

/** The value at `path` in a (validated) raw config, else the setting's default. */
export function settingValue<K extends SettingPath>(raw: Record<string, unknown>, path: K): SettingValue<K> {
  let o: unknown = raw;
  for (const k of path.split('.')) o = o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined;
  return (o === undefined ? SETTINGS[path].default : o) as SettingValue<K>;
}

/** Reads an environment variable's text as its setting's kind (text that does not parse is returned as is). */
export function parseEnvText(kind: EnvKind | undefined, text: string): unknown {
  switch (kind) {
    case 'list':
      return text
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    case 'int':
      return /^\s*\d+\s*$/.test(text) ? Number(text) : text;
    case 'bool': {
      const v = text.trim().toLowerCase();
      return v === '1' || v === 'true' ? true : v === '0' || v === 'false' ? false : text;
    }
    default:
      return text;
  }
}

/** Names of the variables whose values are never echoed. */
export const SECRET_ENV: ReadonlySet<string> = new Set(SETTING_LIST.filter((x) => x.secret && x.env).map((x) => x.env!));

/** The settings table as Markdown (README.md, between the `settings:begin` / `settings:end` markers). */
export function settingsMarkdown(): string {
  const shown = (x: unknown): string => (x === undefined ? '' : `\`${JSON.stringify(x)}\``);
  const rows = SETTING_LIST.map((x) => `| \`${x.path}\` | ${x.env ? `\`${x.env}\`` : ''} | ${shown(x.default)} | ${x.secret ? 'yes' : ''} | ${x.doc.replace(/\|/g, '\\|')} |`);
  return ['| setting | environment | default | secret | what it does |', '| --- | --- | --- | --- | --- |', ...rows].join('\n');
}
