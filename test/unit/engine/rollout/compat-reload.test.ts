// The compatibility matrix where operators meet it: `steward validate` reports an incompatible blueprint with
// file:line:col and $.path, and a hot reload to an incompatible file is rejected while the last good set serves.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { watchBlueprints } from '../../../../src/adapters/fs/blueprint-watcher.js';
import { run as validate } from '../../../../src/cli/commands/validate.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { useTempDirs } from '../../adapters/fs/temp-dirs.js';
import { ROLL_V1 } from './fixtures.js';

const { tmp, holders } = useTempDirs('steward-compat-');
afterEach(() => vi.restoreAllMocks());
const INCOMPATIBLE = `${ROLL_V1.trimEnd()}
compatibility:
  versions:
    - version: "1.0.0"
      compatible_with: [{ steward: ">=9.0.0" }]
`;

describe('compatibility matrix at load', () => {
  it('steward validate rejects an incompatible blueprint with its position', async () => {
    const d = tmp();
    const file = join(d, 'roll.yaml');
    writeFileSync(file, INCOMPATIBLE);
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(await validate([file])).not.toBe(0);
    expect(out).toMatch(/roll\.yaml:\d+:\d+: STEWARD_BLUEPRINT_INCOMPATIBLE: .*requires Steward >=9\.0\.0; this is 0\.1\.0/);
    expect(out).toContain('$.compatibility.versions[0].compatible_with[0].steward');
  });

  it('a hot reload to an incompatible file is rejected and the last good set keeps serving', async () => {
    const d = tmp();
    writeFileSync(join(d, 'roll.yaml'), ROLL_V1);
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), watch: false });
    holders.push(h);
    writeFileSync(join(d, 'roll.yaml'), INCOMPATIBLE);
    const ev = await h.reload();
    expect(ev.ok).toBe(false);
    expect(ev.ok ? [] : ev.errors.map((e) => e.code)).toContain('STEWARD_BLUEPRINT_INCOMPATIBLE');
    expect(h.current().get('t/roll@1.0.0')?.version).toBe('1.0.0');
  });
});
