/**
 * The dashboard's typed query parameters. ClickHouse 18.16 has no query parameters (`{name:Type}` fails
 * there with "Unknown setting param_*"), so nothing from a request reaches SQL as text of its own choosing:
 * numbers are parsed and range-checked into safe integers, column names come from fixed maps, and the only
 * free strings (an agent, a trace id, a series key) are length-checked and become literals through
 * `sqlString` — see `lit`. docs/dashboard.md "Queries".
 */
import { StewardError } from '../../errors.js';
import { sqlString } from '../clickhouse/client.js';

/** Bucket widths the time-series panels use (ms); the smallest that gives at most MAX_BUCKETS over the range. */
export const BUCKETS_MS: readonly number[] = [60_000, 300_000, 900_000, 3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000];
export const MAX_BUCKETS = 240;
const MAX_TEXT = 256;
/** Year 2200 in ms: a bound that keeps every accepted time a safe integer and a valid UInt64 literal. */
const MAX_MS = 7_258_118_400_000;

export interface DashboardRange {
  fromMs: number;
  toMs: number;
  bucketMs: number;
}

/** A SQL literal made by this module only: panels interpolate these, never request text. */
export class SqlLiteral {
  private constructor(readonly sql: string) {}
  static int(n: number, what: string): SqlLiteral {
    if (!Number.isSafeInteger(n)) throw usage(`${what} must be an integer, got ${String(n)}`);
    return new SqlLiteral(String(n));
  }
  static text(s: string, what: string): SqlLiteral {
    if (typeof s !== 'string' || s.length > MAX_TEXT || s.includes('\0')) throw usage(`${what} must be a string of at most ${MAX_TEXT} characters without NUL`);
    return new SqlLiteral(sqlString(s));
  }
  toString(): string {
    return this.sql;
  }
}

export const lit = { int: SqlLiteral.int, text: SqlLiteral.text };

function usage(message: string): StewardError {
  return new StewardError('STEWARD_USAGE', `dashboard: ${message}`, { retryable: false });
}

/** An epoch-ms query value: digits only, within [0, year 2200]. */
export function parseMs(v: unknown, what: string, dflt: number): number {
  if (v === undefined || v === '') return dflt;
  const s = String(v);
  if (!/^\d{1,16}$/.test(s)) throw usage(`${what} must be epoch milliseconds (digits), got '${s.slice(0, 40)}'`);
  const n = Number(s);
  if (n > MAX_MS) throw usage(`${what} is beyond year 2200`);
  return n;
}

/** The bucket for a range: the smallest allowed width giving at most MAX_BUCKETS buckets. */
export function bucketFor(fromMs: number, toMs: number): number {
  const span = Math.max(1, toMs - fromMs);
  return BUCKETS_MS.find((b) => span / b <= MAX_BUCKETS) ?? BUCKETS_MS[BUCKETS_MS.length - 1]!;
}

/** `from`/`to` of a request (default: the last 24 h up to now); `bucket`, when given, one of BUCKETS_MS giving at most MAX_BUCKETS over the range. */
export function parseRange(q: Record<string, unknown>, nowMs: number): DashboardRange {
  const toMs = parseMs(q.to, 'to', nowMs);
  const fromMs = parseMs(q.from, 'from', Math.max(0, toMs - 86_400_000));
  if (fromMs > toMs) throw usage(`from (${fromMs}) is after to (${toMs})`);
  let bucketMs = bucketFor(fromMs, toMs);
  if (q.bucket !== undefined && q.bucket !== '') {
    const b = parseMs(q.bucket, 'bucket', bucketMs);
    if (!BUCKETS_MS.includes(b)) throw usage(`bucket must be one of ${BUCKETS_MS.join(', ')} ms`);
    // The same bound as the default: bucket=60000 with from=0 asked ClickHouse for ~29 million groups per series.
    const span = Math.max(1, toMs - fromMs);
    if (span / b > MAX_BUCKETS) throw usage(`bucket ${b} ms gives ${Math.ceil(span / b)} buckets over ${span} ms (at most ${MAX_BUCKETS}): choose a wider bucket or a shorter range`);
    bucketMs = b;
  }
  return { fromMs, toMs, bucketMs };
}

/** A bounded row count. */
export function parseLimit(v: unknown, dflt: number, max = 500): number {
  if (v === undefined || v === '') return dflt;
  const s = String(v);
  if (!/^\d{1,4}$/.test(s) || Number(s) < 1 || Number(s) > max) throw usage(`limit must be an integer from 1 to ${max}`);
  return Number(s);
}

/** A free-text value (agent, trace id, series key) for `lit.text`. */
export function parseText(v: unknown, what: string): string {
  if (typeof v !== 'string' || v === '') throw usage(`${what} is required`);
  lit.text(v, what);
  return v;
}

/** A value from a fixed set (a dimension, a panel id): the set is the whitelist. */
export function parseChoice<T extends string>(v: unknown, what: string, choices: readonly T[]): T {
  if (typeof v !== 'string' || !(choices as readonly string[]).includes(v)) throw usage(`${what} must be one of ${choices.join(', ')}`);
  return v as T;
}

/** Host names every dashboard answers to, whatever it is bound to: its loopback names. */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '::1'];
/** Binding to these means "every interface": not a name a browser would send, so it adds nothing. */
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '']);

/** `Example.COM.` / `[::1]` → `example.com` / `::1`: how Host names are compared. */
function normalHost(name: string): string {
  const n = name.trim().toLowerCase().replace(/\.$/, '');
  return n.startsWith('[') && n.endsWith(']') ? n.slice(1, -1) : n;
}

/** The host name of a Host header without its port (`[::1]:8790` → `::1`); undefined when absent. */
export function hostHeaderName(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  const h = header.trim();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? normalHost(h) : normalHost(h.slice(0, end + 1));
  }
  const colon = h.indexOf(':');
  return normalHost(colon < 0 ? h : h.slice(0, colon));
}

/**
 * The Host names the dashboard accepts (a DNS-rebinding guard, docs/dashboard.md "Access"): loopback names,
 * the address it is bound to (unless a wildcard), and the operator's `dashboard.allowed_hosts`.
 */
export function allowedHostNames(bindHost: string | undefined, extra: readonly string[] = []): ReadonlySet<string> {
  const out = new Set(LOOPBACK_HOSTS);
  const bound = normalHost(bindHost ?? '127.0.0.1');
  if (!WILDCARD_BINDS.has(bound)) out.add(bound);
  for (const e of extra) if (normalHost(e) !== '') out.add(normalHost(e));
  return out;
}
