/** steward.yaml `sources:` / STEWARD_SOURCES: the Certified Source Registry of `steward run` (same loader as `steward eval --sources`). */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildConfig, loadStewardConfig, parseConfigText } from '../../../src/config/steward-config.js';
import { loadSourceRegistry } from '../../../src/process/engine-runtime.js';
import { StewardError } from '../../../src/errors.js';

const GOLDEN_SOURCES = join(import.meta.dirname, '../../golden/eval/sources.yaml');

describe('sources setting', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('is unset by default: no registry', () => {
    const cfg = buildConfig({}, {});
    expect(cfg.sources).toBeUndefined();
    expect(loadSourceRegistry(cfg)).toBeUndefined();
  });

  it('resolves relative to the config file and loads with the eval loader', () => {
    dir = mkdtempSync(join(tmpdir(), 'steward-src-'));
    writeFileSync(join(dir, 'sources.yaml'), 'sources:\n  - { id: sec-10k, category: regulatory_filing, trust: 0.95 }\n');
    writeFileSync(join(dir, 'steward.yaml'), 'sources: sources.yaml\n');
    const cfg = loadStewardConfig(join(dir, 'steward.yaml'), {});
    expect(cfg.sources).toBe(join(dir, 'sources.yaml'));
    const reg = loadSourceRegistry(cfg)!;
    expect(reg.size()).toBe(1);
    expect(reg.get('sec-10k')).toMatchObject({ category: 'regulatory_filing', trust: 0.95 });
  });

  it('STEWARD_SOURCES overrides the file setting', () => {
    const cfg = buildConfig(parseConfigText('sources: elsewhere.yaml\n'), { STEWARD_SOURCES: GOLDEN_SOURCES });
    expect(cfg.sources).toBe(GOLDEN_SOURCES);
    expect(loadSourceRegistry(cfg)!.get('reuters')?.trust).toBe(0.85);
  });

  it('a missing or invalid registry file is a STEWARD_CONFIG error at startup', () => {
    const d = (dir = mkdtempSync(join(tmpdir(), 'steward-src-')));
    expect(() => loadSourceRegistry(buildConfig({ sources: join(d, 'nope.yaml') }, {}))).toThrow(expect.objectContaining({ code: 'STEWARD_CONFIG' }));
    writeFileSync(join(d, 'bad.yaml'), 'sources:\n  - { id: x, trust: 2 }\n');
    expect(() => loadSourceRegistry(buildConfig({ sources: join(d, 'bad.yaml') }, {}))).toThrow(StewardError);
    expect(() => parseConfigText('sources: 5\n')).toThrow(expect.objectContaining({ code: 'STEWARD_CONFIG' }));
  });
});
