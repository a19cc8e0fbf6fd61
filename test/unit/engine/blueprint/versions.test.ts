import { describe, expect, it } from 'vitest';
import { compareVersions, idAgreesWithVersion, isSemver, parseRef, resolveVersion } from '../../../../src/engine/blueprint/versions.js';

const pick = (ref: string, versions: string[]) => resolveVersion(parseRef(ref)!, versions);

describe('blueprint versions', () => {
  const all = ['1.0.0', '1.0.1-rc.1', '1.1.0-rc.1', '2.0.0-alpha', '0.9.0'];

  it('pins, bare names and latest pick the highest release, never a pre-release', () => {
    for (const r of ['c/base', 'c/base@latest', 'c/base@1', 'c/base@1.0']) expect(pick(r, all), r).toBe('1.0.0');
    expect(pick('c/base@1.1', all)).toBeUndefined();
    expect(pick('c/base@2', all)).toBeUndefined();
    expect(pick('c/base@1.0.1', all)).toBeUndefined();
  });

  it('a pre-release only by its exact version', () => {
    expect(pick('c/base@1.1.0-rc.1', all)).toBe('1.1.0-rc.1');
    expect(pick('c/base@1.1.0-rc.2', all)).toBeUndefined();
    expect(parseRef('c/base@1.1.0-rc.1')).toMatchObject({ name: 'c/base', kind: 'exact', parts: [1, 1, 0], prerelease: 'rc.1' });
    expect(parseRef('c/base@1.1-rc.1')).toBeUndefined();
  });

  it('build metadata is valid and ignored for matching; ties go to the higher build, independent of order', () => {
    expect(isSemver('1.0.0+build.5')).toBe(true);
    expect(isSemver('1.1.0-rc.1+sha.abc')).toBe(true);
    for (const bad of ['1.0', 'v1.0.0', ' 1.0.0', '1.0.0+', '01.0.0', '1.0.0-']) expect(isSemver(bad), bad).toBe(false);
    expect(pick('c/b@1.0.0', ['1.0.0+build.5'])).toBe('1.0.0+build.5');
    expect(pick('c/b@1', ['1.0.0+build.5', '1.0.0'])).toBe('1.0.0+build.5');
    expect(pick('c/b@1', ['1.0.0', '1.0.0+build.5'])).toBe('1.0.0+build.5');
    expect(compareVersions('1.0.0+b', '1.0.0+a')).toBeGreaterThan(0);
    expect(compareVersions('1.1.0-rc.1', '1.0.0')).toBeGreaterThan(0); // SemVer precedence itself is unchanged
  });

  it('an id suffix agrees with a pre-release of the same numbers, except an exact release suffix', () => {
    expect(idAgreesWithVersion('c/base@1.1', '1.1.0-rc.1')).toBe(true);
    expect(idAgreesWithVersion('c/base@1', '1.1.0-rc.1')).toBe(true);
    expect(idAgreesWithVersion('c/base@1.1.0', '1.1.0-rc.1')).toBe(false);
    expect(idAgreesWithVersion('c/base@1.0', '1.0.0+build.5')).toBe(true);
    expect(idAgreesWithVersion('c/base@1.2', '1.1.0')).toBe(false);
  });
});
