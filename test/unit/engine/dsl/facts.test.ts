/** Protocol-aware facts (issue #28): fail closed, limits, the if_unparsed opt-out, the parse cache. */
import { describe, expect, it } from 'vitest';
import { compileCondition, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { FACT_LIMITS, shellFacts, sqlFacts, urlFacts } from '../../../../src/engine/dsl/facts.js';
import { dslCtx } from './helpers.js';

const opts: DslCompileOptions = { lists: { ok: ['scratch'] }, internalDomains: [], internalCidrs: [], namedPatterns: {} };

function run(condition: string, trace: Record<string, unknown>): unknown {
  const { condition: c, problems } = compileCondition(condition, opts);
  expect(problems).toEqual([]);
  try {
    return c!.evaluate(dslCtx(trace));
  } catch (e) {
    return { code: (e as { code?: string }).code, message: (e as Error).message };
  }
}

describe('fact functions fail closed', () => {
  it('unparseable SQL, shell and URL text throw STEWARD_DSL_EVAL', () => {
    expect(run('NOT (sql_statements(q) contains "drop")', { q: 'DROP TABLE' })).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
    expect(run('NOT shell_uses(c, "rm")', { c: 'echo "x' })).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
    expect(run('url_host(u) == "x.com"', { u: '//x.com' })).toMatchObject({ code: 'STEWARD_DSL_EVAL', message: expect.stringContaining('cannot evaluate') });
  });

  it('a missing or non-string value cannot be evaluated', () => {
    expect(run('sql_unbounded_write(q)', {})).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
    expect(run('shell_inline_code(c)', { c: ['rm', '-rf'] })).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
  });

  it('text over the size limit cannot be evaluated, even under if_unparsed', () => {
    const big = 'SELECT 1' + ' '.repeat(FACT_LIMITS.sqlChars);
    expect(run('sql_unbounded_write(q)', { q: big })).toMatchObject({ code: 'STEWARD_DSL_EVAL', message: expect.stringContaining('exceed the limit') });
    expect(run('if_unparsed(sql_unbounded_write(q), false)', { q: big })).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
    expect(run('shell_inline_code(c)', { c: 'ls '.repeat(FACT_LIMITS.shellChars) })).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
    expect(run('url_is_ip(u)', { u: 'https://x.com/' + 'a'.repeat(FACT_LIMITS.urlChars) })).toMatchObject({ code: 'STEWARD_DSL_EVAL' });
  });

  it('nesting beyond the limit cannot be evaluated', () => {
    const deep = 'SELECT ' + '('.repeat(FACT_LIMITS.nesting + 1) + '1' + ')'.repeat(FACT_LIMITS.nesting + 1);
    expect(run('sql_unbounded_write(q)', { q: deep })).toMatchObject({ code: 'STEWARD_DSL_EVAL', message: expect.stringContaining('nest') });
    const shallow = 'SELECT ' + '('.repeat(10) + '1' + ')'.repeat(10);
    expect(run('sql_unbounded_write(q)', { q: shallow })).toBe(false);
    // bash -c inside bash -c … beyond the recursion depth.
    let cmd = 'rm x';
    for (let i = 0; i <= FACT_LIMITS.shellDepth; i++) cmd = `bash -c '${cmd.replace(/'/g, "'\\''")}'`;
    expect(run('shell_uses(c, "rm")', { c: cmd })).toMatchObject({ code: 'STEWARD_DSL_EVAL', message: expect.stringContaining('nests deeper') });
  });

  it('if_unparsed recovers parse errors only, with its literal default', () => {
    expect(run('if_unparsed(sql_unbounded_write(q), true)', { q: 'garbage text' })).toBe(true);
    expect(run('if_unparsed(sql_unbounded_write(q), true)', { q: 'SELECT 1' })).toBe(false);
    expect(run('if_unparsed(shell_commands(c), ["?"]) contains "?"', { c: "echo 'x" })).toBe(true);
    expect(run('if_unparsed(url_port(u), 0) == 0', { u: 'nope' })).toBe(true);
  });

  it('if_unparsed and dialect arguments are checked at load with positions', () => {
    const bad = compileCondition('sql_statements(q, dialect_field) contains "x"', opts);
    expect(bad.problems[0]).toMatchObject({ code: 'STEWARD_DSL_TYPE' });
    const cmp = compileCondition('sql_tables_written(q) == "users"', opts);
    expect(cmp.problems).toEqual([expect.objectContaining({ code: 'STEWARD_DSL_TYPE', offset: 22 })]);
    expect(compileCondition('url_host(u) != ["a"]', opts).problems[0]).toMatchObject({ code: 'STEWARD_DSL_TYPE', offset: 12 });
    expect(compileCondition('sql_tables_written(q) == ["users"]', opts).problems).toEqual([]);
  });
});

describe('parse cache', () => {
  it('returns the same facts object for the same text', () => {
    expect(sqlFacts('DELETE FROM t')).toBe(sqlFacts('DELETE FROM t'));
    expect(sqlFacts('DELETE FROM t', 'mysql')).not.toBe(sqlFacts('DELETE FROM t'));
    expect(shellFacts('ls | wc')).toBe(shellFacts('ls | wc'));
    expect(urlFacts('https://a.com')).toBe(urlFacts('https://a.com'));
  });

  it('stays bounded', () => {
    const first = sqlFacts('SELECT 0');
    for (let i = 1; i <= FACT_LIMITS.cacheEntries; i++) sqlFacts(`SELECT ${i}`);
    expect(sqlFacts('SELECT 0')).not.toBe(first);
    expect(sqlFacts('SELECT 0')).toEqual(first);
  });
});
