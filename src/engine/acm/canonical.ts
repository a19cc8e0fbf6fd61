/**
 * Content addresses (ACM §9 "content-addressable"): sha256 over the RFC 8785 (JCS) canonical JSON, so
 * any implementation in any language computes the same address for the same packet.
 */
import { createHash } from 'node:crypto';
import { StewardError } from '../../errors.js';

/**
 * RFC 8785 canonical JSON: the output of the `canonicalize` package (the RFC's reference, used for
 * ledger hashes) byte for byte, written with one parts array instead of nested template strings (the
 * replay verifier digests every policy request and response; a unit test compares both).
 */
export function canonicalJson(v: unknown): string {
  const out: string[] = [];
  write(v, out);
  return out.join('');
}

function write(v: unknown, out: string[]): void {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new StewardError('STEWARD_INTERNAL', `${String(v)} is not allowed in canonical JSON`);
    out.push(JSON.stringify(v));
    return;
  }
  if (v === null || typeof v !== 'object') {
    out.push(JSON.stringify(v) as string);
    return;
  }
  const o = v as { toJSON?: unknown };
  if (o.toJSON instanceof Function) {
    write((o.toJSON as () => unknown)(), out);
    return;
  }
  if (Array.isArray(v)) {
    out.push('[');
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out.push(',');
      const x = v[i];
      write(x === undefined || typeof x === 'symbol' ? null : x, out);
    }
    out.push(']');
    return;
  }
  const rec = v as Record<string, unknown>;
  const keys = Object.keys(rec).sort();
  out.push('{');
  let first = true;
  for (const k of keys) {
    const x = rec[k];
    if (x === undefined || typeof x === 'symbol') continue;
    if (!first) out.push(',');
    first = false;
    out.push(JSON.stringify(k), ':');
    write(x, out);
  }
  out.push('}');
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `sha256:<hex>` of the canonical JSON of `v`. */
export function contentAddress(v: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(v))}`;
}
