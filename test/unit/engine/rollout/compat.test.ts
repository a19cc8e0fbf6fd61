import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { STEWARD_ENGINE_VERSION } from '../../../../src/engine/rollout/compat.js';
import { ROLL_V1 } from './fixtures.js';

const withCompat = (block: string) => `${ROLL_V1.trimEnd()}\n${block}\n`;
const compile = (text: string) => compileBlueprintSet([{ file: 'roll.yaml', text }], { config: defaultEngineConfig() });

describe('compatibility matrix (§13.6)', () => {
  it('the engine version the matrix checks is the package version', () => {
    expect(STEWARD_ENGINE_VERSION).toBe((JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
  });

  it('a compatible entry loads; entries of other versions are not checked', () => {
    const res = compile(withCompat(`compatibility:
  blueprint: t/roll
  versions:
    - version: "1.0.0"
      compatible_with: [{ steward: ">=0.1.0" }, { sdk: ">=2.0.0" }, { tiers: "ACL-0, ACL-1, ACL-2, ACL-3, ACL-4, ACL-5" }]
      requires: [{ trust_debt: true }, { tripwires: [standard, critical] }]
    - version: "0.9.0"
      compatible_with: [{ steward: ">=99.0.0" }]`));
    expect(res.errors.map((e) => e.format())).toEqual([]);
    expect(res.set).toBeDefined();
  });

  it('an incompatible blueprint is rejected at the entry, with file:line:col and $.path', () => {
    const res = compile(withCompat(`compatibility:
  versions:
    - version: "1.0.0"
      compatible_with:
        - steward: ">=2.0.0"
      requires:
        - quantum: true`));
    expect(res.set).toBeUndefined();
    const [steward, quantum] = res.errors;
    expect(steward.code).toBe('STEWARD_BLUEPRINT_INCOMPATIBLE');
    expect(steward.format()).toMatch(/roll\.yaml:\d+:\d+/);
    expect(steward.format()).toContain('$.compatibility.versions[0].compatible_with[0].steward');
    expect(steward.message).toContain('requires Steward >=2.0.0; this is 0.1.0');
    expect(quantum.format()).toContain('$.compatibility.versions[0].requires[0].quantum');
  });

  it('tiers: a scope reaching outside the compatible tiers is rejected; a bad trigger too', () => {
    const res = compile(withCompat(`scope: { agent_tier: [ACL-2, ACL-4] }
compatibility:
  versions:
    - version: "1.0.0"
      compatible_with: [{ tiers: "ACL-1, ACL-2" }]
rollback:
  trigger: ["latency > 3%"]`));
    expect(res.errors.map((e) => e.message)).toEqual([expect.stringContaining('its scope covers ACL-4'), expect.stringContaining("unknown metric 'latency'")]);
    expect(res.errors[1].format()).toContain('$.rollback.trigger[0]');
  });
});
