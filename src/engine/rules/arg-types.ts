/**
 * Load-time type check of `args.*` against a tool's imported input schema (gate spec §10; docs/rules.md
 * "Type checks"). The DSL itself is untyped over trace fields (a missing field is false); once a tool's
 * schema is known, `args.amout` (no such property) and `args.amount == "500"` (a number field compared
 * with a string) are author mistakes worth an error with the position of the field or the operator.
 */
import { DEFAULT_DSL_LIMITS, type DslProblem, type Node } from '../dsl/ast.js';
import { parseCondition } from '../dsl/structured.js';
import type { JsonSchema } from './types.js';

type SchemaType = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'unknown';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function typesOf(s: JsonSchema): Set<SchemaType> {
  const raw = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
  const out = new Set<SchemaType>();
  for (const t of raw) {
    if (t === 'integer' || t === 'number') out.add('number');
    else if (t === 'string' || t === 'boolean' || t === 'array' || t === 'object') out.add(t);
  }
  if (out.size === 0 && Array.isArray(s.enum)) for (const e of s.enum) out.add(typeof e === 'number' ? 'number' : typeof e === 'string' ? 'string' : typeof e === 'boolean' ? 'boolean' : 'unknown');
  if (out.size === 0) out.add('unknown');
  return out;
}

type Resolved = { schema: JsonSchema; types: Set<SchemaType> } | { unknownAt: number; name: string } | undefined;

/** Walks a field path below `args`; undefined when the schema says nothing definite (no types, $ref, open objects). */
function resolve(root: JsonSchema, segments: (string | number)[]): Resolved {
  let s: JsonSchema = root;
  for (let i = 1; i < segments.length; i++) {
    const seg = segments[i]!;
    const types = typesOf(s);
    if (seg === 'length' && i === segments.length - 1 && (types.has('string') || types.has('array'))) return { schema: { type: 'number' }, types: new Set(['number']) };
    if (typeof seg === 'number') {
      if (!isObj(s.items)) return undefined;
      s = s.items;
      continue;
    }
    if (!isObj(s.properties)) return undefined;
    const next = s.properties[seg];
    if (!isObj(next)) {
      // An open object (additionalProperties: true or a schema) may hold any key.
      if (s.additionalProperties === true || isObj(s.additionalProperties)) return undefined;
      return { unknownAt: i, name: seg };
    }
    s = next;
  }
  return { schema: s, types: typesOf(s) };
}

function literalType(n: Node): SchemaType | undefined {
  if (n.kind !== 'literal') return undefined;
  const v = n.value;
  return Array.isArray(v) ? 'array' : typeof v === 'string' ? 'string' : typeof v === 'number' ? 'number' : 'boolean';
}

const ORDERING = new Set(['>', '>=', '<', '<=']);

/**
 * Problems of a condition's `args.*` references against `schema` (the tool's inputSchema). Parse errors are
 * left to the compiler (it reports them with the same positions); this only adds type problems.
 */
export function checkArgTypes(cond: unknown, schema: JsonSchema, tool: string): DslProblem[] {
  const parsed = parseCondition(cond, DEFAULT_DSL_LIMITS);
  if (!parsed.node) return [];
  const problems: DslProblem[] = [];
  const at = (n: Node, offset: number) => (offset >= 0 ? { path: n.path, offset } : { path: n.path });
  const field = (n: Node): { types: Set<SchemaType>; schema: JsonSchema } | undefined => {
    if (n.kind !== 'field' || n.segments[0] !== 'args' || n.segments.length < 2) return undefined;
    const r = resolve(schema, n.segments);
    if (!r) return undefined;
    if ('unknownAt' in r) {
      const known = Object.keys((resolve(schema, n.segments.slice(0, r.unknownAt)) as { schema?: JsonSchema } | undefined)?.schema?.properties ?? {});
      const prefix = n.segments.slice(0, r.unknownAt).join('.');
      problems.push({ code: 'STEWARD_DSL_TYPE', message: `${prefix}.${r.name}: tool '${tool}' has no input '${r.name}'${known.length ? ` (its inputs: ${known.join(', ')})` : ''}`, ...at(n, n.offset) });
      return undefined;
    }
    return r;
  };
  const visit = (n: Node): void => {
    switch (n.kind) {
      case 'all':
      case 'any':
        n.items.forEach(visit);
        return;
      case 'not':
        visit(n.operand);
        return;
      case 'call':
        n.args.forEach(visit);
        return;
      case 'field':
        field(n);
        return;
      case 'literal':
        return;
      case 'compare': {
        const lf = field(n.left);
        const rf = field(n.right);
        const f = lf ?? rf;
        const other = lf ? n.right : n.left;
        if (!f || f.types.has('unknown')) return;
        const fieldNode = lf ? n.left : n.right;
        const name = fieldNode.kind === 'field' ? fieldNode.text : 'args';
        const want = [...f.types].join(' or ');
        const lt = literalType(other);
        const bad = (msg: string) => problems.push({ code: 'STEWARD_DSL_TYPE', message: `${name} (${want} in tool '${tool}''s schema) ${msg}`, ...at(n, n.opOffset) });
        if (ORDERING.has(n.op)) {
          if (!f.types.has('number') && !f.types.has('string')) bad(`cannot be ordered with ${n.op}`);
          else if (lt && !f.types.has(lt)) bad(`is compared with a ${lt} by ${n.op}`);
        } else if (n.op === '==' || n.op === '!=') {
          if (lt && !f.types.has(lt)) bad(`is compared with a ${lt} by ${n.op}`);
          else if (lt === 'string' && Array.isArray(f.schema.enum) && other.kind === 'literal' && !f.schema.enum.includes(other.value)) bad(`is compared with "${String(other.value)}", which is none of its values (${f.schema.enum.map((e) => JSON.stringify(e)).join(', ')})`);
        } else if (n.op === 'matches' && lf && !f.types.has('string')) bad('is not a string: matches never holds');
        else if (n.op === 'contains' && lf && !f.types.has('string') && !f.types.has('array')) bad('is neither a string nor an array: contains never holds');
        return;
      }
    }
  };
  visit(parsed.node);
  return problems;
}
