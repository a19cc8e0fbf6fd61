/**
 * Schema stage: ajv (JSON Schema 2020-12, allErrors) against schemas/blueprint.schema.json (embedded),
 * every error mapped back to the offending node's position. Unknown keys get their own code and a
 * "did you mean" suggestion because typos are the most common authoring mistake.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { StewardError } from '../../errors.js';
import { BLUEPRINT_SCHEMA } from './embedded.js';
import type { PathSeg, SourceDoc } from './source.js';

let validator: ValidateFunction | undefined;

function getValidator(): ValidateFunction {
  if (!validator) {
    const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true });
    // Annotation keyword: the message shown when a oneOf/anyOf fails (instead of every branch's noise).
    ajv.addKeyword({ keyword: 'errorMessage', schemaType: 'string' });
    validator = ajv.compile(BLUEPRINT_SCHEMA);
  }
  return validator;
}

export function levenshtein(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0];
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j];
      dp[j] = Math.min(dp[j] + 1, dp[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length];
}

export function suggest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = levenshtein(word.toLowerCase(), c.toLowerCase());
    if (d < bestD || (d === bestD && best !== undefined && c < best)) {
      bestD = d;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function toPath(instancePath: string): PathSeg[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function describe(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `missing required field '${String(p.missingProperty)}'`;
    case 'type':
      return `must be ${String(p.type).split(',').join(' or ')}, got ${Array.isArray(e.data) ? 'array' : e.data === null ? 'null' : typeof e.data}`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(e.data)}`;
    case 'pattern':
      return `${JSON.stringify(e.data)} does not match ${String(p.pattern)}`;
    default:
      return e.message ?? e.keyword;
  }
}

export function checkSchema(doc: SourceDoc): StewardError[] {
  const validate = getValidator();
  if (validate(doc.value)) return [];
  const all = validate.errors ?? [];
  const out: StewardError[] = [];
  // Branch errors of a oneOf/anyOf that carries an errorMessage are replaced by that message.
  const summarised = all.filter((e) => (e.keyword === 'oneOf' || e.keyword === 'anyOf') && (e.parentSchema as { errorMessage?: string })?.errorMessage);
  const covered = (e: ErrorObject): boolean =>
    summarised.some((s) => s !== e && e.schemaPath.startsWith(s.schemaPath + '/') && e.instancePath.startsWith(s.instancePath));
  for (const e of all) {
    if (covered(e)) continue;
    if ((e.keyword === 'anyOf' || e.keyword === 'oneOf') && !summarised.includes(e)) {
      // Without an errorMessage the branch errors already explain the problem.
      if (all.some((o) => o !== e && o.schemaPath.startsWith(e.schemaPath + '/'))) continue;
    }
    const path = toPath(e.instancePath);
    if (e.keyword === 'additionalProperties') {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const allowed = Object.keys((e.parentSchema as { properties?: Record<string, unknown> }).properties ?? {});
      const hint = suggest(key, allowed);
      out.push(
        new StewardError('STEWARD_BLUEPRINT_UNKNOWN_KEY', `unknown key '${key}'${hint ? ` (did you mean '${hint}'?)` : ''}; extensions must start with 'x-'`, {
          position: doc.pos([...path, key], { key: true }),
        }),
      );
      continue;
    }
    if (e.keyword === 'propertyNames') continue; // reported by the nested pattern error
    const msg = summarised.includes(e) ? (e.parentSchema as { errorMessage: string }).errorMessage : describe(e);
    if (e.propertyName !== undefined) {
      out.push(new StewardError('STEWARD_BLUEPRINT_SCHEMA', `invalid name ${msg}`, { position: doc.pos([...path, e.propertyName], { key: true }) }));
      continue;
    }
    out.push(new StewardError('STEWARD_BLUEPRINT_SCHEMA', msg, { position: doc.pos(path) }));
  }
  return out;
}
