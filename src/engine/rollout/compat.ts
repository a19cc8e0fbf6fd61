/**
 * The compatibility matrix (ACGP-1004 §13.6) and the rollout blocks, checked when a blueprint file loads
 * (`steward validate`, start and hot reload; docs/rollout.md "Compatibility matrix", spec-decisions D25).
 *
 * The entry of `compatibility.versions` whose `version` is the blueprint's own version is checked:
 *   compatible_with: {steward: RANGE}  this engine's version must satisfy RANGE (SemVer range, `>=1.5.0`)
 *                    {acgp: RANGE} / {spec: RANGE}   the ACGP-1004 version Steward implements (ACGP_SPEC_VERSION)
 *                    {tiers: "ACL-2, ACL-3"}  the blueprint's `scope.agent_tier` must lie within these tiers
 *                    other keys (sdk, …) concern the agent side and are not checked here
 *   requires:        {trust_debt: true}, {tripwires: [severity, …]} (standard, critical, severe); any other
 *                    requirement is one this engine does not provide: incompatible
 * `compatibility.blueprint`, when given, must name this blueprint. An incompatible blueprint is an error at
 * the offending entry's position (file:line:col and $.path), so the set is rejected and, on a hot reload,
 * the last good set keeps serving. `rollback.trigger` entries are compiled here too (triggers.ts).
 */
import semver from 'semver';
import { StewardError } from '../../errors.js';
import type { SourceDoc } from '../blueprint/source.js';
import { splitId } from '../blueprint/versions.js';
import { compileTrigger } from './triggers.js';

/** Steward's version as the matrix sees it: package.json's (test/unit/engine/rollout/compat.test.ts holds them equal). */
export const STEWARD_ENGINE_VERSION = '0.1.0';
/** The ACGP-1004 revision this engine implements (blueprint schema and semantics). */
export const ACGP_SPEC_VERSION = '1.0.0';
const TIERS = ['ACL-0', 'ACL-1', 'ACL-2', 'ACL-3', 'ACL-4', 'ACL-5'];
const SEVERITIES = ['standard', 'critical', 'severe'];

export interface CompatibilityEnv {
  /** Steward's own version (package version). */
  engineVersion: string;
  specVersion?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function rangeOk(version: string, range: string): boolean | undefined {
  const r = semver.validRange(range);
  if (r === null) return undefined;
  return semver.satisfies(semver.coerce(version) ?? version, r, { includePrerelease: true });
}

export function compatibilityProblems(doc: SourceDoc, v: Obj, env: CompatibilityEnv, errors: StewardError[]): void {
  const bad = (path: (string | number)[], msg: string) => errors.push(new StewardError('STEWARD_BLUEPRINT_INCOMPATIBLE', msg, { position: doc.pos(path) }));
  const id = typeof v.id === 'string' ? v.id : '';
  const version = typeof v.version === 'string' ? v.version : '';
  const c = v.compatibility;
  if (isObj(c)) {
    if (typeof c.blueprint === 'string' && splitId(c.blueprint).name !== splitId(id).name)
      bad(['compatibility', 'blueprint'], `compatibility.blueprint '${c.blueprint}' is not this blueprint (${splitId(id).name})`);
    const versions = Array.isArray(c.versions) ? c.versions : [];
    versions.forEach((entry, i) => {
      if (!isObj(entry) || entry.version !== version) return;
      const withs = Array.isArray(entry.compatible_with) ? entry.compatible_with : [];
      withs.forEach((w, j) => {
        if (!isObj(w)) return;
        for (const [k, val] of Object.entries(w)) {
          if (typeof val !== 'string') continue;
          const at = ['compatibility', 'versions', i, 'compatible_with', j, k];
          if (k === 'steward' || k === 'acgp' || k === 'spec') {
            const have = k === 'steward' ? env.engineVersion : (env.specVersion ?? ACGP_SPEC_VERSION);
            const ok = rangeOk(have, val);
            if (ok === undefined) bad(at, `compatible_with ${k}: '${val}' is not a version range`);
            else if (!ok) bad(at, `${id} requires ${k === 'steward' ? 'Steward' : 'ACGP-1004'} ${val}; this is ${have}`);
          } else if (k === 'tiers') {
            const allowed = val.split(/[\s,]+/).filter(Boolean);
            const unknown = allowed.filter((t) => !TIERS.includes(t));
            if (unknown.length > 0) bad(at, `compatible_with tiers: unknown tier(s) ${unknown.join(', ')}`);
            const scope = isObj(v.scope) && Array.isArray(v.scope.agent_tier) ? (v.scope.agent_tier as unknown[]).filter((t): t is string => typeof t === 'string') : TIERS;
            const outside = scope.filter((t) => !allowed.includes(t));
            if (unknown.length === 0 && outside.length > 0) bad(at, `${id} is compatible with tiers ${allowed.join(', ')} only, but its scope covers ${outside.join(', ')}${isObj(v.scope) && v.scope.agent_tier ? '' : ' (no scope.agent_tier: every tier)'}`);
          }
        }
      });
      const reqs = Array.isArray(entry.requires) ? entry.requires : [];
      reqs.forEach((r, j) => {
        if (!isObj(r)) return;
        for (const [k, val] of Object.entries(r)) {
          const at = ['compatibility', 'versions', i, 'requires', j, k];
          if (k === 'trust_debt') {
            if (typeof val !== 'boolean') bad(at, 'requires trust_debt: expected true or false');
          } else if (k === 'tripwires') {
            const list = Array.isArray(val) ? val : [val];
            const missing = list.filter((s) => typeof s !== 'string' || !SEVERITIES.includes(s));
            if (missing.length > 0) bad(at, `requires tripwire severities this engine does not have: ${missing.map(String).join(', ')} (it has ${SEVERITIES.join(', ')})`);
          } else if (!k.startsWith('x-')) bad(at, `requires '${k}': not a capability of this engine (trust_debt, tripwires)`);
        }
      });
    });
  }
  const rb = v.rollback;
  if (isObj(rb) && Array.isArray(rb.trigger))
    rb.trigger.forEach((t, i) => {
      if (typeof t !== 'string') return;
      const c2 = compileTrigger(t);
      if (typeof c2 === 'object' && 'error' in c2) errors.push(new StewardError('STEWARD_BLUEPRINT_INVALID', c2.error, { position: doc.pos(['rollback', 'trigger', i]) }));
    });
}
