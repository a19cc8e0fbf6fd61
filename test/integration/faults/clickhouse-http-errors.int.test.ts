// Issue #22 item 10 / spec-decisions D31: ClickHouse HTTP failures without a ClickHouse error code, from a real
// HTTP proxy in front of the real server. Transient ones (a proxy's 502 page, a connection reset) are retried
// until the server answers; a refused request (413, 400 without `Code:`) is not retried: the sink bisects
// and dead-letters only the refused rows; a wrong endpoint (404) fails the batch without dead-lettering any.
// Before D31 every one of them was retried for ever (the 413/400/404 cases never settled).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { ClickHouseSink, type PoisonRow } from '../../../src/adapters/clickhouse/sink.js';
import { StewardError, isRetryable } from '../../../src/errors.js';
import { services, uniqueIdent } from '../setup/helpers.js';
import { HttpFaultProxy, type HttpAnswer, type SeenRequest } from './fault-proxy.js';

const PROXY_502 = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>';

const isInsert = (r: SeenRequest) => /INSERT/i.test(decodeURIComponent(r.url));

describe('ClickHouse answers without an error code (real proxy in front of real ClickHouse)', () => {
  let direct: ClickHouseStore;
  let proxied: ClickHouseStore;
  let proxy: HttpFaultProxy;
  const table = 'faults';

  beforeAll(async () => {
    const database = uniqueIdent('steward_it_chhttp');
    direct = new ClickHouseStore({ url: services().clickhouseUrl, database });
    await direct.command(`CREATE DATABASE IF NOT EXISTS ${database}`);
    await direct.command(`CREATE TABLE ${direct.table(table)} (id UInt32, s String) ENGINE = MergeTree ORDER BY id`);
    proxy = await HttpFaultProxy.start(services().clickhouseUrl);
    proxied = new ClickHouseStore({ url: proxy.url, database, requestTimeoutMs: 5000 });
  });
  afterAll(async () => {
    await proxied?.close();
    await proxy?.close();
    await direct?.command(`DROP DATABASE IF EXISTS ${direct.database}`);
    await direct?.close();
  });

  const sinkOf = (poison: PoisonRow[]) =>
    new ClickHouseSink(proxied, { maxRows: 1000, maxDelayMs: 0, retry: { initialMs: 5, maxMs: 20 }, onPoison: async (rows) => void poison.push(...rows) });
  const rows = (from: number, n: number, s = (i: number) => `row-${i}`) => Array.from({ length: n }, (_, k) => ({ row: { id: from + k, s: s(from + k) }, source: from + k }));
  const ids = async (from: number, to: number) =>
    (await direct.query<{ id: number }>(`SELECT id FROM ${direct.table(table)} WHERE id >= ${from} AND id < ${to} ORDER BY id`)).map((r) => Number(r.id));
  /** Answers `fault` to the first `times` inserts, then forwards. */
  const firstInserts = (times: number, fault: HttpAnswer) => {
    let left = times;
    return (r: SeenRequest): HttpAnswer => (isInsert(r) && left-- > 0 ? fault : 'pass');
  };

  it('a proxy 502 page and connection resets are retried until the server answers; no row dead-lettered', async () => {
    const poison: PoisonRow[] = [];
    const sink = sinkOf(poison);
    proxy.decide = firstInserts(3, { status: 502, body: PROXY_502 });
    await sink.write(table, rows(0, 10));
    expect(sink.stats.retries).toBe(3);
    proxy.decide = firstInserts(3, 'reset');
    await sink.write(table, rows(10, 10));
    expect(sink.stats.retries).toBe(6);
    expect(poison).toEqual([]);
    expect(await ids(0, 20)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('413 from the proxy: the batch is bisected until the parts fit; a row too large alone is dead-lettered with the status', async () => {
    const poison: PoisonRow[] = [];
    const sink = sinkOf(poison);
    proxy.decide = (r) => (isInsert(r) && r.body.length > 400 ? { status: 413, body: '<html><body><h1>413 Request Entity Too Large</h1></body></html>' } : 'pass');
    await sink.write(table, rows(100, 30, (i) => (i === 117 ? 'x'.repeat(600) : `r${i}`)));
    proxy.decide = () => 'pass';
    expect(poison.map((p) => p.source)).toEqual([117]);
    expect(poison[0].error.message).toMatch(/HTTP 413 without a ClickHouse error code \(refused request, not retried\): 413 Request Entity Too Large/);
    expect(isRetryable(poison[0].error)).toBe(false);
    expect(await ids(100, 130)).toEqual(Array.from({ length: 30 }, (_, i) => 100 + i).filter((i) => i !== 117));
    expect(sink.stats.retries).toBe(0);
  });

  it('400 without `Code:` (a filter refusing one row): only that row is dead-lettered', async () => {
    const poison: PoisonRow[] = [];
    const sink = sinkOf(poison);
    proxy.decide = (r) => (isInsert(r) && r.body.includes('forbidden-word') ? { status: 400, body: 'Request blocked by policy' } : 'pass');
    await sink.write(table, rows(200, 16, (i) => (i === 203 ? 'has forbidden-word' : `r${i}`)));
    proxy.decide = () => 'pass';
    expect(poison.map((p) => p.source)).toEqual([203]);
    expect(poison[0].error.details).toMatchObject({ http_status: 400, failure: 'request' });
    expect(await ids(200, 216)).toHaveLength(15);
  });

  it('404 (wrong endpoint): the write fails loudly, unbisected, nothing dead-lettered or inserted', async () => {
    const poison: PoisonRow[] = [];
    const sink = sinkOf(poison);
    proxy.decide = () => ({ status: 404, body: '<h1>Not Found</h1>' });
    const err = await sink.write(table, rows(300, 8)).then(
      () => undefined,
      (e: unknown) => e as StewardError,
    );
    proxy.decide = () => 'pass';
    expect(err).toBeInstanceOf(StewardError);
    expect(err!.message).toMatch(/HTTP 404 .*endpoint is misconfigured/);
    expect(isRetryable(err)).toBe(false);
    expect(poison).toEqual([]);
    // One request: no retry, no bisection.
    expect(sink.stats.retries).toBe(0);
    expect(await ids(300, 308)).toEqual([]);
  });

  it('statements: a codeless 400 is a bug (not retried), a 502 or a reset is retryable, a real ClickHouse error keeps its code', async () => {
    const fail = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a failure'); }, (e: unknown) => e as StewardError);
    proxy.decide = () => ({ status: 400, body: 'Bad Request' });
    const bad = await fail(proxied.query('SELECT 1'));
    expect(isRetryable(bad)).toBe(false);
    expect(bad.message).toMatch(/HTTP 400 .*a bug: not retried/);
    proxy.decide = () => ({ status: 502, body: PROXY_502 });
    const gw = await fail(proxied.query('SELECT 1'));
    expect(isRetryable(gw)).toBe(true);
    expect(gw.message).toMatch(/HTTP 502 without a ClickHouse error code: 502 Bad Gateway 502 Bad Gateway nginx/);
    proxy.decide = () => 'reset';
    expect(isRetryable(await fail(proxied.command('SELECT 1')))).toBe(true);
    proxy.decide = () => 'pass';
    const real = await fail(proxied.query('SELEC 1'));
    expect(real.details).toMatchObject({ server_code: 62 });
    expect(await proxied.query<{ x: number }>('SELECT 1 AS x;')).toEqual([{ x: 1 }]);
  });
});
