// spec-decisions D31: ClickHouse failures without a ClickHouse error code are classified by their HTTP status.
import { describe, expect, it } from 'vitest';
import { ClickHouseHttpError, clickhouseError, codelessFailure, isEndpointFailure } from '../../../../src/adapters/clickhouse/client.js';
import { ClickHouseSink, type PoisonRow } from '../../../../src/adapters/clickhouse/sink.js';
import { isRetryable } from '../../../../src/errors.js';

describe('codeless ClickHouse failures (D31)', () => {
  it('no answer, 5xx, 408 and 429 are transient; 401/403/404/405/407 the endpoint; other 4xx the request', () => {
    expect([undefined, 500, 502, 503, 504, 408, 429].map(codelessFailure)).toEqual(Array(7).fill('transient'));
    expect([401, 403, 404, 405, 407].map(codelessFailure)).toEqual(Array(5).fill('endpoint'));
    expect([400, 413, 414, 422, 431].map(codelessFailure)).toEqual(Array(5).fill('request'));
  });

  it('maps to StewardErrors: retryable only when transient, the status in details, markup stripped from the message', () => {
    const gw = clickhouseError(new ClickHouseHttpError('<html><h1>502 Bad Gateway</h1></html>', 502), 'insert into t failed');
    expect(gw).toMatchObject({ retryable: true, details: { http_status: 502, failure: 'transient' } });
    expect(gw.message).toBe('insert into t failed: HTTP 502 without a ClickHouse error code: 502 Bad Gateway');
    const reset = clickhouseError(new ClickHouseHttpError('socket hang up', undefined, 'ECONNRESET'), 'query failed', 'statement');
    expect(reset).toMatchObject({ retryable: true });
    expect(reset.message).toMatch(/no answer: socket hang up/);
    const big = clickhouseError(new ClickHouseHttpError('', 413), 'insert into t failed');
    expect(big).toMatchObject({ retryable: false, details: { http_status: 413, failure: 'request' } });
    expect(isEndpointFailure(big)).toBe(false);
    const bug = clickhouseError(new ClickHouseHttpError('Bad Request', 400), 'query failed', 'statement');
    expect(bug.message).toMatch(/a bug: not retried/);
    const wrong = clickhouseError(new ClickHouseHttpError('Not Found', 404), 'insert into t failed');
    expect(isRetryable(wrong)).toBe(false);
    expect(isEndpointFailure(wrong)).toBe(true);
  });

  it('an answer carrying a ClickHouse code keeps the code rules whatever its status', () => {
    const data = clickhouseError(new ClickHouseHttpError('Code: 27, e.displayText() = DB::Exception: Cannot parse input', 500), 'insert into t failed');
    expect(data).toMatchObject({ retryable: false, details: { server_code: 27 } });
    const parts = clickhouseError(new ClickHouseHttpError('Code: 252. DB::Exception: Too many parts', 500), 'insert into t failed');
    expect(parts).toMatchObject({ retryable: true, details: { server_code: 252 } });
  });

  it('the sink rejects an endpoint failure without bisecting or dead-lettering; a request failure is bisected', async () => {
    let calls = 0;
    const poison: PoisonRow[] = [];
    const target = {
      async insert(_t: string, rows: readonly object[]) {
        calls++;
        if (rows.some((r) => (r as { big?: boolean }).big)) throw clickhouseError(new ClickHouseHttpError('too large', 413), 'insert');
        if ((rows[0] as { id: number }).id >= 100) throw clickhouseError(new ClickHouseHttpError('Not Found', 404), 'insert');
      },
    };
    const sink = new ClickHouseSink(target, { maxRows: 100, maxDelayMs: 0, onPoison: async (p) => void poison.push(...p), sleep: async () => {} });
    await expect(sink.write('t', [100, 101, 102, 103].map((id) => ({ row: { id }, source: id })))).rejects.toThrow(/Not Found/);
    expect(calls).toBe(1);
    expect(poison).toEqual([]);
    await sink.write('t', [1, 2, 3, 4].map((id) => ({ row: { id, big: id === 3 }, source: id })));
    expect(poison.map((p) => p.source)).toEqual([3]);
  });
});
