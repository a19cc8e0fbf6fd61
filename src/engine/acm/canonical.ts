/**
 * Content addresses (ACM §9 "content-addressable"): sha256 over the RFC 8785 (JCS) canonical JSON, so
 * any implementation in any language computes the same address for the same packet.
 */
import { createHash } from 'node:crypto';
import { StewardError } from '../../errors.js';
import { canonicalize } from '../ledger/crypto.js';

export function canonicalJson(v: unknown): string {
  const text = canonicalize(v);
  if (text === undefined) throw new StewardError('STEWARD_INTERNAL', 'value is not serialisable as canonical JSON');
  return text;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `sha256:<hex>` of the canonical JSON of `v`. */
export function contentAddress(v: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(v))}`;
}
