/**
 * The batch route's per-event schema check, made from the same JSON Schema the OpenAPI document shows (docs/http.md
 * "Benchmark"): Fastify validates the batch's envelope, and each event is checked in the batch's one pass over
 * its events (with the mapping) instead of by a second walk of Ajv over the whole body. The answer is Ajv's, as
 * Fastify words it (`body/events/3/trace_id must be string`): the first failing keyword in Ajv's order (type,
 * required, then each property in schema order; maxLength before minLength; lengths in code points).
 * Only the keywords the event schema uses are supported; any other is refused when the check is made, so the
 * schema cannot grow a keyword this check would silently skip.
 */

interface Sub {
  type?: string | readonly string[];
  minLength?: number;
  maxLength?: number;
  items?: Sub;
  required?: readonly string[];
  properties?: Readonly<Record<string, Sub>>;
  additionalProperties?: boolean;
}

const SUPPORTED = new Set(['type', 'minLength', 'maxLength', 'items', 'required', 'properties', 'additionalProperties']);

/** Where an event failed, relative to the event (`''` or `/field` or `/field/2`), and Ajv's message. */
export interface EventProblem {
  path: string;
  message: string;
}

type Check = (v: unknown) => EventProblem | undefined;

const isType: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  null: (v) => v === null,
  object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  array: (v) => Array.isArray(v),
  integer: (v) => typeof v === 'number' && Number.isInteger(v),
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  boolean: (v) => typeof v === 'boolean',
};

/** Ajv's string length: Unicode code points (a surrogate pair is one). */
function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function compile(s: Sub): Check {
  for (const k of Object.keys(s)) if (!SUPPORTED.has(k)) throw new Error(`event-check: keyword '${k}' is not supported`);
  const checks: Check[] = [];
  if (s.type !== undefined) {
    const types = typeof s.type === 'string' ? [s.type] : s.type;
    const tests = types.map((t) => {
      const f = isType[t];
      if (!f) throw new Error(`event-check: type '${t}' is not supported`);
      return f;
    });
    const message = `must be ${types.join(',')}`;
    checks.push(tests.length === 1 ? (v) => (tests[0](v) ? undefined : { path: '', message }) : (v) => (tests.some((f) => f(v)) ? undefined : { path: '', message }));
  }
  const { maxLength, minLength } = s;
  if (maxLength !== undefined || minLength !== undefined) {
    checks.push((v) => {
      if (typeof v !== 'string') return undefined;
      // UTF-16 units bound the code points from above (and from below by half): count only when it can matter.
      if (maxLength !== undefined && v.length > maxLength && codePoints(v) > maxLength) return { path: '', message: `must NOT have more than ${maxLength} characters` };
      if (minLength !== undefined && v.length < minLength * 2 && codePoints(v) < minLength) return { path: '', message: `must NOT have fewer than ${minLength} characters` };
      return undefined;
    });
  }
  if (s.required?.length) {
    const required = s.required;
    checks.push((v) => {
      if (!isType.object(v)) return undefined;
      for (const k of required) if ((v as Record<string, unknown>)[k] === undefined) return { path: '', message: `must have required property '${k}'` };
      return undefined;
    });
  }
  if (s.properties) {
    const props = Object.entries(s.properties).map(([k, sub]) => [k, `/${k}`, compile(sub)] as const);
    checks.push((v) => {
      if (!isType.object(v)) return undefined;
      const o = v as Record<string, unknown>;
      for (const [k, path, check] of props) {
        const x = o[k];
        if (x === undefined) continue;
        const p = check(x);
        if (p) return { path: path + p.path, message: p.message };
      }
      return undefined;
    });
  }
  if (s.items) {
    const item = compile(s.items);
    checks.push((v) => {
      if (!Array.isArray(v)) return undefined;
      for (let i = 0; i < v.length; i++) {
        const p = item(v[i]);
        if (p) return { path: `/${i}${p.path}`, message: p.message };
      }
      return undefined;
    });
  }
  return checks.length === 1 ? checks[0] : (v) => {
    for (const c of checks) {
      const p = c(v);
      if (p) return p;
    }
    return undefined;
  };
}

/** The check of one event against `schema` (the route's event JSON Schema): undefined when it passes. */
export function compileEventCheck(schema: object): (event: unknown) => EventProblem | undefined {
  return compile(schema as Sub);
}
