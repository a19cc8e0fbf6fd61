/**
 * is_external(): decides whether a URL, host or IP leaves the organisation. Internal: private and
 * special ranges (10/8, 172.16/12, 192.168/16, 127/8, 169.254/16, 0/8, ::1, ::, fc00::/7, fe80::/10,
 * IPv4-mapped forms of those), localhost, *.localhost, *.local, *.internal, single-label hosts,
 * configured domains (suffix match) and configured CIDRs. Unparseable non-empty text is external,
 * so an exfiltration tripwire fails closed on garbage. Hosts are read as WHATWG URL (Node, browsers)
 * and RFC 3986 splitters read them, and a value is internal only when every reading is (readHosts).
 */
import { domainToASCII } from 'node:url';

export interface NetworkMatcher {
  isExternal(value: unknown): boolean;
}

interface Cidr {
  v6: boolean;
  bytes: Uint8Array;
  prefix: number;
}

export function parseIPv4(s: string): Uint8Array | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p[0] === '0')) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

export function parseIPv6(input: string): Uint8Array | undefined {
  let s = input;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (!/^[0-9a-fA-F:.]+$/.test(s) || s.length < 2) return undefined;
  let tail4: Uint8Array | undefined;
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.')) {
    tail4 = parseIPv4(s.slice(lastColon + 1));
    if (!tail4) return undefined;
    s = s.slice(0, lastColon + 1) + '0:0';
  }
  const dbl = s.indexOf('::');
  if (dbl !== s.lastIndexOf('::')) return undefined;
  const toGroups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const gs = part.split(':');
    const out: number[] = [];
    for (const g of gs) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  let groups: number[];
  if (dbl >= 0) {
    const head = toGroups(s.slice(0, dbl));
    const tail = toGroups(s.slice(dbl + 2));
    if (!head || !tail || head.length + tail.length > 7) return undefined;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const all = toGroups(s);
    if (!all || all.length !== 8) return undefined;
    groups = all;
  }
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[i * 2] = groups[i]! >> 8;
    out[i * 2 + 1] = groups[i]! & 0xff;
  }
  if (tail4) out.set(tail4, 12);
  return out;
}

export function parseCidr(s: string): Cidr | undefined {
  const [addr, pfx, extra] = s.trim().split('/');
  if (addr === undefined || extra !== undefined) return undefined;
  const v4 = parseIPv4(addr);
  const bytes = v4 ?? parseIPv6(addr);
  if (!bytes) return undefined;
  const max = v4 ? 32 : 128;
  const prefix = pfx === undefined ? max : /^\d{1,3}$/.test(pfx) ? Number(pfx) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return undefined;
  return { v6: !v4, bytes, prefix };
}

function inCidr(ip: Uint8Array, c: Cidr): boolean {
  if ((ip.length === 16) !== c.v6) return false;
  let bits = c.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i]! & mask) !== (c.bytes[i]! & mask)) return false;
  }
  return true;
}

const BUILTIN_INTERNAL = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '127.0.0.0/8', '169.254.0.0/16', '0.0.0.0/8', '::1/128', '::/128', 'fc00::/7', 'fe80::/10'].map(
  (c) => parseCidr(c)!,
);

// WHATWG "special" schemes: `\` ends the authority, the host is percent-decoded, IDNA-mapped and its
// IPv4 forms canonicalised. Only for these does `new URL` tell us what an HTTP client connects to.
const SPECIAL_SCHEME_RE = /^(?:https?|wss?|ftp):/i;

/**
 * The host of a URL, `host:port`, `host/path`, `user@host`, `[v6]:port` or a bare host/IP, read the way
 * an RFC 3986 splitter (Python's urlsplit, Go, curl) reads it: the authority ends at the first of
 * `cut`, the host follows the last '@'. Not normalised. Undefined when there is no host at all.
 */
function splitHost(value: string, cut: RegExp): string | undefined {
  let s = value;
  const scheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.exec(s);
  if (scheme) s = s.slice(scheme[0].length);
  else if (/^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d)/.test(s) && !s.includes('::') && !/^[0-9a-fA-F:]+$/.test(s)) {
    // mailto:user@host and similar scheme-without-slashes forms.
    s = s.slice(s.indexOf(':') + 1);
  }
  const end = s.search(cut);
  if (end >= 0) s = s.slice(0, end);
  const at = s.lastIndexOf('@');
  if (at >= 0) s = s.slice(at + 1);
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    return close > 0 ? s.slice(1, close) : undefined;
  }
  // A bare IPv6 address has several colons; host:port has exactly one.
  const colons = s.split(':').length - 1;
  if (colons === 1) s = s.slice(0, s.indexOf(':'));
  return s === '' ? undefined : s;
}

const CUT_RFC = /[/?#]/;
const CUT_BACKSLASH = /[/\\?#]/;

/** One WHATWG IPv4 part: decimal, `0x` hex or leading-0 octal (RFC 6943 "loose" form, inet_aton). */
function ipv4Part(p: string, decimalOnly: boolean): number | undefined {
  if (p === '') return undefined;
  let radix = 10;
  let digits = p;
  if (!decimalOnly && /^0[xX]/.test(p)) {
    radix = 16;
    digits = p.slice(2);
  } else if (!decimalOnly && p.length > 1 && p[0] === '0') {
    radix = 8;
    digits = p.slice(1);
  }
  if (digits === '') return 0;
  if (!(radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/).test(digits)) return undefined;
  return parseInt(digits, radix);
}

/** WHATWG IPv4 parser (1 to 4 parts, the last one fills the remaining bytes) → the 32-bit address. */
function ipv4Number(parts: string[], decimalOnly: boolean): number | undefined {
  if (parts.length > 4) return undefined;
  let n = 0;
  for (let i = 0; i < parts.length; i++) {
    const v = ipv4Part(parts[i]!, decimalOnly);
    if (v === undefined) return undefined;
    const last = i === parts.length - 1;
    if (last ? v >= 256 ** (5 - parts.length) : v > 255) return undefined;
    n += last ? v : v * 256 ** (3 - i);
  }
  return n;
}

const dotted = (n: number): string => `${Math.floor(n / 16777216)}.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;

/**
 * A host (lower case, trailing dots removed) that ends in a number is an IPv4 address for WHATWG URL
 * and inet_aton: `134744072`, `0x08080808`, `127.1` and `010.0.0.1` (octal) are addresses, not
 * names. Returns the dotted forms (two when leading zeros make octal and decimal readers disagree:
 * `012.0.0.1` is 10.0.0.1 for inet_aton, 12.0.0.1 for decimal parsers), [] when the host is not
 * IPv4-shaped, undefined when it ends in a number but is no valid address (WHATWG rejects the URL).
 */
function ipv4Forms(host: string): string[] | undefined {
  const parts = host.split('.');
  const last = parts[parts.length - 1]!;
  if (!/^[0-9]+$/.test(last) && ipv4Part(last, false) === undefined) return [];
  const n = ipv4Number(parts, false);
  if (n === undefined) return undefined;
  const out = [dotted(n)];
  if (parts.some((p) => /^0[0-9]+$/.test(p))) {
    const d = ipv4Number(parts, true);
    if (d !== undefined && d !== n) out.push(dotted(d));
  }
  return out;
}

function formatIPv6(b: Uint8Array): string {
  const g: string[] = [];
  for (let i = 0; i < 16; i += 2) g.push(((b[i]! << 8) | b[i + 1]!).toString(16));
  return g.join(':');
}

/**
 * Normalised forms of one raw host, added to `out`: lower case, no trailing dots, IPv4 in dotted
 * decimal, IPv6 as 8 uncompressed groups, non-ASCII names also in their UTS #46 ASCII form (what IDNA
 * clients resolve) besides the raw form. Returns false when the host is no usable address or name.
 */
function addNormalised(raw: string, out: Set<string>): boolean {
  const h = raw.toLowerCase().replace(/\.+$/, '');
  if (h === '') return false;
  if (h.includes(':')) {
    const v6 = parseIPv6(h);
    if (!v6) return false;
    out.add(formatIPv6(v6));
    return true;
  }
  const forms = ipv4Forms(h);
  if (forms === undefined) return false;
  if (forms.length > 0) {
    for (const f of forms) out.add(f);
    return true;
  }
  out.add(h);
  // Only plain names: domainToASCII parses URL syntax itself (`a.com\x` would come back as `a.com`).
  if (/[\u0080-\uffff]/.test(h) && /^[^\\/?#@:%\s]+$/.test(h)) {
    const ascii = domainToASCII(h);
    if (ascii === '') return true;
    const v4 = ipv4Forms(ascii.replace(/\.+$/, ''));
    if (v4 === undefined) return true;
    for (const f of v4.length > 0 ? v4 : [ascii.replace(/\.+$/, '')]) out.add(f);
  }
  return true;
}

export interface HostReadings {
  /** Every host some client could take from the value, normalised (see addNormalised). */
  hosts: string[];
  /** Some reading found no usable host (WHATWG rejects the URL, nothing after the scheme, ...). */
  invalid: boolean;
}

/**
 * Reads the host of a URL or host value the way the clients that may receive it do, since parsers
 * disagree exactly where attackers aim (`http://evil.com\@10.0.0.1/`: WHATWG connects to evil.com,
 * RFC 3986 splitters to 10.0.0.1). Readings: the RFC 3986 split; for http(s)/ws(s)/ftp the WHATWG
 * host (`new URL`, pure computation); for other values containing a backslash, the split at `\` too.
 * Callers decide with every reading: external if any is, allowed only if all are, denied if any is.
 * Undefined for blank text.
 */
export function readHosts(value: string): HostReadings | undefined {
  const s = value.trim();
  if (s === '') return undefined;
  const hosts = new Set<string>();
  let invalid = false;
  const add = (raw: string | undefined): void => {
    if (raw === undefined || !addNormalised(raw, hosts)) invalid = true;
  };
  add(splitHost(s, CUT_RFC));
  if (SPECIAL_SCHEME_RE.test(s)) {
    let host: string | undefined;
    try {
      host = new URL(s).hostname;
    } catch {
      host = undefined;
    }
    add(host === undefined || host === '' ? undefined : host.startsWith('[') ? host.slice(1, -1) : host);
  } else if (s.includes('\\')) {
    add(splitHost(s, CUT_BACKSLASH));
  }
  return { hosts: [...hosts], invalid };
}

/** Normalised host forms of a configured entry (list entry, internal domain); [] for non-hosts. */
export function normaliseHostEntry(entry: string): string[] {
  const out = new Set<string>();
  const e = entry.trim();
  const bare = e.startsWith('[') && e.endsWith(']') ? e.slice(1, -1) : e;
  if (/^[\p{L}\p{N}_.-]+$/u.test(bare) || parseIPv6(bare)) addNormalised(bare, out);
  return [...out];
}

export function createNetworkMatcher(internalDomains: readonly string[], internalCidrs: readonly string[]): { matcher: NetworkMatcher; invalid: string[] } {
  const invalid: string[] = [];
  const cidrs = [...BUILTIN_INTERNAL];
  for (const c of internalCidrs) {
    const p = parseCidr(c);
    if (p) cidrs.push(p);
    else invalid.push(c);
  }
  // Raw and ASCII forms, so a Unicode domain in the config matches either spelling of a host.
  const domains = internalDomains.flatMap((d) => normaliseHostEntry(d.trim().replace(/^\*?\./, '')));

  const ipInternal = (ip: Uint8Array): boolean => {
    if (ip.length === 16) {
      // IPv4-mapped (::ffff:a.b.c.d) is judged as the IPv4 address.
      let mapped = ip[10] === 0xff && ip[11] === 0xff;
      for (let i = 0; i < 10 && mapped; i++) mapped = ip[i] === 0;
      if (mapped && ipInternal(ip.slice(12))) return true;
    }
    for (const c of cidrs) if (inCidr(ip, c)) return true;
    return false;
  };

  const hostInternal = (host: string): boolean => {
    if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) return true;
    if (!host.includes('.')) return /^[a-z0-9-_]+$/.test(host);
    for (const d of domains) if (host === d || host.endsWith('.' + d)) return true;
    return false;
  };

  /** One normalised host (see readHosts): IPs by range, names by suffix; anything else is external. */
  const hostExternal = (host: string): boolean => {
    const ip = parseIPv4(host) ?? (host.includes(':') ? parseIPv6(host) : undefined);
    if (ip) return !ipInternal(ip);
    if (host.includes(':')) return true;
    if (!/^[a-z0-9_.-]+$/.test(host) && !/^[\p{L}\p{N}_.-]+$/u.test(host)) return true;
    return !hostInternal(host);
  };

  const matcher: NetworkMatcher = {
    isExternal(value: unknown): boolean {
      if (typeof value !== 'string') return false;
      const r = readHosts(value);
      if (r === undefined) return false;
      // Internal only when every reading is: where parsers disagree, the destination is not known to stay inside.
      if (r.invalid || r.hosts.length === 0) return true;
      for (const h of r.hosts) if (hostExternal(h)) return true;
      return false;
    },
  };
  return { matcher, invalid };
}
