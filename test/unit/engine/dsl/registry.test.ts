import { describe, expect, it } from 'vitest';
import { StewardError } from '../../../../src/errors.js';
import { compileCondition, dslOptionsFromConfig, FunctionRegistry, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { dslCtx } from './helpers.js';

const ctx = dslCtx;

describe('custom function registry', () => {
  const registry = new FunctionRegistry()
    .register({ name: 'word_count', params: [{ name: 'text', type: 'any' }], returns: 'number', impl: ([t]) => (typeof t === 'string' ? t.split(/\s+/).filter(Boolean).length : undefined) })
    .register({ name: 'geo.in_region', params: [{ name: 'ip', type: 'any' }, { name: 'region', type: 'string', literal: true }], returns: 'boolean', impl: ([ip, r]) => r === 'eu' && ip === '1.2.3.4' })
    .register({ name: 'remote_ok', params: [{ name: 'x', type: 'any', optional: true }], returns: 'boolean', async: true, impl: () => Promise.resolve(true) });
  const opts: DslCompileOptions = { ...dslOptionsFromConfig(defaultEngineConfig()), functions: registry };

  it('calls registered functions, including dotted names and values used in comparisons', async () => {
    const wc = compileCondition('word_count(content) <= 3', opts).condition!;
    expect(wc.evaluate(ctx({ content: 'one two three' }))).toBe(true);
    expect(wc.evaluate(ctx({ content: 'one two three four' }))).toBe(false);
    expect(wc.evaluate(ctx({}))).toBe(false);
    expect(compileCondition('geo.in_region(destination, "eu")', opts).condition!.evaluate(ctx({ destination: '1.2.3.4' }))).toBe(true);
    const remote = compileCondition({ all: ['tool == "x"', 'remote_ok()'] }, opts).condition!;
    expect(remote.async).toBe(true);
    expect(remote.functions.has('remote_ok')).toBe(true);
    expect(await remote.evaluate(ctx({ tool: 'x' }))).toBe(true);
    // Short-circuit: the async function is not reached, the result is synchronous.
    expect(remote.evaluate(ctx({ tool: 'y' }))).toBe(false);
  });

  it('checks arity and literal argument types at load', () => {
    const codes = (c: string) => compileCondition(c, opts).problems.map((p) => [p.code, p.offset]);
    expect(codes('word_count()')).toEqual([['STEWARD_DSL_ARITY', 0]]);
    expect(codes('geo.in_region(destination, region_field)')).toEqual([['STEWARD_DSL_TYPE', 27]]);
    expect(codes('geo.in_region(destination, 5)')).toEqual([['STEWARD_DSL_TYPE', 27]]);
    expect(codes('word_count(content)')).toEqual([['STEWARD_DSL_TYPE', 0]]);
    expect(codes('remote_ok(1, 2)')).toEqual([['STEWARD_DSL_ARITY', 0]]);
  });

  it('collects every problem of a condition', () => {
    const { problems } = compileCondition({ all: ['nope(1)', 'in_allowlist(tool, "missing")', 'content matches "("', 'x >'] }, opts);
    expect(problems.map((p) => [p.code, p.path])).toEqual([
      ['STEWARD_DSL_PARSE', 'all[3]'],
    ]);
    const compileOnly = compileCondition({ all: ['nope(1)', 'in_allowlist(tool, "missing")', 'content matches "("'] }, opts);
    expect(compileOnly.problems.map((p) => [p.code, p.path, p.offset])).toEqual([
      ['STEWARD_DSL_UNKNOWN_FUNCTION', 'all[0]', 0],
      ['STEWARD_DSL_UNKNOWN_LIST', 'all[1]', 19],
      ['STEWARD_DSL_REGEX', 'all[2]', 16],
    ]);
  });

  it('refuses to replace standard functions or register twice', () => {
    const r = new FunctionRegistry();
    expect(() => r.register({ name: 'is_external', params: [], returns: 'boolean', impl: () => true })).toThrow(StewardError);
    r.register({ name: 'f', params: [], returns: 'boolean', impl: () => true });
    expect(() => r.register({ name: 'f', params: [], returns: 'boolean', impl: () => true })).toThrow(/already/);
    expect(() => r.register({ name: 'bad name', params: [], returns: 'boolean', impl: () => true })).toThrow(/invalid/);
  });

  it('turns a throwing function into a StewardError (the stage then fails closed)', () => {
    const r = new FunctionRegistry().register({ name: 'explode', params: [], returns: 'boolean', impl: () => { throw new Error('x'); } });
    const c = compileCondition('explode()', { ...opts, functions: r }).condition!;
    expect(() => c.evaluate(ctx({}))).toThrow(expect.objectContaining({ code: 'STEWARD_DSL_EVAL' }));
  });
});

describe('dslOptionsFromConfig', () => {
  it('layers blueprint lists over config lists and carries patterns and internal networks', () => {
    const cfg = defaultEngineConfig({ lists: { a: ['1'], b: ['2'] }, internalDomains: ['corp.x'], internalCidrs: ['100.64.0.0/10'], namedPatterns: { X_PATTERN: 'x+' } });
    const o = dslOptionsFromConfig(cfg, { b: ['3'] });
    expect(o.lists).toEqual({ a: ['1'], b: ['3'] });
    const c = compileCondition({ all: ['in_allowlist(v, "b")', 'matches_regex(w, "X_PATTERN")', 'NOT is_external(d)'] }, o).condition!;
    expect(c.evaluate(ctx({ v: '3', w: 'axx', d: 'https://wiki.corp.x/' }))).toBe(true);
    expect(c.evaluate(ctx({ v: '2', w: 'axx', d: 'https://wiki.corp.x/' }))).toBe(false);
  });

  it('reports an invalid configured CIDR when is_external is used', () => {
    const o = dslOptionsFromConfig(defaultEngineConfig({ internalCidrs: ['10.0.0.0/33'] }));
    expect(compileCondition('is_external(destination)', o).problems.map((p) => p.code)).toEqual(['STEWARD_CONFIG']);
  });
});
