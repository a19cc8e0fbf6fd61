/**
 * Blueprint ids and version references (ACGP-1004 §3, §13.2, §13.4).
 *
 * A blueprint's identity is `name@version`: `name` is the id without its `@suffix`
 * (`finance/trading_bot@1.0` → `finance/trading_bot`), `version` the full semver of the `version` field.
 * A reference `name@R` resolves against every loaded version of `name`:
 *   R absent or `latest` → highest version (`latest` warns: not for production);
 *   `2` → highest 2.x.x; `1.0` → highest 1.0.x; `2.1.0` → exactly that version.
 * So `inherits: clarity.baseline@1.0` picks the highest 1.0.x baseline, and an id written as in the
 * spec examples (`finance/trading_bot@1.0`) is itself a valid reference to its own version.
 *
 * Pre-releases (`1.1.0-rc.1`) are picked only by an exact reference to them (`@1.1.0-rc.1`), never by a
 * pin, `latest` or a bare name, even when no release matches (SemVer §9/§11, npm range semantics): a
 * release candidate must not become the policy of every child, nor the implicit baseline, by being loaded.
 * Build metadata (`1.0.0+build.5`) is valid and ignored for precedence (SemVer §10); ties between versions
 * differing only in build metadata go to the higher build, so the choice does not depend on load order.
 */
import semver from 'semver';

export interface VersionRef {
  name: string;
  kind: 'any' | 'latest' | 'major' | 'minor' | 'exact';
  raw: string;
  parts: number[];
  /** exact references only: the pre-release part (`rc.1`) of `@1.1.0-rc.1`; '' or absent for a release */
  prerelease?: string;
}

export function splitId(id: string): { name: string; suffix?: string } {
  const at = id.lastIndexOf('@');
  return at < 0 ? { name: id } : { name: id.slice(0, at), suffix: id.slice(at + 1) };
}

export function parseRef(ref: string): VersionRef | undefined {
  const { name, suffix } = splitId(ref.trim());
  if (!name) return undefined;
  if (suffix === undefined) return { name, kind: 'any', raw: ref, parts: [] };
  if (suffix === 'latest') return { name, kind: 'latest', raw: ref, parts: [] };
  if (/^\d+(\.\d+){0,2}$/.test(suffix)) {
    const parts = suffix.split('.').map(Number);
    return { name, kind: parts.length === 1 ? 'major' : parts.length === 2 ? 'minor' : 'exact', raw: ref, parts };
  }
  // A full version with a pre-release and/or build part: only ever an exact reference.
  const v = isSemver(suffix) ? semver.parse(suffix) : null;
  if (!v) return undefined;
  return { name, kind: 'exact', raw: ref, parts: [v.major, v.minor, v.patch], prerelease: v.prerelease.join('.') };
}

/** Full SemVer 2.0.0 as written: `1.0.0`, `1.1.0-rc.1`, `1.0.0+build.5` (semver.valid drops the build part, so it is not compared as-is). */
export function isSemver(v: unknown): v is string {
  if (typeof v !== 'string') return false;
  const p = semver.parse(v);
  return p !== null && p.raw === v && v === `${p.version}${p.build.length ? `+${p.build.join('.')}` : ''}`;
}

/** Same MAJOR[.MINOR[.PATCH]] numbers as the reference, pre-release and build ignored. */
function numbersMatch(ref: VersionRef, v: semver.SemVer): boolean {
  return ref.parts.every((n, i) => n === [v.major, v.minor, v.patch][i]);
}

export function refMatches(ref: VersionRef, version: string): boolean {
  const v = semver.parse(version);
  if (!v) return false;
  const pre = v.prerelease.join('.');
  switch (ref.kind) {
    case 'any':
    case 'latest':
    case 'major':
    case 'minor':
      // a pre-release is never the answer to "the newest" or to a range pin (module doc)
      return pre === '' && numbersMatch(ref, v);
    case 'exact':
      return numbersMatch(ref, v) && pre === (ref.prerelease ?? '');
  }
}

/** Highest version of `candidates` (versions of ref.name) that the reference accepts. */
export function resolveVersion(ref: VersionRef, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const c of candidates) if (refMatches(ref, c) && (best === undefined || compareVersions(c, best) > 0)) best = c;
  return best;
}

/**
 * The `@suffix` of an id must agree with its version field (`@1.0` with `1.0.x`), or ids mislead readers.
 * A major/minor suffix is about the numbers only: `c/base@1.1` may carry `1.1.0-rc.1` (a 1.1 candidate).
 */
export function idAgreesWithVersion(id: string, version: string): boolean {
  const { suffix } = splitId(id);
  if (suffix === undefined) return true;
  const ref = parseRef(id);
  const v = semver.parse(version);
  if (ref === undefined || ref.kind === 'latest' || !v) return false;
  // an exact suffix (`@1.1.0`) claims that very release, so it must not sit on `1.1.0-rc.1`
  return ref.kind === 'exact' ? refMatches(ref, version) : numbersMatch(ref, v);
}

/** A pre-release (`1.1.0-rc.1`); build metadata alone (`1.0.0+build.5`) is a release. */
export function isPrerelease(version: string): boolean {
  return (semver.prerelease(version)?.length ?? 0) > 0;
}

/** SemVer precedence; versions equal in precedence (differing only in build metadata) by build, for a stable order. */
export function compareVersions(a: string, b: string): number {
  return semver.compare(a, b) || semver.compareBuild(a, b);
}

export function keyOf(name: string, version: string): string {
  return `${name}@${version}`;
}
