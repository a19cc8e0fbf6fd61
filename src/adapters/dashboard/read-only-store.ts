/**
 * The dashboard's ClickHouse client: every statement is sent with the `readonly=1` query setting, so the
 * server itself refuses writes, DDL and SET (code 164) whatever SQL reaches it. ClickHouse 18.16 has no SQL
 * users or grants; the server-side counterpart is a read-only profile user (docs/dashboard.md), and this
 * setting holds even when the dashboard is pointed at a user that could write.
 */
import { StewardError } from '../../errors.js';
import { ClickHouseStore, clickhouseError, type ClickHouseSettings } from '../clickhouse/client.js';

export const READ_ONLY_SETTINGS = { readonly: '1' } as const;

export class ReadOnlyClickHouseStore extends ClickHouseStore {
  constructor(settings: ClickHouseSettings) {
    super(settings);
  }

  override async query<T = Record<string, unknown>>(sql: string): Promise<T[]> {
    try {
      // The client's settings type lists readonly as a string enum ('0' | '1' | '2').
      const rs = await this.client.query({ query: sql, format: 'JSONEachRow', clickhouse_settings: { ...READ_ONLY_SETTINGS } });
      return (await rs.json()) as T[];
    } catch (e) {
      throw clickhouseError(e, 'dashboard query failed', 'statement');
    }
  }

  // The write paths of the store are closed here too: a dashboard bug calling them fails loudly in-process.
  override command(_sql: string): Promise<void> {
    return Promise.reject(readOnly('command'));
  }

  override insert(table: string, _rows?: readonly object[]): Promise<void> {
    return Promise.reject(readOnly(`insert into ${table}`));
  }

  override insertEncoded(table: string, _parts?: readonly (string | Uint8Array)[]): Promise<void> {
    return Promise.reject(readOnly(`insert into ${table}`));
  }
}

function readOnly(what: string): StewardError {
  return new StewardError('STEWARD_CLICKHOUSE', `the dashboard's ClickHouse client is read-only: ${what} refused`, { retryable: false });
}
