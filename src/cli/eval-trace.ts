/** One JSONL line → a trace validated against schemas/trace.schema.json, or an error code + message. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { StewardErrorCode } from '../errors.js';
import { isTimestamp, parseTimestamp } from '../engine/time.js';
import type { Trace } from '../engine/types.js';
import { DEFAULT_MAX_TRACE_BYTES } from '../config/steward-config.js';

export type ParsedLine = { ok: true; trace: Trace; nowMs: number } | { ok: false; code: StewardErrorCode; message: string };

let validator: ValidateFunction | undefined;

function schemaPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const p = join(dir, 'schemas', 'trace.schema.json');
    try {
      readFileSync(p);
      return p;
    } catch {
      dir = dirname(dir);
    }
  }
  throw new Error('schemas/trace.schema.json not found');
}

function validate(): ValidateFunction {
  if (!validator) {
    const ajv = new Ajv2020({ allErrors: false, strict: false });
    const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => void;
    addFormats(ajv);
    // ISO-8601 as contracts C1 says, not only RFC 3339 (src/engine/time.ts).
    ajv.addFormat('date-time', { type: 'string', validate: isTimestamp });
    validator = ajv.compile(JSON.parse(readFileSync(schemaPath(), 'utf8')));
  }
  return validator;
}

// The stream's default limits.max_trace_bytes: a trace that passes eval also fits through the stream.
export const MAX_TRACE_BYTES = DEFAULT_MAX_TRACE_BYTES;

export function parseTraceLine(text: string): ParsedLine {
  // Editors on Windows save JSONL with a byte-order mark; it is not part of the first trace.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  // Cheap length check first; only long lines pay for the exact UTF-8 byte count.
  if (text.length * 3 > MAX_TRACE_BYTES && Buffer.byteLength(text, 'utf8') > MAX_TRACE_BYTES) return { ok: false, code: 'STEWARD_TRACE_TOO_LARGE', message: `trace line is larger than ${MAX_TRACE_BYTES} bytes` };
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (e) {
    return { ok: false, code: 'STEWARD_TRACE_JSON', message: `invalid JSON: ${(e as Error).message}` };
  }
  const v = validate();
  if (!v(obj)) {
    const e = v.errors?.[0];
    const where = e?.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
    const what = e?.keyword === 'required' ? `missing required field '${(e.params as { missingProperty: string }).missingProperty}'` : `${where ? `'${where}' ` : ''}${e?.message ?? 'invalid'}`;
    return { ok: false, code: 'STEWARD_TRACE_SCHEMA', message: `trace does not match the trace schema: ${what}` };
  }
  const trace = obj as Trace;
  const nowMs = parseTimestamp(trace.timestamp);
  if (!Number.isFinite(nowMs)) return { ok: false, code: 'STEWARD_TRACE_SCHEMA', message: `'timestamp' is not an ISO-8601 date-time` };
  return { ok: true, trace, nowMs };
}
