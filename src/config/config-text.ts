/**
 * steward.yaml text → a raw object checked against schemas/steward-config.schema.json. Every problem becomes a
 * STEWARD_CONFIG error naming the file, line, column and JSON path, all of them at once.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, parseDocument, type Node } from 'yaml';
import AjvDraft7 from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { StewardError, StewardAggregateError } from '../errors.js';
import { rangeEnd } from '../engine/blueprint/source.js';
import { packageRoot } from '../adapters/kafka/serde.js';

/** The config as the YAML (and the environment) gives it: snake_case, not yet typed. */
export type Raw = Record<string, any>;

let validator: ValidateFunction | undefined;
export function schemaValidator(): ValidateFunction {
  if (!validator) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), 'schemas', 'steward-config.schema.json'), 'utf8')) as Raw;
    const Ctor = ((AjvDraft7 as unknown as { default?: unknown }).default ?? AjvDraft7) as new (o: object) => { compile(s: object): ValidateFunction };
    const { $id: _id, ...rest } = schema;
    validator = new Ctor({ allErrors: true, strict: false }).compile(rest);
  }
  return validator;
}

export function jsonPath(instancePath: string): string {
  return '$' + instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`)).join('');
}

function nodeAt(doc: ReturnType<typeof parseDocument>, instancePath: string): Node | undefined {
  const parts = instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~')));
  // Walk as far as the path exists: a missing key is reported at its parent.
  for (let n = parts.length; n >= 0; n--) {
    const node = doc.getIn(parts.slice(0, n), true) as Node | undefined;
    if (node && (node as { range?: unknown }).range) return node;
    if (n === 0) return doc.contents ?? undefined;
  }
  return undefined;
}

/** The key node of `key` in the mapping at `instancePath` (its value node would put the position after the key). */
function keyNodeAt(doc: ReturnType<typeof parseDocument>, instancePath: string, key: string): Node | undefined {
  const map = nodeAt(doc, instancePath) as { items?: { key?: unknown }[] } | undefined;
  for (const pair of map?.items ?? []) {
    const k = pair.key as (Node & { value?: unknown }) | undefined;
    if (k && k.value === key && k.range) return k;
  }
  return undefined;
}

export function describe(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') return `unknown key '${(e.params as { additionalProperty: string }).additionalProperty}'`;
  if (e.keyword === 'enum') return `${e.message}: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  return e.message ?? 'invalid';
}

/** Parses and validates YAML text; `file` only labels error positions. */
export function parseConfigText(text: string, file?: string): Raw {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new StewardAggregateError(
      'STEWARD_CONFIG',
      doc.errors.map((e) => {
        const p = lc.linePos(e.pos[0]);
        return new StewardError('STEWARD_CONFIG', e.message.split('\n')[0], { position: { file, line: p.line, col: p.col, ...rangeEnd(text, lc, e.pos[0], e.pos[1]) } });
      }),
    );
  }
  const raw = (doc.toJS() ?? {}) as Raw;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new StewardError('STEWARD_CONFIG', 'config must be a mapping', { position: { file, line: 1, col: 1 } });
  const v = schemaValidator();
  if (!v(raw)) {
    const errs = (v.errors ?? [])
      .filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'if')
      .map((e) => {
        // An unknown key is reported at the key itself, not at its parent mapping.
        const extra = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty: string }).additionalProperty : undefined;
        const ip = extra !== undefined ? `${e.instancePath}/${extra}` : e.instancePath;
        const node = (extra !== undefined ? keyNodeAt(doc, e.instancePath, extra) : undefined) ?? nodeAt(doc, ip);
        const pos = node?.range ? lc.linePos(node.range[0]) : { line: 1, col: 1 };
        return new StewardError('STEWARD_CONFIG', `${jsonPath(ip)}: ${describe(e)}`, {
          position: { file, line: pos.line, col: pos.col, ...(node?.range ? rangeEnd(text, lc, node.range[0], node.range[1]) : {}), path: jsonPath(ip) },
        });
      });
    throw new StewardAggregateError('STEWARD_CONFIG', errs);
  }
  return raw;
}
