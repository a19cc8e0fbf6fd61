// Issue #22 item 1: a statement ClickHouse rejects for its own text (syntax, max_query_size) is a bug no retry
// cures: it is reported non-retryable (and fails loudly) instead of being retried for ever. Real ClickHouse.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseStore, sqlString } from '../../../src/adapters/clickhouse/client.js';
import { StewardError, isRetryable } from '../../../src/errors.js';
import { services, uniqueIdent } from '../setup/helpers.js';

const failure = async (p: Promise<unknown>): Promise<StewardError> => {
  try {
    await p;
  } catch (e) {
    return e as StewardError;
  }
  throw new Error('expected a failure');
};

describe('ClickHouse statement errors are not retried (real ClickHouse)', () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = new ClickHouseStore({ url: services().clickhouseUrl, database: uniqueIdent('steward_it_stmt') });
    await store.command(`CREATE DATABASE IF NOT EXISTS ${store.database}`);
  });
  afterAll(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${store.database}`);
    await store.close();
  });

  it('an IN list over max_query_size: Code 62, not retryable', async () => {
    const ids = Array.from({ length: 5000 }, (_, i) => sqlString(`${'x'.repeat(200)}-${i}`)).join(',');
    const e = await failure(store.query(`SELECT 1 WHERE 'a' IN (${ids})`));
    expect(e).toBeInstanceOf(StewardError);
    expect(e.details).toMatchObject({ server_code: 62 });
    expect(isRetryable(e)).toBe(false);
    expect(e.message).toMatch(/a bug in the statement, not retried/);
  });

  it('a syntax error and an unknown function are not retryable; a missing table still is (an operator creates it)', async () => {
    expect(isRetryable(await failure(store.query('SELEC 1')))).toBe(false);
    expect(isRetryable(await failure(store.query('SELECT no_such_function_xyz(1)')))).toBe(false);
    expect(isRetryable(await failure(store.command('CREATE TABLE oops (')))).toBe(false);
    const missing = await failure(store.query(`SELECT * FROM ${store.database}.no_such_table`));
    expect(isRetryable(missing)).toBe(true);
  });
});
