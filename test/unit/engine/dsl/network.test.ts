/**
 * is_external(): host extraction must agree with the WHATWG URL parser (what Node, browsers and most
 * HTTP clients connect to) for http(s)/ws(s)/ftp URLs, IPv4 must be read the way WHATWG/inet_aton read
 * it, and where parsers disagree on the host the answer is the cautious one (external).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCondition, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { createNetworkMatcher, readHosts } from '../../../../src/engine/dsl/network.js';
import { dslCtx } from './helpers.js';

const opts: DslCompileOptions = { lists: {}, internalDomains: ['corp.example'], internalCidrs: [], namedPatterns: {} };
const { matcher } = createNetworkMatcher(opts.internalDomains, opts.internalCidrs);

const ctx = dslCtx;

// [value, is_external]
const CASES: [string, boolean][] = [
  // Backslash: WHATWG reads `\` as `/` in special schemes, so the host is before it.
  ['http://evil.com\\@10.0.0.1/', true],
  ['http://evil.com\\@localhost', true],
  ['https://evil.com\\@api.partner.com/x', true],
  ['http://evil.com:80\\@10.0.0.1', true],
  ['ws://evil.com\\@10.0.0.1/', true],
  ['wss://evil.com\\@10.0.0.1/', true],
  ['ftp://evil.com\\@10.0.0.1/', true],
  ['http:\\\\evil.com\\x', true],
  ['http:evil.com', true],
  // ... and parsers that do not (RFC 3986 splitters, Python's urlsplit) see the part after '@': both count.
  ['https://10.0.0.1\\@evil.com/', true],
  // No scheme: a client may read `\` either way.
  ['evil.com\\@10.0.0.1', true],
  ['evil.com/..\\@10.0.0.1', true],
  // Userinfo: the host is after the last '@' for everyone.
  ['http://internal@evil.com', true],
  ['http://user@evil.com@10.0.0.1/', false],
  ['http://evil.com%40@10.0.0.1', false],
  ['http://evil.com%2F@10.0.0.1', false],
  ['http://evil.com#@10.0.0.1', true],
  ['http://evil.com?@10.0.0.1', true],
  // Tabs and newlines are removed inside URLs (WHATWG).
  ['http://evil.com\t@10.0.0.1', false],
  // Percent-encoded hosts are decoded.
  ['http://%65vil.com/', true],
  ['http://ev%69l.com\\@10.0.0.1', true],
  // IPv4 as one number, hex or octal parts, fewer than four parts.
  ['http://134744072/', true],
  ['http://0x08080808/', true],
  ['http://0x8.0x8.0x8.0x8/', true],
  ['http://2130706433/', false],
  ['http://0x7f.1/', false],
  ['http://127.1/', false],
  ['http://0/', false],
  ['http://010.0.0.1/', true], // octal: 8.0.0.1
  ['http://012.0.0.1/', true], // octal 10.0.0.1, but parsers that read decimal see 12.0.0.1: external wins
  ['http://99999999999/', true], // not a valid IPv4 number and not a hostname: unparseable
  ['134744072', true],
  ['0x08080808', true],
  ['2130706433', false],
  ['127.1', false],
  ['010.0.0.1', true],
  ['134744072:443', true],
  // Trailing dots and case.
  ['http://8.8.8.8.', true],
  ['http://10.0.0.1./', false],
  ['http://localhost./', false],
  ['http://evil.com./', true],
  ['http://evil.com../', true],
  ['http://wiki.corp.example./', false],
  ['db.internal.', false],
  ['HTTP://EVIL.COM', true],
  ['HTTP://LOCALHOST:8080/', false],
  ['HTTPS://WIKI.CORP.EXAMPLE/x', false],
  // A reading whose host is no internal name counts, even a strange one: a resolver may still query it.
  ['http://10.0.0.1\\foo', true],
  ['http://%31%30.0.0.1/', true],
  // IDN mapping (full-width, ideographic dots): both the raw and the ASCII (UTS #46) form are classified.
  ['http://ｌｏｃａｌｈｏｓｔ/', true],
  ['http://10。0。0。1/', true],
  ['http://ｅｖｉｌ.com/', true],
  ['http://evil.com:99999/', true],
  ['http://10.0.0.1:99999/', true], // no WHATWG host at all: not provably internal
  // IPv6
  ['http://[::ffff:8.8.8.8]:80/', true],
  ['http://[::ffff:10.0.0.1]/', false],
  ['http://[::ffff:0a00:0001]/', false],
  ['http://[::1]:8080/', false],
  ['[::1]:80', false],
  ['fe80::1%eth0', false],
  ['::ffff:8.8.8.8', true],
  // Unchanged behaviour
  ['evil.com:443', true],
  ['reports-db', false],
  ['http://evil', false],
  ['mailto:x@evil.com', true],
  ['mailto:x@localhost', false],
  ['http://10.0.0.1.evil.com/', true],
  ['http://corp.example.evil.com/', true],
  ['http://evil.corp.example/', false],
  ['%%%garbage%%%', true],
  ['', false],
];

describe('is_external host extraction', () => {
  const cond = compileCondition('is_external(destination)', opts).condition!;
  const nested = compileCondition('is_external(a.b.destination)', opts).condition!;
  for (const [value, want] of CASES) {
    it(`${JSON.stringify(value)} → ${want}`, () => {
      expect(matcher.isExternal(value)).toBe(want);
      expect(cond.evaluate(ctx({ destination: value }))).toBe(want);
      expect(nested.evaluate(ctx({ a: { b: { destination: value } } }))).toBe(want);
    });
  }

  it('reads the WHATWG host of special-scheme URLs (and the naive reading besides)', () => {
    expect(readHosts('http://evil.com\\@10.0.0.1/')!.hosts.sort()).toEqual(['10.0.0.1', 'evil.com']);
    expect(readHosts('HTTP://Evil.COM./x')!.hosts).toEqual(['evil.com']);
    expect(readHosts('http://0x7f.1/')!.hosts).toEqual(['127.0.0.1']);
    expect(readHosts('http://[::1]:80/')!.hosts).toEqual(['0:0:0:0:0:0:0:1']);
    expect(readHosts('http://münchen.de/')!.hosts.sort()).toEqual(['münchen.de', 'xn--mnchen-3ya.de']);
    expect(readHosts('010.0.0.1')!.hosts.sort()).toEqual(['10.0.0.1', '8.0.0.1']);
    expect(readHosts('read_file')!.hosts).toEqual(['read_file']);
    expect(readHosts('http://99999999999/')!.invalid).toBe(true);
    expect(readHosts('http://evil.com/')!.invalid).toBe(false);
    expect(readHosts('  ')).toBeUndefined();
  });
});

// Hosts an attacker would combine: internal targets and external ones, in several spellings.
const hostArb = fc.constantFrom(
  'evil.com', 'EVIL.com', 'evil.com.', '8.8.8.8', '134744072', '0x08080808', '10.0.0.1', '127.1', '0x7f.1', 'localhost', 'db.internal',
  'wiki.corp.example', 'api.partner.com', '[::1]', '[::ffff:8.8.8.8]', '%65vil.com', 'ｅｖｉｌ.com', '010.0.0.1', 'reports-db',
);
const sepArb = fc.constantFrom('\\', '/', '\\@', '@', '%40@', '#@', '?@', ':80\\@', ':80@', '\t@', '\\\\', '/..\\@', '%2F@', ':', '');
const urlArb = fc
  .tuple(fc.constantFrom('http://', 'https://', 'ws://', 'wss://', 'ftp://', 'HTTP://', 'http:', 'http:\\\\', 'http:/', ''), fc.option(fc.constantFrom('user@', 'u:p@', 'a@b@'), { nil: '' }), hostArb, sepArb, hostArb, fc.constantFrom('', '/', '/x?y#z', ':8080/p'))
  .map(([scheme, userinfo, h1, sep, h2, tail]) => `${scheme}${userinfo}${h1}${sep}${h2}${tail}`);

function whatwgHost(value: string): string | undefined {
  if (!/^(?:https?|wss?|ftp):/i.test(value.trim())) return undefined;
  try {
    return new URL(value).hostname;
  } catch {
    return undefined;
  }
}

describe('is_external agrees with WHATWG URL', () => {
  it('is external whenever the host Node would connect to is external', () => {
    fc.assert(
      fc.property(urlArb, (url) => {
        const host = whatwgHost(url);
        const got = matcher.isExternal(url);
        expect(typeof got).toBe('boolean');
        if (host !== undefined && host !== '' && matcher.isExternal(host.replace(/^\[(.*)\]$/, '$1'))) expect(got, `${url} (WHATWG host ${host})`).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it('never calls a URL internal when WHATWG cannot parse it', () => {
    for (const v of ['http://[fe80::1', 'http://exa mple.com/', 'https://', 'http://foo.123/', 'http://[fe80::1%25eth0]/', 'http://localhost:99999/']) expect(matcher.isExternal(v), v).toBe(true);
  });
});
