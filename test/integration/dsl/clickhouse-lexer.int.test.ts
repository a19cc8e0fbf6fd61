/**
 * The ClickHouse SQL facts' lexer against the real ClickHouse server (issue #28, spec-decisions D34):
 * strings and quoted identifiers decode to what the server reads, and where ClickHouse releases read a
 * text differently (nested block comments) the server shows the reading that makes the facts fail closed.
 * Read-only SELECTs over HTTP: nothing to clean up.
 */
import { describe, expect, it } from 'vitest';
import { lexClickHouse } from '../../../src/engine/dsl/clickhouse-lexer.js';
import { sqlFacts } from '../../../src/engine/dsl/facts.js';
import { services } from '../setup/helpers.js';

async function query(sql: string): Promise<string> {
  const res = await fetch(services().clickhouseUrl, { method: 'POST', body: sql });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse ${res.status}: ${text.slice(0, 200)}`);
  return text;
}

describe('ClickHouse lexer agrees with the server', () => {
  it('decodes string literals as ClickHouse does (backslash escapes, doubled quotes, \\x)', async () => {
    const literals = ["'a\\'b;c'", "'x''y'", "'\\x41\\n\\\\'", "'tab\\there'", "'--not a comment'", "'/* nor this */'"];
    const sql = `SELECT ${literals.join(', ')}`;
    const server = JSON.parse(await query(`${sql} FORMAT JSONCompact`)) as { data: string[][] };
    const ours = lexClickHouse(sql)
      .filter((t) => t.kind === 'string')
      .map((t) => t.text);
    expect(ours).toEqual(server.data[0]);
  });

  it('decodes quoted identifiers as ClickHouse does (both quote styles, escaped and doubled quotes)', async () => {
    const sql = 'SELECT 1 AS "a""b", 2 AS `c\\`d`, 3 AS `e``f`, 4 AS "semi;colon"';
    const server = JSON.parse(await query(`${sql} FORMAT JSONCompact`)) as { meta: { name: string }[] };
    const ours = lexClickHouse(sql)
      .filter((t) => t.kind === 'qident')
      .map((t) => t.text);
    expect(ours).toEqual(server.meta.map((m) => m.name));
    expect(sqlFacts(sql, 'clickhouse').statements).toEqual(['select']);
  });

  it('a comment inside a block comment: this server ends the comment at the first */ — the facts cannot be evaluated', async () => {
    // Nesting releases read one column here; this one reads two (the `-- */` line comment eats the rest).
    const sql = 'SELECT 1 /* /* */ , 2 /* */ -- */';
    expect((await query(sql)).trim().split('\t')).toEqual(['1', '2']);
    expect(() => sqlFacts(sql, 'clickhouse')).toThrow(expect.objectContaining({ code: 'STEWARD_DSL_EVAL' }));
    expect(() => sqlFacts('SELECT 1 /* /* */ ; DROP TABLE customers; /* */ -- */', 'clickhouse')).toThrow(expect.objectContaining({ code: 'STEWARD_DSL_EVAL' }));
  });

  it('forms newer releases accept and this one rejects (# comments, heredocs, U+00A0) hide nothing that runs here', async () => {
    for (const sql of ['SELECT 1 # x', 'SELECT $$x$$', 'SELECT\u00a01']) {
      await expect(query(sql), sql).rejects.toThrow(/Syntax error/);
      expect(sqlFacts(sql, 'clickhouse').statements, sql).toEqual(['select']);
    }
  });
});
