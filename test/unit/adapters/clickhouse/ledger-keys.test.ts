import { describe, expect, it } from 'vitest';
import { ledgerSignerFrom } from '../../../../src/adapters/clickhouse/ledger-keys.js';

describe('ledger keys', () => {
  it('a key that is neither PEM nor a readable file is refused without echoing the value (it may be key material)', () => {
    const key = 'MC4CAQAwBQYDK2VwBCIEIBs2QmZoSupErSeCrEtKeYmAtErIaLnotReallyPemXyZ';
    expect(() => ledgerSignerFrom(key)).toThrow(`not PEM text and not a readable file (ENOENT; value hidden, ${key.length} chars)`);
    try {
      ledgerSignerFrom(key);
    } catch (e) {
      expect((e as Error).message).not.toContain(key.slice(0, 12));
    }
  });
});
