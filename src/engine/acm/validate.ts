/** ajv validators of the embedded ACM schemas; every error becomes an AcmProblem with its JSON path. */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { pointerToPath, type AcmCode, type AcmProblem } from './problems.js';
import { ACM_SCHEMA_FILES } from './schemas.js';

export type AcmSchemaName = 'context-packet' | 'plan-event' | 'task-policy-input' | 'verification-sheet' | 'replay-bundle' | 'acm-options';

const compiled = new Map<AcmSchemaName, ValidateFunction>();
let ajv: Ajv2020 | undefined;

function validator(name: AcmSchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    ajv ??= new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
    v = ajv.compile(ACM_SCHEMA_FILES[`${name}.schema.json`]!);
    compiled.set(name, v);
  }
  return v;
}

function message(e: ErrorObject): { path: string; message: string } {
  const path = pointerToPath(e.instancePath);
  if (e.keyword === 'required') return { path, message: `missing required field '${(e.params as { missingProperty: string }).missingProperty}'` };
  if (e.keyword === 'additionalProperties') {
    const k = (e.params as { additionalProperty: string }).additionalProperty;
    return { path: `${path}.${k}`, message: `unknown field '${k}' (extensions start with x-)` };
  }
  if (e.keyword === 'not' && path.includes('edges')) return { path, message: "an edge has either 'guard' or 'on_error', not both" };
  if (e.keyword === 'enum') return { path, message: `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((x) => JSON.stringify(x)).join(', ')}` };
  return { path, message: e.message ?? 'invalid' };
}

/** Problems of `value` against one ACM schema (empty when valid). `prefix` is prepended to paths ('$' → '$.context'). */
export function schemaProblems(name: AcmSchemaName, value: unknown, prefix = '$', code: AcmCode = 'STEWARD_ACM_SCHEMA'): AcmProblem[] {
  const v = validator(name);
  if (v(value)) return [];
  const seen = new Set<string>();
  const out: AcmProblem[] = [];
  for (const e of v.errors ?? []) {
    // oneOf/anyOf internals and the `if` branches repeat the real error; keep the first per path+message.
    if (e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    const m = message(e);
    const path = prefix === '$' ? m.path : prefix + m.path.slice(1);
    const key = `${path}\u0000${m.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ code, message: m.message, path });
  }
  return out;
}
