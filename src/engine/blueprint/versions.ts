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
 */
import semver from 'semver';

export interface VersionRef {
  name: string;
  kind: 'any' | 'latest' | 'major' | 'minor' | 'exact';
  raw: string;
  parts: number[];
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
  if (!/^\d+(\.\d+){0,2}$/.test(suffix)) return undefined;
  const parts = suffix.split('.').map(Number);
  return { name, kind: parts.length === 1 ? 'major' : parts.length === 2 ? 'minor' : 'exact', raw: ref, parts };
}

export function isSemver(v: unknown): v is string {
  return typeof v === 'string' && semver.valid(v) === v;
}

export function refMatches(ref: VersionRef, version: string): boolean {
  const v = semver.parse(version);
  if (!v) return false;
  switch (ref.kind) {
    case 'any':
    case 'latest':
      return true;
    case 'major':
      return v.major === ref.parts[0];
    case 'minor':
      return v.major === ref.parts[0] && v.minor === ref.parts[1];
    case 'exact':
      return v.major === ref.parts[0] && v.minor === ref.parts[1] && v.patch === ref.parts[2] && v.prerelease.length === 0;
  }
}

/** Highest version of `candidates` (versions of ref.name) that the reference accepts. */
export function resolveVersion(ref: VersionRef, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const c of candidates) if (refMatches(ref, c) && (best === undefined || semver.gt(c, best))) best = c;
  return best;
}

/** The `@suffix` of an id must agree with its version field (`@1.0` with `1.0.x`), or ids mislead readers. */
export function idAgreesWithVersion(id: string, version: string): boolean {
  const { suffix } = splitId(id);
  if (suffix === undefined) return true;
  const ref = parseRef(id);
  return ref !== undefined && ref.kind !== 'latest' && refMatches(ref, version);
}

export function compareVersions(a: string, b: string): number {
  return semver.compare(a, b);
}

export function keyOf(name: string, version: string): string {
  return `${name}@${version}`;
}
