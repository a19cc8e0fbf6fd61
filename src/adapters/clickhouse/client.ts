/**
 * Thin edge over ClickHouse's HTTP interface: qualified table names, inserts (TabSeparated for the sink tables,
 * JSONEachRow for anything else), queries and commands as plain POSTs on keep-alive agents (so the HTTP
 * status of a failure is known), and errors mapped to StewardError with a `retryable` flag the sink relies on
 * (server down → retry; bad row → poison; answers without a ClickHouse code: spec-decisions D31).
 * `client` (@clickhouse/client) remains for ping() and callers that stream results.
 * ClickHouse 18.16 has no query parameters, so literals go through `sqlString`.
 */
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import http from 'node:http';
import https from 'node:https';
import { StewardError } from '../../errors.js';
import { TABLE_COLUMNS } from './rows.js';
import { tsvEncoder, type TsvEncoder } from './tsv.js';

export interface ClickHouseSettings {
  url: string;
  database: string;
  username?: string;
  password?: string;
  requestTimeoutMs?: number;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** TSV encoders of the sink tables (rows.ts column specs); other tables are written as JSONEachRow. */
const TSV: ReadonlyMap<string, TsvEncoder> = new Map(Object.entries(TABLE_COLUMNS).map(([t, cols]) => [t, tsvEncoder(cols)]));

export function assertIdentifier(name: string): string {
  if (!IDENT.test(name)) throw new StewardError('STEWARD_CONFIG', `invalid ClickHouse identifier '${name}'`);
  return name;
}

/** A single-quoted ClickHouse string literal. */
export function sqlString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Server error codes caused by the data itself: retrying cannot help, so the row is poison.
 * (CANNOT_PARSE_*, TYPE_MISMATCH, CANNOT_CONVERT_TYPE, INCORRECT_DATA, CANNOT_READ_ARRAY_FROM_TEXT,
 * TOO_LARGE_STRING_SIZE, unknown field, NULL into non-Nullable, ...)
 */
const DATA_ERROR_CODES = new Set([6, 8, 16, 26, 27, 32, 33, 38, 41, 53, 69, 70, 72, 117, 130, 131, 349, 1001]);

export function serverErrorCode(e: unknown): number | undefined {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && /^\d+$/.test(code)) return Number(code);
  const m = /Code:\s*(\d+)/.exec(e instanceof Error ? e.message : String(e));
  return m ? Number(m[1]) : undefined;
}

/**
 * Server error codes caused by the statement itself: SYNTAX_ERROR (62, also "Max query size exceeded"),
 * ILLEGAL_TYPE_OF_ARGUMENT (43), UNKNOWN_FUNCTION (46), UNKNOWN_IDENTIFIER (47), ILLEGAL_AGGREGATION (184),
 * NOT_AN_AGGREGATE (215). Steward wrote the statement, so it is a bug no retry cures: a query or command that
 * fails so is not retryable and fails loudly, instead of being retried for ever while a consumer keeps
 * heart-beating (issue #22 item 1: an IN list over max_query_size stalled a ledger partition). Inserts keep
 * their classification: the sink bisects non-retryable insert errors into poison rows.
 */
const STATEMENT_BUG_CODES = new Set([43, 46, 47, 62, 184, 215]);

/**
 * A failed ClickHouse HTTP exchange as the store saw it: the status (absent when no answer came: connection
 * refused or reset, timeout) and the body, so an answer that carries no ClickHouse error code (a proxy's 502
 * page, a 413 from a load balancer) is still classified by what it is (spec-decisions D31).
 */
export class ClickHouseHttpError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ClickHouseHttpError';
  }
}

/**
 * How a failure without a ClickHouse error code is treated (spec-decisions D31):
 * - `transient`: no answer (refused, reset, timeout), 5xx, 408 or 429 — the server or what is in front of it
 *   is unavailable: retried with the sink's capped backoff, like ClickHouse being down (rows are never
 *   dead-lettered for an outage).
 * - `request`: another 4xx (413/414/431 too large, 400/422 refused) — this request was refused and the same
 *   bytes will be refused again: not retryable; the sink bisects an insert until the refused rows are alone
 *   and dead-letters those with the status as reason; a statement fails loudly as a bug.
 * - `endpoint`: 401/403/404/405/407 — the endpoint itself is wrong (path, auth at a proxy): not retryable, and
 *   never a reason to dead-letter rows: the sink fails the batch (its offsets stay uncommitted, the consumer
 *   crashes loudly and re-reads them once the configuration is fixed).
 */
export type CodelessFailure = 'transient' | 'request' | 'endpoint';

const ENDPOINT_STATUSES = new Set([401, 403, 404, 405, 407]);

export function codelessFailure(status: number | undefined): CodelessFailure {
  if (status === undefined || status >= 500 || status === 408 || status === 429) return 'transient';
  if (ENDPOINT_STATUSES.has(status)) return 'endpoint';
  return status >= 400 ? 'request' : 'transient';
}

/** Whether `e` is an insert failure the sink must not bisect into poison rows (spec-decisions D31 `endpoint`). */
export function isEndpointFailure(e: unknown): boolean {
  return e instanceof StewardError && (e.details as { failure?: string } | undefined)?.failure === 'endpoint';
}

/** The first line of a failure, without markup (a proxy's HTML page), at most 300 characters. */
function summary(msg: string): string {
  const text = msg.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
  return text.slice(0, 300) || '(empty body)';
}

export function clickhouseError(e: unknown, what: string, kind: 'insert' | 'statement' = 'insert'): StewardError {
  if (e instanceof StewardError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  const code = serverErrorCode(e);
  if (code === undefined) {
    const status = e instanceof ClickHouseHttpError ? e.status : undefined;
    const failure = codelessFailure(status);
    const answer = status === undefined ? 'no answer' : `HTTP ${status} without a ClickHouse error code`;
    const why = failure === 'transient' ? '' : failure === 'endpoint' ? ' (the endpoint is misconfigured, not retried)' : kind === 'statement' ? ' (refused request, a bug: not retried)' : ' (refused request, not retried)';
    return new StewardError('STEWARD_CLICKHOUSE', `${what}: ${answer}${why}: ${summary(msg)}`, {
      retryable: failure === 'transient',
      cause: e,
      details: status === undefined ? undefined : { http_status: status, failure },
    });
  }
  if (kind === 'statement' && STATEMENT_BUG_CODES.has(code))
    return new StewardError('STEWARD_CLICKHOUSE', `${what} (a bug in the statement, not retried): ${msg.split('\n')[0].slice(0, 500)}`, {
      retryable: false,
      cause: e,
      details: { server_code: code },
    });
  // Everything that is not a data error is retryable: too many parts, memory limits, and also a missing table
  // (an operator fixes it; rows must not be dead-lettered meanwhile).
  return new StewardError('STEWARD_CLICKHOUSE', `${what}: ${msg.split('\n')[0].slice(0, 500)}`, {
    retryable: !DATA_ERROR_CODES.has(code),
    cause: e,
    details: { server_code: code },
  });
}

export class ClickHouseStore {
  readonly database: string;
  readonly client: ClickHouseClient;
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 8 });

  /** The server URL without credentials, and the credentials every request sends (queries and inserts alike). */
  private readonly endpoint: URL;
  private readonly authorization: string;

  constructor(readonly settings: ClickHouseSettings) {
    this.database = assertIdentifier(settings.database);
    // Credentials in the URL (http://user:pass@host) count like username/password, which win when both are set.
    // Both request paths (the client's queries, postInsert) must send the same user: an explicit header replaced
    // the URL's user on inserts before, so migrations ran as one user and the sink as `default`.
    const u = new URL(settings.url);
    const username = settings.username ?? (u.username ? decodeURIComponent(u.username) : 'default');
    const password = settings.password ?? (u.password ? decodeURIComponent(u.password) : '');
    u.username = '';
    u.password = '';
    this.endpoint = u;
    this.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    this.client = createClient({
      url: u.toString(),
      username,
      password,
      request_timeout: settings.requestTimeoutMs ?? 30_000,
      // Decompressing responses is cheap; compressing requests is not worth the CPU on loopback.
      compression: { request: false, response: false },
      // Failures surface as StewardErrors to the caller (which logs or retries); the client's own logs would duplicate them.
      log: { level: ClickHouseLogLevel.OFF },
    });
  }

  table(name: string): string {
    return `${this.database}.${assertIdentifier(name)}`;
  }

  /** Inserts row objects (TabSeparated for the sink tables, else JSONEachRow), through the same POST as every request. */
  async insert(table: string, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    return this.insertEncoded(table, [this.encodeRows(table, rows)]);
  }

  /**
   * Rows serialised for `insertEncoded` (the sink does this at write time, overlapping inserts in flight):
   * TSV lines for the sink tables, else one JSON object per line (JSONEachRow). Either way exactly one line
   * per row, each ending with a newline: parts concatenate, and the sink can split a rejected batch by line.
   */
  encodeRows(table: string, rows: readonly object[]): string {
    const tsv = TSV.get(table);
    if (tsv) return tsv.encode(rows);
    return rows.length === 0 ? '' : `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
  }

  /**
   * Inserts parts made by `encodeRows(table, …)`, in order, as one INSERT. Plain HTTP POST on a keep-alive
   * agent: every part is handed to the socket at once (no stream backpressure round trips through an event
   * loop that is busy mapping the next batch).
   */
  async insertEncoded(table: string, parts: readonly (string | Uint8Array)[]): Promise<void> {
    if (parts.length === 0) return;
    const tsv = TSV.get(table);
    const query = tsv
      ? `INSERT INTO ${this.table(table)} ${tsv.columnList} FORMAT TabSeparated`
      : `INSERT INTO ${this.table(table)} FORMAT JSONEachRow`;
    try {
      await this.postInsert(query, parts);
    } catch (e) {
      throw clickhouseError(e, `insert into ${table} failed`);
    }
  }

  private postInsert(query: string, parts: readonly (string | Uint8Array)[]): Promise<void> {
    return this.post(query, parts).then(() => undefined);
  }

  /**
   * One POST on the keep-alive agents; resolves with the body of a 200 answer. Any other answer rejects with a
   * ClickHouseHttpError carrying its status, so answers without a ClickHouse error code are classified too
   * (spec-decisions D31). `query` goes in the URL (inserts: the data is the body); null sends the body as the
   * statement (queries and commands: no URL length limit).
   */
  private post(query: string | null, parts: readonly (string | Uint8Array)[]): Promise<string> {
    const url = new URL(this.endpoint);
    if (query !== null) url.searchParams.set('query', query);
    const secure = url.protocol === 'https:';
    const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'text/plain; charset=utf-8', Authorization: this.authorization };
    const timeoutMs = this.settings.requestTimeoutMs ?? 30_000;
    return new Promise<string>((resolve, reject) => {
      const req = (secure ? https : http).request(url, { method: 'POST', headers, agent: secure ? this.httpsAgent : this.httpAgent });
      req.setTimeout(timeoutMs, () => req.destroy(new ClickHouseHttpError(`timeout after ${timeoutMs} ms`, undefined)));
      req.on('error', (e) => reject(e instanceof ClickHouseHttpError ? e : new ClickHouseHttpError(e.message, undefined, (e as NodeJS.ErrnoException).code)));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          // An error page is read up to 1 MiB (the rest is dropped); a result in full.
          if (res.statusCode === 200 || size < 1 << 20) chunks.push(c);
          size += c.length;
        });
        res.on('error', (e) => reject(new ClickHouseHttpError(e.message, undefined, (e as NodeJS.ErrnoException).code)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) return resolve(text);
          const code = res.headers['x-clickhouse-exception-code'];
          const message = code && !/Code:\s*\d+/.test(text) ? `Code: ${String(code)}. ${text}` : text || `HTTP ${res.statusCode}`;
          reject(new ClickHouseHttpError(message, res.statusCode));
        });
      });
      for (const part of parts) req.write(part);
      req.end();
    });
  }

  async command(sql: string): Promise<void> {
    try {
      await this.post(null, [sql]);
    } catch (e) {
      throw clickhouseError(e, 'command failed', 'statement');
    }
  }

  async query<T = Record<string, unknown>>(sql: string): Promise<T[]> {
    let text: string;
    try {
      text = await this.post(null, [`${sql.replace(/[\s;]+$/, '')}\nFORMAT JSONEachRow`]);
    } catch (e) {
      throw clickhouseError(e, 'query failed', 'statement');
    }
    const rows: T[] = [];
    for (let at = 0; at < text.length; ) {
      const nl = text.indexOf('\n', at);
      const end = nl < 0 ? text.length : nl;
      if (end > at) {
        try {
          rows.push(JSON.parse(text.slice(at, end)) as T);
        } catch {
          // An exception raised after the answer began streaming ends the 200 body with its "Code: N." text.
          throw clickhouseError(new ClickHouseHttpError(text.slice(at, at + 2000), 200), 'query failed', 'statement');
        }
      }
      at = end + 1;
    }
    return rows;
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.client.ping()).success;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
    return this.client.close();
  }
}
