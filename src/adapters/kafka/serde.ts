/**
 * Trace serde. Per message: Confluent wire format (magic 0 + 4-byte schema id) → Avro through the
 * registry; anything else → JSON. Both end validated against schemas/trace.schema.json (contracts C1).
 * Failures are StewardErrors whose code the DLQ records; only registry outages are retryable.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { Ajv2020 } from 'ajv/dist/2020.js';
import AjvDraft7 from 'ajv';
import addFormatsMod from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { StewardError } from '../../errors.js';
import { parseTimestamp } from '../../engine/time.js';
import type { Trace } from '../../engine/types.js';

/** Repository (or installed package) root: the first ancestor holding schemas/. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'schemas')) && existsSync(join(dir, 'package.json'))) return dir;
    dir = dirname(dir);
  }
  return process.cwd();
}

// Used only until/unless schemas/trace.schema.json exists: contracts C1 as JSON Schema.
const FALLBACK_TRACE_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  required: ['trace_id', 'agent_id', 'timestamp', 'hook'],
  properties: {
    trace_id: { type: 'string', minLength: 1, maxLength: 256 },
    agent_id: { type: 'string', minLength: 1, maxLength: 256 },
    timestamp: { type: 'string', format: 'date-time' },
    hook: { type: 'string', minLength: 1 },
    tool: { type: 'string' },
    args: { type: 'object' },
    action: { type: ['object', 'string'] },
    reasoning: { type: 'string' },
    content: { type: 'string' },
    context: { type: 'object' },
    sources: { type: 'array', items: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, category: { type: 'string' }, trust: { type: 'number' } } } },
    destination: { type: 'string' },
    response_size: { type: 'number', minimum: 0 },
    session_id: { type: 'string' },
    goal_id: { type: 'string' },
    plan_id: { type: 'string' },
    task_id: { type: 'string' },
  },
  additionalProperties: true,
};

type AddFormats = (ajv: unknown) => unknown;
const addFormats = ((addFormatsMod as unknown as { default?: AddFormats }).default ?? addFormatsMod) as unknown as AddFormats;

let cachedValidator: ValidateFunction | undefined;
/** The last string the schema's date-time format parsed, and its epoch ms (read right after a validation, same tick). */
let lastTimestampText: string | undefined;
let lastTimestampMs = Number.NaN;
export function traceValidator(): ValidateFunction {
  if (cachedValidator) return cachedValidator;
  const file = join(packageRoot(), 'schemas', 'trace.schema.json');
  const schema: Record<string, unknown> = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : FALLBACK_TRACE_SCHEMA;
  const is2020 = String(schema.$schema ?? '').includes('2020-12');
  const AjvCtor = (is2020 ? Ajv2020 : ((AjvDraft7 as unknown as { default?: unknown }).default ?? AjvDraft7)) as new (o: object) => {
    compile(s: object): ValidateFunction;
  };
  const ajv = new AjvCtor({ allErrors: false, strict: false }) as unknown as { compile(s: object): ValidateFunction; addFormat(n: string, f: object): unknown };
  addFormats(ajv);
  // ISO-8601 as contracts C1 says, not only RFC 3339 (src/engine/time.ts). The parse is kept (lastTimestamp):
  // the stages need the trace's time as a number, and this is the one place that reads its text.
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (s: string) => {
      lastTimestampText = s;
      lastTimestampMs = parseTimestamp(s);
      return Number.isFinite(lastTimestampMs);
    },
  });
  const { $id: _id, ...rest } = schema;
  cachedValidator = ajv.compile(rest);
  return cachedValidator;
}

/**
 * Deepest nesting of objects and arrays a trace may have. The free-form fields (args, context, extra fields)
 * are otherwise only "an object": a trace nested 10 000 levels deep was decided, carried through every
 * stage and serialised again at each step, and every recursive walk behind it (scans, canonical JSON, ajv)
 * risks the stack. Far above what a tool call's arguments need.
 */
export const MAX_TRACE_DEPTH = 64;

/**
 * True when nothing in `v` (itself one level) is nested more than `left` levels deep. Recursion is bounded by
 * `left` (at most MAX_TRACE_DEPTH + 1 frames, whatever the input) and nothing is allocated: it runs for every
 * trace, where the path walk below (a string and a stack entry per nested value) cost 4x as much.
 */
function withinDepth(v: object, left: number): boolean {
  if (left === 0) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const c: unknown = v[i];
      if (c !== null && typeof c === 'object' && !withinDepth(c, left - 1)) return false;
    }
  } else {
    for (const k in v) {
      const c: unknown = (v as Record<string, unknown>)[k];
      if (c !== null && typeof c === 'object' && !withinDepth(c, left - 1)) return false;
    }
  }
  return true;
}

/** The JSON path of the first value nested deeper than `max`, walked without recursion; undefined when none is. */
export function tooDeep(root: unknown, max = MAX_TRACE_DEPTH): string | undefined {
  if (root === null || typeof root !== 'object') return undefined;
  // The common case, a trace within the limit, without building paths; the path walk only for the error message.
  if (withinDepth(root, max)) return undefined;
  const stack: { v: object; depth: number; path: string }[] = [{ v: root, depth: 1, path: '' }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (depth > max) return path || '/';
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const c: unknown = v[i];
        if (c !== null && typeof c === 'object') stack.push({ v: c, depth: depth + 1, path: `${path}/${i}` });
      }
    } else {
      for (const k in v) {
        const c: unknown = (v as Record<string, unknown>)[k];
        if (c !== null && typeof c === 'object') stack.push({ v: c, depth: depth + 1, path: `${path}/${k}` });
      }
    }
  }
  return undefined;
}

export function validateTrace(obj: unknown): Trace {
  checkTrace(obj);
  return obj as Trace;
}

/**
 * validateTrace's checks (throws as it does); returns the trace's timestamp as epoch ms, parsed once: by the
 * schema's date-time format during validation (the stages' event time reads this number, not the text again).
 */
function checkTrace(obj: unknown): number {
  lastTimestampText = undefined;
  const deep = tooDeep(obj);
  if (deep !== undefined) throw new StewardError('STEWARD_TRACE_SCHEMA', `trace invalid at ${deep.length > 200 ? `${deep.slice(0, 200)}…` : deep}: nested deeper than ${MAX_TRACE_DEPTH} levels`);
  const v = traceValidator();
  if (!v(obj)) {
    const e = v.errors?.[0];
    const where = e?.instancePath || '$';
    throw new StewardError('STEWARD_TRACE_SCHEMA', `trace invalid at ${where}: ${e?.message ?? 'schema violation'}`);
  }
  assertWellFormedIds(obj as Trace);
  // contracts C1: an `action` string is the ACM §14.1 action name, which is the hook itself.
  const { action, hook } = obj as { action?: unknown; hook: string };
  if (typeof action === 'string' && action !== hook) throw new StewardError('STEWARD_TRACE_SCHEMA', `trace invalid at /action: the action '${action.slice(0, 64)}' is not the hook '${hook}'`);
  // The same text parses to the same time; a schema without the format (or with it on other fields) parses here.
  const text = (obj as Trace).timestamp;
  return lastTimestampText === text ? lastTimestampMs : parseTimestamp(text);
}

/**
 * Ids become Redis keys, Kafka keys and ClickHouse values: a lone surrogate ("\ud800" in JSON text) has no
 * UTF-8 form, so it would fail every key built from it (encodeURIComponent throws) or change in transit
 * (Avro writes U+FFFD). The tool and hook too: they are copied into the decision (and its reasons), whose Avro
 * form must read back equal to its JSON form (contracts C13). Checked by the stage on decode and by the client
 * before sending.
 */
export function assertWellFormedIds(t: Trace): void {
  for (const f of ID_FIELDS) {
    const v = (t as unknown as Record<string, unknown>)[f];
    if (typeof v === 'string' && LONE_SURROGATE.test(v)) throw new StewardError('STEWARD_TRACE_SCHEMA', `trace invalid at /${f}: contains a lone UTF-16 surrogate`);
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ID_FIELDS = ['trace_id', 'agent_id', 'session_id', 'goal_id', 'plan_id', 'task_id', 'tenant', 'hook', 'tool'] as const;

export function isConfluentWire(buf: Buffer): boolean {
  return buf.length >= 5 && buf[0] === 0;
}

// ───────────────────────────── Avro ⇄ Trace ─────────────────────────────

const AVRO_FIELDS = ['trace_id', 'agent_id', 'timestamp', 'hook', 'tool', 'reasoning', 'content', 'destination', 'response_size', 'session_id', 'goal_id', 'plan_id', 'task_id'] as const;
const AVRO_JSON_FIELDS = ['args', 'action', 'context'] as const;

function parseJsonField(name: string, s: unknown): unknown {
  if (s === null || s === undefined) return undefined;
  try {
    return JSON.parse(String(s));
  } catch {
    throw new StewardError('STEWARD_TRACE_AVRO', `Avro field '${name}' is not valid JSON text`);
  }
}

/** The Avro record (schemas/avro/trace.avsc) back to the JSON trace shape. */
export function avroRecordToTrace(rec: Record<string, unknown>): Record<string, unknown> {
  const extra = parseJsonField('extra', rec.extra);
  const out: Record<string, unknown> = extra && typeof extra === 'object' && !Array.isArray(extra) ? { ...(extra as object) } : {};
  for (const f of AVRO_FIELDS) if (rec[f] !== null && rec[f] !== undefined) out[f] = typeof rec[f] === 'bigint' ? Number(rec[f]) : rec[f];
  for (const f of AVRO_JSON_FIELDS) {
    const v = parseJsonField(f, rec[f]);
    if (v !== undefined) out[f] = v;
  }
  if (Array.isArray(rec.sources)) {
    out.sources = (rec.sources as Record<string, unknown>[]).map((s) => {
      const r: Record<string, unknown> = { id: s.id };
      if (s.category != null) r.category = s.category;
      if (s.trust != null) r.trust = s.trust;
      return r;
    });
  }
  return out;
}

export function traceToAvroRecord(t: Trace): Record<string, unknown> {
  const rec: Record<string, unknown> = {};
  const known = new Set<string>([...AVRO_FIELDS, ...AVRO_JSON_FIELDS, 'sources']);
  for (const f of AVRO_FIELDS) rec[f] = t[f] ?? null;
  if (typeof rec.response_size === 'number') rec.response_size = Math.trunc(rec.response_size);
  for (const f of AVRO_JSON_FIELDS) rec[f] = t[f] === undefined ? null : JSON.stringify(t[f]);
  rec.sources = t.sources ? t.sources.map((s) => ({ id: s.id, category: s.category ?? null, trust: s.trust ?? null })) : null;
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(t)) if (!known.has(k)) extra[k] = v;
  rec.extra = Object.keys(extra).length > 0 ? JSON.stringify(extra) : null;
  return rec;
}

// ───────────────────────────── registry ─────────────────────────────

export function createRegistry(url: string): SchemaRegistry {
  return new SchemaRegistry({ host: url, retry: { retries: 2, initialRetryTimeInSecs: 0.1, maxRetryTimeInSecs: 1 } } as never);
}

export const AVRO_SCHEMA_FILES = ['trace', 'decision', 'verdict', 'trust-debt-event', 'ledger-entry'] as const;
export type AvroSchemaName = (typeof AVRO_SCHEMA_FILES)[number];

export function readAvroSchema(name: AvroSchemaName): string {
  return readFileSync(join(packageRoot(), 'schemas', 'avro', `${name}.avsc`), 'utf8');
}

/**
 * Registers one schema under `subject` (idempotent in the registry); returns its id. The client library retries
 * only GETs, and registration is a POST: a 5xx is retried here (registering is idempotent, so a retry is safe).
 * Apicurio answers 500 when two registrations of the same content under different subjects race (its content row
 * is inserted by both), and the second try finds the content there.
 */
export async function registerAvro(registry: SchemaRegistry, name: AvroSchemaName, subject: string, delaysMs: readonly number[] = REGISTRY_RETRY_DELAYS_MS): Promise<number> {
  const schema = { type: SchemaType.AVRO, schema: readAvroSchema(name) } as const;
  for (let attempt = 0; ; attempt++) {
    try {
      const { id } = await registry.register(schema, { subject });
      return id;
    } catch (e) {
      const status = (e as { status?: number }).status;
      if (typeof status !== 'number' || status < 500 || attempt >= delaysMs.length) throw e;
      await new Promise((r) => setTimeout(r, delaysMs[attempt]));
    }
  }
}

/** Pauses between the tries of a registration the registry answered with a 5xx. */
export const REGISTRY_RETRY_DELAYS_MS: readonly number[] = [100, 300, 900];

// ───────────────────────────── trace decoder ─────────────────────────────

export interface DecodedTrace {
  trace: Trace;
  format: 'json' | 'avro';
  schemaId?: number;
  /** For JSON input: the message text the trace was parsed from (valid JSON of the same trace). */
  json?: string;
  /** trace.timestamp as epoch ms (engine/time.ts parseTimestamp), parsed once while validating. */
  timestampMs: number;
}

export interface TraceDecoderOptions {
  registry?: SchemaRegistry;
  maxBytes: number;
}

export class TraceDecoder {
  constructor(private readonly opts: TraceDecoderOptions) {}

  async decode(value: Buffer | null): Promise<DecodedTrace> {
    if (value === null || value.length === 0) throw new StewardError('STEWARD_TRACE_JSON', 'empty message value');
    if (value.length > this.opts.maxBytes) {
      throw new StewardError('STEWARD_TRACE_TOO_LARGE', `message is ${value.length} bytes, limit ${this.opts.maxBytes}`);
    }
    if (isConfluentWire(value)) {
      const schemaId = value.readInt32BE(1);
      const rec = await this.decodeAvro(value, schemaId);
      const obj = avroRecordToTrace(rec);
      const timestampMs = checkTrace(obj);
      return { trace: obj as unknown as Trace, format: 'avro', schemaId, timestampMs };
    }
    const text = value.toString('utf8');
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (e) {
      throw new StewardError('STEWARD_TRACE_JSON', `malformed JSON: ${(e as Error).message}`);
    }
    const timestampMs = checkTrace(obj);
    return { trace: obj as Trace, format: 'json', json: text, timestampMs };
  }

  private async decodeAvro(value: Buffer, schemaId: number): Promise<Record<string, unknown>> {
    if (!this.opts.registry) throw new StewardError('STEWARD_TRACE_AVRO', `Avro message (schema id ${schemaId}) but no schema registry configured`);
    try {
      return (await this.opts.registry.decode(value)) as Record<string, unknown>;
    } catch (e) {
      throw registryFailure(e, schemaId, 'STEWARD_TRACE_AVRO');
    }
  }
}

/**
 * What a failed registry lookup (or decode through it) of `schemaId` means: the registry's own answer that it has
 * no such schema, or an Avro body that does not decode, is the record's fault (`unknownCode`, not retryable: the
 * caller dead-letters it); an unreachable or failing registry is an outage (STEWARD_KAFKA, retryable: the
 * partition waits, good data is never dead-lettered for it).
 */
export function registryFailure(e: unknown, schemaId: number, unknownCode: 'STEWARD_TRACE_AVRO' | 'STEWARD_OUTPUT_AVRO'): StewardError {
  const status = (e as { status?: number }).status;
  const message = String((e as Error).message);
  // A registry's own answer (404/422 with an error body) that it has no such schema: dead-letter. A 5xx or
  // 429 is an outage whatever its text says, and a 404 without a registry error body (a wrong URL path,
  // a proxy) is not the registry speaking: both are retried, so good data is never dead-lettered for them.
  const registryAnswer = (status === 404 || status === 422) && !/Error, status \d+/.test(message);
  if (registryAnswer || (status === undefined && /not found/i.test(message))) {
    return new StewardError(unknownCode, `unknown Avro schema id ${schemaId}`);
  }
  if (status !== undefined && (status >= 500 || status === 429 || status === 404 || status === 408)) {
    return new StewardError('STEWARD_KAFKA', `schema registry unavailable (HTTP ${status}): ${message}`, { retryable: true, cause: e });
  }
  if (status === undefined && (e as Error).name !== 'ResponseError' && !/ECONNREFUSED|ETIMEDOUT|socket|fetch failed|network/i.test(message)) {
    return new StewardError(unknownCode, `Avro decode failed (schema id ${schemaId}): ${message}`);
  }
  // The registry itself is unreachable: do not dead-letter good data, retry later.
  return new StewardError('STEWARD_KAFKA', `schema registry unavailable: ${message}`, { retryable: true, cause: e });
}

/** Encodes a trace for producing: Avro wire format when a schema id is given, JSON otherwise. */
export async function encodeTrace(trace: Trace, avro?: { registry: SchemaRegistry; schemaId: number }): Promise<Buffer> {
  if (!avro) return Buffer.from(JSON.stringify(trace));
  return avro.registry.encode(avro.schemaId, traceToAvroRecord(trace));
}
