/** The ClickHouse SQL dialect (issue #28): lexer, classifier edges, fail closed on random text, lazy grammars. */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { lexClickHouse } from '../../../../src/engine/dsl/clickhouse-lexer.js';
import { sqlFacts } from '../../../../src/engine/dsl/facts.js';

const ch = (q: string) => sqlFacts(q, 'clickhouse');
const code = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
};

describe('ClickHouse lexer', () => {
  it('reads strings, quoted identifiers and heredocs as ClickHouse does', () => {
    const t = lexClickHouse(`SELECT 'a\\'b''c\\x41', "q""x", \`b\\\`t\`, $$x;y$$, $tag$ ; $tag$, {id:UInt32}, 0x1F, 1e-3`);
    expect(t.map((x) => [x.kind, x.text]).filter(([k]) => k !== 'op')).toEqual([
      ['word', 'SELECT'],
      ['string', "a'b'cA"],
      ['qident', 'q"x'],
      ['qident', 'b`t'],
      ['string', 'x;y'],
      ['string', ' ; '],
      ['param', '{id:UInt32}'],
      ['number', '0x1F'],
      ['number', '1e-3'],
    ]);
  });

  it('drops --, "# " and /* */ comments; an unterminated or nested one fails (ClickHouse releases disagree on nesting)', () => {
    expect(lexClickHouse('a -- x;\n# y; z\nb /* 1 ; --*/ c #! x').map((x) => x.text)).toEqual(['a', 'b', 'c']);
    expect(code(() => lexClickHouse('a /* /* */ b'))).toBe('STEWARD_DSL_EVAL');
    expect(code(() => lexClickHouse('a /* /* */ b */'))).toBe('STEWARD_DSL_EVAL');
    expect(code(() => lexClickHouse('a #b'))).toBe('STEWARD_DSL_EVAL');
    expect(code(() => lexClickHouse("a 'b"))).toBe('STEWARD_DSL_EVAL');
    expect(code(() => lexClickHouse('a \\ b'))).toBe('STEWARD_DSL_EVAL');
  });

  it('cuts INSERT … FORMAT data at the end of its line; Values rows are SQL', () => {
    expect(ch("INSERT INTO t FORMAT TSV a\t'b\nSELECT 1").statements).toEqual(['insert', 'select']);
    expect(code(() => ch("INSERT INTO t FORMAT TSV a\t'b;DROP TABLE x\nSELECT 1"))).toBe('STEWARD_DSL_EVAL');
    expect(ch('INSERT INTO t SELECT * FROM s FORMAT CSV ; DROP TABLE x').statements).toEqual(['insert', 'drop']);
    expect(ch("INSERT INTO t FORMAT Values ('a;b', now())").functions).toEqual(['now']);
  });
});

describe('ClickHouse statements', () => {
  it('MODIFY SETTING lists continue; a known command after them is its own', () => {
    expect(ch('ALTER TABLE t MODIFY SETTING a = 1, b = 2')).toMatchObject({ statements: ['alter'], dropped: [] });
    expect(ch('ALTER TABLE t MODIFY SETTING a = 1, DROP COLUMN c')).toMatchObject({ statements: ['alter', 'alter'], dropped: ['t'] });
  });

  it('access-entity DDL keeps its kind and names no table', () => {
    expect(ch('DROP USER IF EXISTS bob')).toMatchObject({ statements: ['drop'], dropped: [] });
    expect(ch('ALTER USER bob IDENTIFIED BY $$x$$')).toMatchObject({ statements: ['alter'], written: [] });
    expect(ch("ALTER DATABASE shop MODIFY COMMENT 'x'")).toMatchObject({ statements: ['alter'], written: ['shop'] });
    // DDL on objects not known to hold no table cannot be evaluated.
    expect(code(() => ch('CREATE INDEX i ON customers (email) TYPE bloom_filter'))).toBe('STEWARD_DSL_EVAL');
    expect(code(() => ch('DROP INDEX i ON customers'))).toBe('STEWARD_DSL_EVAL');
  });

  it('SELECT … INTO OUTFILE writes outfile()', () => {
    expect(ch("SELECT * FROM customers INTO OUTFILE '/tmp/x.csv' FORMAT CSV")).toMatchObject({ read: ['customers'], written: ['outfile()'] });
  });

  it('CREATE OR REPLACE drops the old table; a materialized view writes its TO table', () => {
    expect(ch('CREATE OR REPLACE TABLE t ENGINE = Memory AS SELECT 1')).toMatchObject({ statements: ['create'], dropped: ['t'] });
    expect(ch('CREATE MATERIALIZED VIEW IF NOT EXISTS mv ON CLUSTER c TO db.dst AS SELECT a FROM src')).toMatchObject({ written: ['db.dst', 'mv'], read: ['src'] });
    expect(ch("CREATE TABLE t AS s3('https://b/x.csv')")).toMatchObject({ read: ['s3()'], tableFunctions: ['s3'] });
  });

  it('random token soups either parse or cannot be evaluated; nothing else escapes', () => {
    const words = ['SELECT', 'ALTER', 'TABLE', 't', 'DELETE', 'WHERE', '1', ';', ',', '(', ')', 'FROM', 'INSERT', 'INTO', 'FUNCTION', 'url', "'x'", 'DROP', 'ON', 'CLUSTER', 'FINAL', 'SETTINGS', '=', 'ARRAY', 'JOIN', 'LIMIT', 'BY', 'WITH', 'AS', 'UPDATE', '/*', '*/', '--', '\n', '`a`', '"b"', 'TRUNCATE', 'PREWHERE', 'GLOBAL', 'IN'];
    let seed = 42;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    let parsed = 0;
    for (let i = 0; i < 3000; i++) {
      const q = Array.from({ length: 1 + rnd(12) }, () => words[rnd(words.length)]).join(' ');
      const c = code(() => ch(q));
      if (c === undefined) parsed++;
      else expect(c, q).toBe('STEWARD_DSL_EVAL');
    }
    expect(parsed).toBeGreaterThan(0);
  });
});

describe('no statement hides the next one', () => {
  // Every ClickHouse form the classifier reads, followed by a destructive statement: the second is
  // always seen (or the text cannot be evaluated) — no clause of the first swallows it.
  const firsts = [
    'SELECT 1',
    "SELECT * FROM t FINAL SAMPLE 1/10 PREWHERE a = 1 WHERE b == 2 GROUP BY c WITH TOTALS ORDER BY c LIMIT 1 BY c LIMIT 5 SETTINGS max_threads = 1 FORMAT JSON",
    'SELECT a FROM t ARRAY JOIN arr AS a ANY LEFT JOIN u USING id',
    'WITH 1 AS x, c AS (SELECT 1) SELECT x FROM c',
    'SELECT format FROM t',
    "SELECT * FROM url('https://x/y', CSV)",
    "SELECT * FROM t INTO OUTFILE 'x.csv' FORMAT CSV",
    'INSERT INTO t VALUES (1, now())',
    'INSERT INTO t FORMAT JSONEachRow {"a": 1}\n',
    'INSERT INTO t SELECT * FROM s FORMAT CSV',
    "INSERT INTO FUNCTION s3('x') SELECT 1",
    'ALTER TABLE t ON CLUSTER c DELETE WHERE x = 1',
    'ALTER TABLE t UPDATE a = 1, b = 2 WHERE c = 3 SETTINGS mutations_sync = 2',
    'ALTER TABLE t MODIFY SETTING a = 1, b = 2',
    "ALTER TABLE t DROP PARTITION '2024'",
    'TRUNCATE TABLE IF EXISTS t ON CLUSTER c SYNC',
    'DROP TABLE IF EXISTS t ON CLUSTER c SYNC',
    'RENAME TABLE a TO b, c TO d',
    'EXCHANGE TABLES a AND b',
    'OPTIMIZE TABLE t FINAL DEDUPLICATE',
    'SYSTEM FLUSH LOGS',
    "KILL QUERY WHERE query_id = 'q' SYNC",
    'CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY a SETTINGS index_granularity = 8192',
    'CREATE MATERIALIZED VIEW mv TO d AS SELECT a FROM s',
    'SET max_threads = 1',
    'USE db',
    "SELECT 'a;b', \"c;d\", `e;f`, $$g;h$$ -- ;x\n",
    'SELECT 1 /* ; */ # ;\n',
  ];
  for (const first of firsts) {
    it(first.slice(0, 60), () => {
      for (const [second, kind] of [
        ['DROP TABLE customers', 'drop'],
        ['ALTER TABLE customers DELETE WHERE 1', 'delete'],
        ['TRUNCATE customers', 'truncate'],
      ] as const) {
        const q = `${first}; ${second}`;
        let f;
        try {
          f = ch(q);
        } catch (e) {
          expect((e as { code?: string }).code, q).toBe('STEWARD_DSL_EVAL');
          continue;
        }
        expect(f.statements[f.statements.length - 1], q).toBe(kind);
        expect(f.written, q).toContain('customers');
      }
    });
  }
});

describe('grammar loading', () => {
  it('loads per-dialect builds on first use, never the all-dialects index', () => {
    ch('SELECT 1');
    sqlFacts('SELECT 1', 'mysql');
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('node-sql-parser'));
    expect(loaded.some((k) => /build[\\/]postgresql\.js$/.test(k))).toBe(true);
    expect(loaded.some((k) => /build[\\/]mysql\.js$/.test(k))).toBe(true);
    expect(loaded.some((k) => /node-sql-parser[\\/]index\.js$/.test(k))).toBe(false);
  });
});
