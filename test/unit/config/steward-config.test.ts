import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { buildConfig, parseConfigText, groupId } from '../../../src/config/steward-config.js';
import { StewardAggregateError } from '../../../src/errors.js';

describe('steward.yaml', () => {
  it('applies defaults and environment overrides', () => {
    const raw = parseConfigText('kafka:\n  brokers: ["k1:9092"]\ntopics:\n  prefix: prod\n  partitions: 12\n');
    const cfg = buildConfig(raw, { KAFKA_BROKERS: 'a:1, b:2', STEWARD_TOPIC_PREFIX: 'stage', REDIS_URL: 'redis://r:6379', STEWARD_LLM_BASE_URL: 'http://llm:8000', STEWARD_LLM_MODEL: 'm' });
    expect(cfg.kafka.brokers).toEqual(['a:1', 'b:2']);
    expect(cfg.topics).toMatchObject({ prefix: 'stage', partitions: 12, replicationFactor: 1 });
    expect(cfg.redis.url).toBe('redis://r:6379');
    expect(cfg.llm).toMatchObject({ baseUrl: 'http://llm:8000', model: 'm' });
    expect(cfg.engine.defaultTier).toBe('ACL-2');
    // a deployment with its own topic prefix gets its own consumer groups
    expect(groupId(cfg, 'tripwire')).toBe('steward-stage-tripwire');
    expect(groupId(buildConfig({}, {}), 'tripwire')).toBe('steward-tripwire');
    expect(groupId(buildConfig({}, { STEWARD_TOPIC_PREFIX: 'acgp.' }), 'scorer')).toBe('steward-scorer');
    expect(groupId(buildConfig(parseConfigText('consumer:\n  group_prefix: g\n'), { STEWARD_TOPIC_PREFIX: 'stage' }), 'sink')).toBe('g-sink');
    expect(groupId(buildConfig({}, { STEWARD_TOPIC_PREFIX: 'stage', STEWARD_GROUP_PREFIX: 'ops' }), 'sink')).toBe('ops-sink');
  });

  it('ClickHouse database and credentials and the metrics host from the environment', () => {
    const cfg = buildConfig({}, { CLICKHOUSE_DATABASE: 'prod', CLICKHOUSE_USER: 'bob', CLICKHOUSE_PASSWORD: 'pw', STEWARD_METRICS_HOST: '0.0.0.0' });
    expect(cfg.clickhouse).toMatchObject({ database: 'prod', username: 'bob', password: 'pw' });
    expect(cfg.observability.host).toBe('0.0.0.0');
    expect(() => buildConfig({}, { CLICKHOUSE_DATABASE: 'no-dashes', CLICKHOUSE_PASSWORD: 's3cret' })).toThrow(/CLICKHOUSE_DATABASE=no-dashes/);
  });

  it('dashboard.allowed_hosts: none by default, a list from the file or STEWARD_DASHBOARD_ALLOWED_HOSTS', () => {
    expect(buildConfig({}, {}).dashboard.allowedHosts).toEqual([]);
    expect(buildConfig(parseConfigText('dashboard:\n  host: 0.0.0.0\n  allowed_hosts: [dash.internal]\n'), {}).dashboard).toMatchObject({ host: '0.0.0.0', allowedHosts: ['dash.internal'] });
    expect(buildConfig({}, { STEWARD_DASHBOARD_ALLOWED_HOSTS: 'dash.internal, 10.0.0.7' }).dashboard.allowedHosts).toEqual(['dash.internal', '10.0.0.7']);
    expect(() => buildConfig(parseConfigText('dashboard:\n  allowed_hosts: dash.internal\n'), {})).toThrow(/allowed_hosts/);
  });

  it('output limit: max_message_bytes 1 000 000 by default (below the broker default 1 048 588), traces 900 000 with headroom', () => {
    const cfg = buildConfig({}, {});
    expect(cfg.limits.maxMessageBytes).toBe(1_000_000);
    expect(cfg.limits.maxTraceBytes).toBe(900_000);
    expect(cfg.limits.maxTraceBytes).toBeLessThan(cfg.limits.maxMessageBytes);
    expect(buildConfig(parseConfigText('limits:\n  max_trace_bytes: 1048576\n'), {}).limits).toMatchObject({ maxTraceBytes: 1_048_576, maxMessageBytes: 1_000_000 });
  });

  it('signing.require_key / STEWARD_REQUIRE_SIGNING_KEY', () => {
    expect(buildConfig({}, {}).requireSigningKey).toBe(false);
    expect(buildConfig(parseConfigText('signing:\n  require_key: true\n'), {}).requireSigningKey).toBe(true);
    expect(buildConfig({}, { STEWARD_REQUIRE_SIGNING_KEY: '1' }).requireSigningKey).toBe(true);
    expect(buildConfig({}, { STEWARD_REQUIRE_SIGNING_KEY: 'false' }).requireSigningKey).toBe(false);
    expect(() => buildConfig({}, { STEWARD_REQUIRE_SIGNING_KEY: 'maybe' })).toThrow(/require_key/);
  });

  it('a kafka.ssl file that cannot be read is a STEWARD_CONFIG error naming the setting and the path', () => {
    expect(() => buildConfig(parseConfigText('kafka:\n  ssl:\n    ca_file: no/such/ca.pem\n'), {}, '/etc/steward/steward.yaml')).toThrow(
      expect.objectContaining({ code: 'STEWARD_CONFIG', message: '$.kafka.ssl.ca_file: cannot read /etc/steward/no/such/ca.pem: ENOENT' }),
    );
  });

  it('paths in the file are relative to the file; paths from the environment to the working directory', () => {
    const fileCfg = buildConfig(parseConfigText('signing:\n  key: keys/signing.pem\nsources: sources.yaml\n'), {}, '/etc/steward/steward.yaml');
    expect(fileCfg.signing?.key).toBe('/etc/steward/keys/signing.pem');
    expect(fileCfg.sources).toBe('/etc/steward/sources.yaml');
    const envCfg = buildConfig({}, { STEWARD_SIGNING_KEY: 'keys/signing.pem', STEWARD_SOURCES: 'sources.yaml' }, '/etc/steward/steward.yaml');
    expect(envCfg.signing?.key).toBe('keys/signing.pem');
    expect(envCfg.sources).toBe(`${process.cwd()}/sources.yaml`);
    // PEM text stays as it is
    const pem = '-----BEGIN PRIVATE KEY-----\nX\n-----END PRIVATE KEY-----\n';
    expect(buildConfig({ signing: { key: pem } }, {}, '/etc/steward/steward.yaml').signing?.key).toBe(pem);
  });

  it('names settings that take no effect', () => {
    expect(buildConfig({}, {}).warnings).toEqual([]);
    expect(buildConfig({}, { STEWARD_LLM_API_KEY: 'k' }).warnings).toEqual([expect.stringMatching(/without llm.base_url/)]);
    expect(buildConfig({}, { STEWARD_LLM_API_KEY: 'k', STEWARD_LLM_BASE_URL: 'http://llm' }).warnings).toEqual([]);
    expect(buildConfig(parseConfigText('observability:\n  enabled: false\n'), { STEWARD_METRICS_PORT: '9000' }).warnings).toEqual([expect.stringMatching(/is not served/)]);
  });

  it('trust_debt.dedup_ttl_seconds: 7 days by default, at least an hour', () => {
    expect(buildConfig({}, {}).trustDebt.dedupTtlSeconds).toBe(604_800);
    expect(buildConfig(parseConfigText('trust_debt:\n  dedup_ttl_seconds: 1209600\n'), {}).trustDebt.dedupTtlSeconds).toBe(1_209_600);
    expect(() => parseConfigText('trust_debt:\n  dedup_ttl_seconds: 600\n', 'steward.yaml')).toThrow(/steward\.yaml:2:\d+.*dedup_ttl_seconds/s);
  });

  it('consumer.exactly_once: the scorer by default, only stages with Kafka outputs; scorer dedup for a day', () => {
    const d = buildConfig({}, {});
    expect(d.consumer.exactlyOnce).toEqual(['scorer']);
    expect(d.consumer.scorerDedupTtlSeconds).toBe(86_400);
    expect(buildConfig(parseConfigText('consumer:\n  exactly_once: [tripwire, scorer, scorer]\n  scorer_dedup_ttl_seconds: 0\n'), {}).consumer).toMatchObject({ exactlyOnce: ['tripwire', 'scorer'], scorerDedupTtlSeconds: 0 });
    expect(buildConfig(parseConfigText('consumer:\n  exactly_once: []\n'), {}).consumer.exactlyOnce).toEqual([]);
    // The trust-debt stage's Redis effects would not roll back with an aborted transaction.
    expect(() => parseConfigText('consumer:\n  exactly_once: [trust-debt]\n', 'steward.yaml')).toThrow(/steward\.yaml:2:\d+.*exactly_once/s);
  });

  it('clamps agent timestamps by default; null trusts them', () => {
    expect(buildConfig({}, {}).limits.maxEventTimeSkewMs).toBe(300_000);
    expect(buildConfig(parseConfigText('limits:\n  max_event_time_skew_ms: null\n'), {}).limits.maxEventTimeSkewMs).toBeNull();
    expect(buildConfig(parseConfigText('limits:\n  max_event_time_skew_ms: 1000\n'), {}).limits.maxEventTimeSkewMs).toBe(1000);
    expect(() => buildConfig(parseConfigText('limits:\n  max_event_time_skew_ms: -1\n'), {})).toThrow(/max_event_time_skew_ms/);
  });

  it('maps engine settings (GT alias, tier overrides, lists)', () => {
    const raw = parseConfigText('engine:\n  default_tier: GT-3\n  tiers:\n    ACL-1: { thresholds: { ok: 0.2 } }\n  lists:\n    banned: [a, b]\n  fallback_on_timeout: deny\n');
    const cfg = buildConfig(raw, {});
    expect(cfg.engine.defaultTier).toBe('ACL-3');
    expect(cfg.engine.tiers['ACL-1'].thresholds).toEqual({ ok: 0.2, nudge: 0.45, escalate: 0.6, block: 0.75 });
    expect(cfg.engine.lists).toEqual({ banned: ['a', 'b'] });
    expect(cfg.engine.fallbackOnTimeout).toBe('deny');
  });

  it('reports every problem with file, line, column and path', () => {
    const text = ['kafka:', '  brokers: ["no-port"]', '  client_idd: x', 'topics:', '  partitions: 0', 'log_level: loud', ''].join('\n');
    let err: unknown;
    try {
      parseConfigText(text, 'steward.yaml');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StewardAggregateError);
    const errs = (err as StewardAggregateError).errors;
    expect(errs.every((e) => e.code === 'STEWARD_CONFIG')).toBe(true);
    const lines = errs.map((e) => `${e.position?.line}:${e.position?.path}`);
    expect(lines).toEqual(expect.arrayContaining(['2:$.kafka.brokers[0]', '3:$.kafka.client_idd', '5:$.topics.partitions', '6:$.log_level']));
    expect(errs.find((e) => e.position?.path === '$.kafka.client_idd')!.message).toContain("unknown key 'client_idd'");
    // an unknown key is reported at the key, not at its value
    expect(errs.find((e) => e.position?.path === '$.kafka.client_idd')!.position).toMatchObject({ line: 3, col: 3 });
  });

  it('rejects bad YAML and bad environment values', () => {
    expect(() => parseConfigText('kafka: [unclosed', 'f.yaml')).toThrow(/STEWARD_CONFIG/);
    expect(() => buildConfig({}, { REDIS_URL: 'http://not-redis' })).toThrow(/\$\.redis\.url/);
  });

  it('http.idempotency: defaults, set values, and a stale bound that does not exceed the send timeout refused', () => {
    expect(buildConfig({}, {}).http.idempotency).toEqual({ windowSeconds: 86_400, sendTimeoutMs: 20_000, pendingWaitMs: 15_000, pendingStaleMs: 40_000, groups: true, dedupe: 'ingress' });
    const set = buildConfig({ http: { idempotency: { window_seconds: 3600, send_timeout_ms: 5000, pending_wait_ms: 2000, pending_stale_ms: 12_000, groups: false, dedupe: 'pipeline' } } }, {});
    expect(set.http.idempotency).toEqual({ windowSeconds: 3600, sendTimeoutMs: 5000, pendingWaitMs: 2000, pendingStaleMs: 12_000, groups: false, dedupe: 'pipeline' });
    expect(() => buildConfig({ http: { idempotency: { dedupe: 'stage' } } }, {})).toThrow(/\$\.http\.idempotency\.dedupe/);
    expect(() => buildConfig({ http: { idempotency: { send_timeout_ms: 40_000 } } }, {})).toThrow(/pending_stale_ms \(40000\) must exceed http\.idempotency\.send_timeout_ms \(40000\)/);
    expect(() => buildConfig({ http: { idempotency: { pending_wait_ms: -1 } } }, {})).toThrow(/\$\.http\.idempotency\.pending_wait_ms/);
  });

  it('http.limits per key: the byte share unset by default (the ingress takes an eighth of max_in_flight_bytes), 8 streams; set values pass through', () => {
    expect(buildConfig({}, {}).http).toMatchObject({ maxInFlightBytesPerKey: undefined, maxStreamsPerKey: 8 });
    expect(buildConfig({ http: { limits: { max_in_flight_bytes_per_key: 4096, max_streams_per_key: 2 } } }, {}).http).toMatchObject({ maxInFlightBytesPerKey: 4096, maxStreamsPerKey: 2 });
    expect(() => buildConfig({ http: { limits: { max_streams_per_key: 0 } } }, {})).toThrow(/\$\.http\.limits\.max_streams_per_key/);
  });

  it('steward.example.yaml documents a valid configuration', () => {
    const cfg = buildConfig(parseConfigText(readFileSync('steward.example.yaml', 'utf8'), 'steward.example.yaml'), {}, 'steward.example.yaml');
    expect(cfg.topics.prefix).toBe('acgp');
    expect(cfg.consumer.groupPrefix).toBe('steward');
  });
});
