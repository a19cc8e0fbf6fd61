/**
 * in_allowlist / in_denylist: plain identifiers (tool names, programs, tables) match exactly; host
 * matching applies only to values that really are URLs or hosts. Where a value is ambiguous the
 * answer is the fail-safe one: not allowed for an allowlist, denied for a denylist.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCondition, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { dslCtx } from './helpers.js';

const opts: DslCompileOptions = {
  lists: {
    approved_tools: ['read_file', 'execute_trade', 'fs.read'],
    blocked_tools: ['shell', 'execute_trade'],
    endpoints: ['api.partner.com', '*.corp.example', 'localhost', '8.8.8.8', '::1', 'münchen.de'],
    blocked_domains: ['paste.bin', '*.evil.example', '10.0.0.1'],
  },
  internalDomains: [],
  internalCidrs: [],
  namedPatterns: {},
};

const ctx = dslCtx;

/** Evaluates `fn(v, list)` through the fused path (top-level field), the generic path (deep field) and inside an array. */
function check(fn: 'in_allowlist' | 'in_denylist', list: string, value: unknown): boolean {
  const fused = compileCondition(`${fn}(v, "${list}")`, opts).condition!.evaluate(ctx({ v: value }));
  const generic = compileCondition(`${fn}(a.b.v, "${list}")`, opts).condition!.evaluate(ctx({ a: { b: { v: value } } }));
  const negated = compileCondition(`NOT ${fn}(v, "${list}")`, opts).condition!.evaluate(ctx({ v: value }));
  const inArray = compileCondition(`${fn}(v, "${list}")`, opts).condition!.evaluate(ctx({ v: [value] }));
  expect(generic, `generic path for ${JSON.stringify(value)}`).toBe(fused);
  expect(negated, `NOT for ${JSON.stringify(value)}`).toBe(!fused);
  expect(inArray, `[value] for ${JSON.stringify(value)}`).toBe(fused);
  return fused as boolean;
}

describe('in_allowlist on identifiers is exact', () => {
  const allowed = ['read_file', 'execute_trade', 'fs.read'];
  const notAllowed = [
    'EXEC:read_file', 'drop:execute_trade', 'rm_rf@read_file:1', 'rm_rf@read_file', 'read_file:1', 'read_file:whatever', 'x:read_file',
    'rm_rf/../read_file', 'read_file?x', 'read_file#x', 'READ_FILE', 'read_file ', ' read_file', 'read_file.', 'fs.read/x',
    'evil@fs.read', 'x://read_file', 'EXEC://read_file/', 'ssh://fs.read', 'mailto:x@fs.read', 'fs.read\\@x', 'x\\@fs.read',
  ];
  for (const v of allowed) it(`${JSON.stringify(v)} allowed`, () => expect(check('in_allowlist', 'approved_tools', v)).toBe(true));
  for (const v of notAllowed) it(`${JSON.stringify(v)} not allowed`, () => expect(check('in_allowlist', 'approved_tools', v)).toBe(false));
});

describe('in_allowlist on URLs and hosts matches by host', () => {
  const allowed = [
    'api.partner.com', 'API.Partner.COM', 'api.partner.com.', 'api.partner.com:8443', 'https://api.partner.com/v1', 'HTTPS://API.PARTNER.COM',
    'https://user:pw@api.partner.com:443/x?y#z', 'wss://api.partner.com/socket', 'ftp://api.partner.com/', 'http://localhost:3000/', 'https://x.corp.example/',
    'http://8.8.8.8/', '8.8.8.8', 'http://134744072/', 'http://[::1]:80/', '[::1]:80', '::1', 'https://münchen.de/', 'https://xn--mnchen-3ya.de/',
  ];
  const notAllowed = [
    'https://evil.com\\@api.partner.com/x', // WHATWG: host evil.com
    'https://api.partner.com\\@evil.com/', // RFC 3986 splitters: host evil.com
    'https://api.partner.com@evil.com', 'https://evil.com/api.partner.com', 'https://evil.com/?u=api.partner.com', 'http://x.corp.example.evil.com',
    'https://corp.example/', // *.domain does not match the domain itself
    'LOCALHOST', 'localhost:3000', // single-label bare values are identifiers, not hosts
    'api.partner.com/v1', 'user@api.partner.com', 'mailto:x@api.partner.com', 'ssh://api.partner.com', 'gopher://api.partner.com/',
    'https://api.partner.com:99999/', 'http://[::1', '134744072', '127.0.0.1',
  ];
  for (const v of allowed) it(`${JSON.stringify(v)} allowed`, () => expect(check('in_allowlist', 'endpoints', v)).toBe(true));
  for (const v of notAllowed) it(`${JSON.stringify(v)} not allowed`, () => expect(check('in_allowlist', 'endpoints', v)).toBe(false));
});

describe('in_denylist errs towards denied', () => {
  const tools = ['shell', 'SHELL', 'EXEC:shell', 'drop:execute_trade', 'rm_rf@execute_trade:1', 'x@shell', 'shell:1'];
  const domains = [
    'paste.bin', 'https://paste.bin/raw/1', 'HTTPS://PASTE.BIN', 'paste.bin.', 'paste.bin/raw', 'x@paste.bin', 'mailto:x@paste.bin', 'ssh://paste.bin',
    'https://paste.bin\\@good.com/', 'https://good.com\\@paste.bin/', 'paste.bin\\@good.com', 'good.com\\@paste.bin', 'https://a.evil.example/',
    'http://10.0.0.1/', 'http://167772161/', 'http://0xa.1/', '012.0.0.1', 'https://ｐａｓｔｅ.bin/', 'https://%70aste.bin/',
  ];
  for (const v of tools) it(`tool ${JSON.stringify(v)} denied`, () => expect(check('in_denylist', 'blocked_tools', v)).toBe(true));
  for (const v of domains) it(`destination ${JSON.stringify(v)} denied`, () => expect(check('in_denylist', 'blocked_domains', v)).toBe(true));
  for (const v of ['shells', 'bash', 'xshell', 'execute_trades']) it(`tool ${JSON.stringify(v)} not denied`, () => expect(check('in_denylist', 'blocked_tools', v)).toBe(false));
  for (const v of ['good.com', 'https://good.com/paste.bin', 'https://good.com/?u=paste.bin', 'https://paste.bin.good.com/', 'evil.example', 'https://evil.example/', 'http://10.0.0.2/']) {
    it(`destination ${JSON.stringify(v)} not denied`, () => expect(check('in_denylist', 'blocked_domains', v)).toBe(false));
  }
});

describe('allowlist and denylist of the same entries', () => {
  const same: DslCompileOptions = { ...opts, lists: { l: ['read_file', 'api.partner.com', '*.corp.example', '10.0.0.1'] } };
  const allow = compileCondition('in_allowlist(v, "l")', same).condition!;
  const deny = compileCondition('in_denylist(v, "l")', same).condition!;
  const value = fc.oneof(
    fc.constantFrom('read_file', 'api.partner.com', 'x.corp.example', '10.0.0.1', 'evil.com', 'https://', 'http://', '\\', '@', ':', '/', '.', '%40', '0xa.1', '1'),
    fc.string({ maxLength: 6 }),
  );
  it('what an allowlist allows, the denylist with the same entries denies', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 6 }).map((xs) => xs.join('')), (v) => {
        if (allow.evaluate(ctx({ v })) === true) expect(deny.evaluate(ctx({ v })), v).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('denylist fast path for plain identifiers', () => {
  it('gives exactly the general host reading: one reading, the value in lower case', async () => {
    const { readHosts } = await import('../../../../src/engine/dsl/network.js');
    const { PLAIN_IDENTIFIER_RE } = await import('../../../../src/engine/dsl/builtins.js');
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,30}$/), (v) => {
        expect(PLAIN_IDENTIFIER_RE.test(v)).toBe(true);
        expect(readHosts(v)).toEqual({ hosts: [v.toLowerCase()], invalid: false });
      }),
      { numRuns: 2000 },
    );
    // Values the fast path must leave to the general parse: numbers (IPv4 forms), hosts, URLs, decorations.
    for (const v of ['0x7f000001', '134744072', 'a.b', 'x:1', 'EXEC:shell', 'x@shell', 'https://a', 'a\\b', 'é', 'a b', '_x', '-x'])
      expect(PLAIN_IDENTIFIER_RE.test(v)).toBe(false);
  });
});
