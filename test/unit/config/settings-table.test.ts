import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SETTING_LIST, settingsMarkdown } from '../../../src/config/settings.js';

/**
 * The settings table (src/config/settings.ts) is the one place a setting is declared; README.md's variable
 * table and steward.example.yaml must agree with it.
 */
const example = readFileSync('steward.example.yaml', 'utf8').split('\n');
const byPath = new Map(SETTING_LIST.map((s) => [s.path, s]));
/** Settings whose value is a mapping: keys below them are free (tiers, lists, ...). */
const open = SETTING_LIST.filter((s) => s.default === undefined || (typeof s.default === 'object' && s.default !== null && !Array.isArray(s.default))).map((s) => s.path);

interface ExampleKey {
  path: string;
  line: string;
  commented: boolean;
  value: string;
}

/** Every `key:` of the example, commented out or not, with its dotted path (from indentation). */
function exampleKeys(): ExampleKey[] {
  const out: ExampleKey[] = [];
  const stack: { indent: number; key: string }[] = [];
  for (const raw of example) {
    const commented = /^\s*#/.test(raw);
    const line = commented ? raw.replace(/^(\s*)#\s?/, '$1') : raw;
    const m = /^(\s*)([a-z_][a-z0-9_]*):(?:\s|$)(.*)$/.exec(line);
    if (!m) continue;
    const indent = m[1].length;
    while (stack.length > 0 && stack[stack.length - 1].indent >= indent) stack.pop();
    stack.push({ indent, key: m[2] });
    out.push({ path: stack.map((x) => x.key).join('.'), line: raw, commented, value: m[3].replace(/\s+#.*$/, '').trim() });
  }
  return out;
}

describe('settings table', () => {
  it('README.md lists exactly the table (regenerate: npx tsx scripts/gen-settings-doc.ts)', () => {
    const readme = readFileSync('README.md', 'utf8');
    const m = /<!-- settings:begin -->\n([\s\S]*?)\n<!-- settings:end -->/.exec(readme);
    expect(m, 'README.md settings markers').not.toBeNull();
    expect(m![1]).toBe(settingsMarkdown());
  });

  it('steward.example.yaml names every setting, and only settings', () => {
    const keys = exampleKeys();
    const paths = new Set(keys.map((k) => k.path));
    expect(SETTING_LIST.map((s) => s.path).filter((p) => !paths.has(p))).toEqual([]);
    const unknown = keys.map((k) => k.path).filter((p) => !byPath.has(p) && !open.some((o) => p.startsWith(`${o}.`)) && !SETTING_LIST.some((s) => s.path.startsWith(`${p}.`)));
    expect(unknown).toEqual([]);
  });

  it("steward.example.yaml names each setting's environment variable on its line, and no other variable", () => {
    const keys = exampleKeys();
    for (const s of SETTING_LIST.filter((x) => x.env)) {
      const lines = keys.filter((k) => k.path === s.path).map((k) => k.line);
      expect(lines.some((l) => l.includes(s.env!)), `${s.path}: ${s.env} on its line`).toBe(true);
    }
    const named = new Set([...example.join('\n').matchAll(/\benv ([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]));
    expect([...named].filter((n) => !SETTING_LIST.some((s) => s.env === n))).toEqual([]);
  });

  it('values steward.example.yaml sets are the defaults, where the table has a scalar default', () => {
    for (const k of exampleKeys()) {
      const s = byPath.get(k.path);
      if (!s || k.commented || k.value === '' || s.default === undefined || (typeof s.default === 'object' && s.default !== null)) continue;
      expect(parse(k.value), k.path).toEqual(s.default);
    }
  });

  it('every table path exists in schemas/steward-config.schema.json', () => {
    type SchemaNode = { properties?: Record<string, SchemaNode> };
    const schema = JSON.parse(readFileSync('schemas/steward-config.schema.json', 'utf8')) as SchemaNode;
    const missing = SETTING_LIST.filter((s) => {
      let node: SchemaNode | undefined = schema;
      for (const k of s.path.split('.')) node = node?.properties?.[k];
      return node === undefined;
    });
    expect(missing.map((s) => s.path)).toEqual([]);
  });
});

describe('settings read through the table', () => {
  it('llm.provider comes from the file or STEWARD_LLM_PROVIDER, and a bad value names the variable', async () => {
    const { buildConfig } = await import('../../../src/config/steward-config.js');
    expect(buildConfig({ llm: { base_url: 'http://127.0.0.1:1' } }, {}).llm?.provider).toBe('openai');
    expect(buildConfig({ llm: { base_url: 'http://127.0.0.1:1', provider: 'anthropic' } }, {}).llm?.provider).toBe('anthropic');
    expect(buildConfig({}, { STEWARD_LLM_BASE_URL: 'http://127.0.0.1:1', STEWARD_LLM_PROVIDER: 'anthropic' }).llm?.provider).toBe('anthropic');
    expect(() => buildConfig({}, { STEWARD_LLM_BASE_URL: 'http://127.0.0.1:1', STEWARD_LLM_PROVIDER: 'nope' })).toThrow(/STEWARD_LLM_PROVIDER=nope/);
  });

  it('every variable of the table overrides its setting (an empty one counts as unset)', async () => {
    const { buildConfig } = await import('../../../src/config/steward-config.js');
    const d = buildConfig({}, {});
    const e = buildConfig({}, { STEWARD_TOPIC_PREFIX: 'p1', STEWARD_REDIS_PREFIX: 'rp:', STEWARD_METRICS_PORT: '9999', STEWARD_LEDGER_KEY_ID: 'lk', STEWARD_LEDGER_KEY: '-----BEGIN PRIVATE KEY-----x', KAFKA_BROKERS: 'a:1, b:2', CLICKHOUSE_DATABASE: '' });
    expect([e.topics.prefix, e.redis.keyPrefix, e.observability.port, e.ledgerSigning?.keyId, e.kafka.brokers, e.clickhouse.database]).toEqual(['p1', 'rp:', 9999, 'lk', ['a:1', 'b:2'], d.clickhouse.database]);
  });
});
