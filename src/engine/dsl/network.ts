/**
 * is_external(): decides whether a URL, host or IP leaves the organisation. Internal: private and
 * special ranges (10/8, 172.16/12, 192.168/16, 127/8, 169.254/16, 0/8, ::1, ::, fc00::/7, fe80::/10,
 * IPv4-mapped forms of those), localhost, *.localhost, *.local, *.internal, single-label hosts,
 * configured domains (suffix match) and configured CIDRs. Unparseable non-empty text is external,
 * so an exfiltration tripwire fails closed on garbage.
 */

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

/** Extracts the host from a URL, `host:port`, `host/path`, `user@host`, `[v6]:port` or a bare host/IP. */
export function extractHost(value: string): string | undefined {
  let s = value.trim();
  if (s === '') return undefined;
  const scheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.exec(s);
  if (scheme) s = s.slice(scheme[0].length);
  else if (/^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d)/.test(s) && !s.includes('::') && !/^[0-9a-fA-F:]+$/.test(s)) {
    // mailto:user@host and similar scheme-without-slashes forms.
    s = s.slice(s.indexOf(':') + 1);
  }
  const cut = s.search(/[/?#]/);
  if (cut >= 0) s = s.slice(0, cut);
  const at = s.lastIndexOf('@');
  if (at >= 0) s = s.slice(at + 1);
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    return close > 0 ? s.slice(1, close) : undefined;
  }
  // A bare IPv6 address has several colons; host:port has exactly one.
  const colons = s.split(':').length - 1;
  if (colons === 1) s = s.slice(0, s.indexOf(':'));
  return s.toLowerCase().replace(/\.$/, '') || undefined;
}

export function createNetworkMatcher(internalDomains: readonly string[], internalCidrs: readonly string[]): { matcher: NetworkMatcher; invalid: string[] } {
  const invalid: string[] = [];
  const cidrs = [...BUILTIN_INTERNAL];
  for (const c of internalCidrs) {
    const p = parseCidr(c);
    if (p) cidrs.push(p);
    else invalid.push(c);
  }
  const domains = internalDomains.map((d) => d.trim().toLowerCase().replace(/^\*?\./, '').replace(/\.$/, '')).filter((d) => d !== '');

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

  const matcher: NetworkMatcher = {
    isExternal(value: unknown): boolean {
      if (typeof value !== 'string' || value.trim() === '') return false;
      const host = extractHost(value);
      if (host === undefined) return true;
      const ip = parseIPv4(host) ?? (host.includes(':') ? parseIPv6(host) : undefined);
      if (ip) return !ipInternal(ip);
      if (host.includes(':')) return true;
      if (!/^[a-z0-9_.-]+$/.test(host) && !/^[\p{L}\p{N}_.-]+$/u.test(host)) return true;
      return !hostInternal(host);
    },
  };
  return { matcher, invalid };
}
