import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MAX_LABEL_CHARS, describeHidden, redactSecrets, redactUrl, safeLabelValue } from '../../../src/observability/redact.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import { createLogger } from '../../../src/logger.js';

const SECRET = 'SuperSecretPw';

/** A logger writing JSON lines into `lines`. */
function capture(): { lines: () => Record<string, unknown>[]; raw: () => string; logger: ReturnType<typeof createLogger> } {
  let buf = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      buf += String(chunk);
      cb();
    },
  });
  const logger = createLogger({ level: 'info', destination: stream as never });
  return { logger, raw: () => buf, lines: () => buf.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('redactSecrets / redactUrl', () => {
  it.each([
    [`redis://:${SECRET}@127.0.0.1:1`, 'redis://:***@127.0.0.1:1'],
    [`rediss://default:${SECRET}@redis.example:6380/0`, 'rediss://default:***@redis.example:6380/0'],
    [`http://steward:${SECRET}@clickhouse:8123/?database=x`, 'http://steward:***@clickhouse:8123/?database=x'],
    [`https://u:${SECRET}@registry.example/apis/ccompat/v7`, 'https://u:***@registry.example/apis/ccompat/v7'],
    ['http://127.0.0.1:18123/path@x', 'http://127.0.0.1:18123/path@x'],
    ['redis://127.0.0.1:16379', 'redis://127.0.0.1:16379'],
    ['https://user@host/', 'https://user@host/'],
    // a raw `@` in the password: everything up to the authority's last `@` is hidden
    ['redis://default:p@ss@w0rd@redis:6379/0', 'redis://default:***@redis:6379/0'],
    ['http://u:a@b@ch:8123/?q=x@y', 'http://u:***@ch:8123/?q=x@y'],
    // a URL without credentials inside JSON does not swallow the fields after it
    ['{"url":"http://host:8123","email":"a@b.com","x":"y@z"}', '{"url":"http://host:8123","email":"a@b.com","x":"y@z"}'],
    // `,` and `'` are legal in a password: hidden too (over-hiding a host list is the safe way to fail)
    ['redis://:pa,ss@host:6379', 'redis://:***@host:6379'],
    ["redis://u:it's@host", 'redis://u:***@host'],
    ['redis://:pw@h1:26379,h2@x', 'redis://:***@x'],
  ])('%s → %s', (url, want) => {
    expect(redactUrl(url)).toBe(want);
  });

  it('masks every URL inside a text and leaves other text alone', () => {
    const t = redactSecrets(`a redis://:${SECRET}@h:1 and http://x:${SECRET}2@y/ end`);
    expect(t).toBe('a redis://:***@h:1 and http://x:***@y/ end');
    expect(redactUrl(undefined)).toBeUndefined();
  });

  it('describes hidden values by length only', () => {
    expect(describeHidden('MC4CAQAwBQYDK2VwBCIEI')).toBe('value hidden, 21 chars');
  });
});

describe('logger redaction', () => {
  it('never writes a URL password or a configured secret', () => {
    const c = capture();
    c.logger.warn(`redis not reachable at redis://:${SECRET}@127.0.0.1:1`);
    c.logger.warn({ url: `redis://:${SECRET}@127.0.0.1:1`, err: new Error(`connect to http://u:${SECRET}@ch:8123 failed`) }, 'x');
    c.logger.info({ kafka: { sasl: { mechanism: 'plain', username: 'u', password: SECRET } }, llm: { apiKey: SECRET }, clickhouse: { password: SECRET }, signing: { key: SECRET } }, 'config');
    expect(c.raw()).not.toContain(SECRET);
    const [a, b, cfg] = c.lines();
    expect(a.msg).toBe('redis not reachable at redis://:***@127.0.0.1:1');
    expect(b.url).toBe('redis://:***@127.0.0.1:1');
    expect((b.err as { message: string }).message).toBe('connect to http://u:***@ch:8123 failed');
    expect((cfg.kafka as { sasl: { username: string } }).sasl.username).toBe('u');
  });
});

describe('steward_trust_debt label values', () => {
  const series = async (m: StewardMetrics) => (await m.registry.getSingleMetric('steward_trust_debt')!.get()).values.map((v) => v.labels as Record<string, string>);

  it('strips control characters and caps long agent ids with a hash suffix (distinct ids stay distinct)', async () => {
    const m = new StewardMetrics();
    const huge = 'a'.repeat(100_000);
    m.setTrustDebt('default', huge, 0.5, 'normal');
    m.setTrustDebt('default', `${huge}b`, 0.5, 'normal');
    m.setTrustDebt('default', 'agent\u0000\n\u001b[31mx\u007f', 0.1, 'normal');
    const labels = await series(m);
    expect(labels).toHaveLength(3);
    for (const l of labels) {
      expect(l.agent_id.length).toBeLessThanOrEqual(MAX_LABEL_CHARS);
      // eslint-disable-next-line no-control-regex
      expect(l.agent_id).not.toMatch(/[\u0000-\u001f\u007f]/);
    }
    expect(labels[0].agent_id).toMatch(/^a+~[0-9a-f]{12}$/);
    expect(labels[0].agent_id).not.toBe(labels[1].agent_id);
    expect(labels[2].agent_id).toBe('agent[31mx');
    const text = await m.registry.metrics();
    expect(text).not.toContain('\u0000');
    expect(text.length).toBeLessThan(20_000);
  });

  it('the same long id updates one series; the LRU bound still holds', async () => {
    const m = new StewardMetrics({ maxTrustDebtSeries: 3 });
    const long = 'x'.repeat(500);
    m.setTrustDebt('t', long, 0.1, 'normal');
    m.setTrustDebt('t', long, 0.2, 'normal');
    expect(await series(m)).toHaveLength(1);
    for (let i = 0; i < 50; i++) m.setTrustDebt('t', `${long}${i}`, 0, 'normal');
    expect(await series(m)).toHaveLength(3);
  });

  it('safeLabelValue keeps short clean values unchanged', () => {
    expect(safeLabelValue('agent-1')).toBe('agent-1');
    expect(safeLabelValue('é'.repeat(128))).toBe('é'.repeat(128));
  });
});
