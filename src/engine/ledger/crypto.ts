/**
 * Hashing and signing of ledger entries. Hash input is RFC 8785 (JCS) canonical JSON, so any implementation
 * in any language reproduces it byte for byte; the signature covers the hash (which covers everything else).
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { StewardError } from '../../errors.js';
import type { LedgerEntry } from './types.js';

// The package is CommonJS (`module.exports = fn`) typed as an ES default export; accept both shapes.
export const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (v: unknown) => string | undefined;

export type HashedFields = Omit<LedgerEntry, 'hash' | 'signature'>;

export function canonicalEntryJson(e: HashedFields | LedgerEntry): string {
  const { hash: _h, signature: _s, ...rest } = e as LedgerEntry;
  const text = canonicalize(rest);
  if (text === undefined) throw new StewardError('STEWARD_LEDGER_CHAIN', `ledger entry ${rest.entry_id} is not serialisable`);
  return text;
}

export function entryHash(e: HashedFields | LedgerEntry): string {
  return createHash('sha256').update(canonicalEntryJson(e), 'utf8').digest('hex');
}

/** Signs entry hashes. Built from an Ed25519 private key; `kid` defaults to a fingerprint of the public key. */
export interface LedgerSigner {
  readonly kid: string;
  sign(hashHex: string): string;
}

export function keyId(publicKey: KeyObject): string {
  const der = publicKey.export({ format: 'der', type: 'spki' });
  // Same key id as verdict signatures (src/engine/verdict), so one key pair serves both.
  return createHash('sha256').update(der).digest('hex').slice(0, 16);
}

function asPrivateKey(k: KeyObject | string): KeyObject {
  const key = typeof k === 'string' ? createPrivateKey(k) : k;
  if (key.asymmetricKeyType !== 'ed25519') throw new StewardError('STEWARD_CONFIG', 'ledger signing key must be Ed25519');
  return key;
}

export function asPublicKey(k: KeyObject | string): KeyObject {
  const key = typeof k === 'string' ? createPublicKey(k) : k.type === 'private' ? createPublicKey(k) : k;
  if (key.asymmetricKeyType !== 'ed25519') throw new StewardError('STEWARD_CONFIG', 'ledger verification key must be Ed25519');
  return key;
}

export function ed25519Signer(privateKey: KeyObject | string, kid?: string): LedgerSigner {
  const key = asPrivateKey(privateKey);
  const id = kid ?? keyId(createPublicKey(key));
  return {
    kid: id,
    sign: (hashHex) => sign(null, Buffer.from(hashHex, 'hex'), key).toString('base64'),
  };
}

export function verifySignature(hashHex: string, signatureB64: string, publicKey: KeyObject): boolean {
  try {
    return verify(null, Buffer.from(hashHex, 'hex'), publicKey, Buffer.from(signatureB64, 'base64'));
  } catch {
    return false;
  }
}
