/**
 * Verdict integrity (PVS-1 §5.2, Level 3): Ed25519 over the RFC 8785 canonical JSON of the verdict
 * without its `signature` member, so any change to any other field breaks verification.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, createHash, type KeyObject } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { StewardError } from '../../errors.js';
import type { PvsVerdict } from '../types.js';

// The package is CommonJS (`module.exports = fn`); its typings claim an ES default export.
type Canon = (x: unknown) => string | undefined;
const canonicalize: Canon =
  (canonicalizeModule as unknown as { default?: Canon }).default ?? (canonicalizeModule as unknown as Canon);

export interface VerdictSignature {
  alg: 'Ed25519';
  kid: string;
  sig: string; // base64url
}

export interface VerdictSigner {
  readonly kid: string;
  sign(data: Buffer): Buffer;
  publicKeyPem(): string;
}

/** Key id = first 16 hex chars of SHA-256 over the SPKI DER of the public key (stable across restarts). */
export function keyIdOf(pub: KeyObject): string {
  return createHash('sha256').update(pub.export({ type: 'spki', format: 'der' })).digest('hex').slice(0, 16);
}

export class Ed25519Signer implements VerdictSigner {
  readonly kid: string;
  private readonly pub: KeyObject;
  constructor(private readonly key: KeyObject, kid?: string) {
    if (key.asymmetricKeyType !== 'ed25519') throw new StewardError('STEWARD_CONFIG', 'signing key must be Ed25519');
    this.pub = createPublicKey(key);
    this.kid = kid ?? keyIdOf(this.pub);
  }
  static fromPem(pem: string, kid?: string): Ed25519Signer {
    return new Ed25519Signer(createPrivateKey(pem), kid);
  }
  static ephemeral(): Ed25519Signer {
    return new Ed25519Signer(generateKeyPairSync('ed25519').privateKey);
  }
  sign(data: Buffer): Buffer {
    return sign(null, data, this.key);
  }
  publicKeyPem(): string {
    return this.pub.export({ type: 'spki', format: 'pem' }).toString();
  }
  privateKeyPem(): string {
    return this.key.export({ type: 'pkcs8', format: 'pem' }).toString();
  }
}

export function signingBytes(verdict: PvsVerdict): Buffer {
  const { signature: _sig, ...rest } = verdict as PvsVerdict & { signature?: unknown };
  const text = canonicalize(rest);
  if (text === undefined) throw new StewardError('STEWARD_INTERNAL', 'verdict is not serialisable');
  return Buffer.from(text, 'utf8');
}

export function signVerdict<T extends PvsVerdict>(verdict: T, signer: VerdictSigner): T & { signature: VerdictSignature } {
  const sig = signer.sign(signingBytes(verdict)).toString('base64url');
  return { ...verdict, signature: { alg: 'Ed25519', kid: signer.kid, sig } };
}

export interface VerifyResult {
  ok: boolean;
  kid?: string;
  reason?: string;
}

/** `publicKey` is a PEM (SPKI) string or KeyObject. Never throws for a bad verdict; it says why. */
export function verifyVerdict(verdict: unknown, publicKey: string | KeyObject): VerifyResult {
  if (!verdict || typeof verdict !== 'object') return { ok: false, reason: 'not a JSON object' };
  const s = (verdict as { signature?: Partial<VerdictSignature> }).signature;
  if (!s || typeof s !== 'object') return { ok: false, reason: 'no signature' };
  if (s.alg !== 'Ed25519' || typeof s.sig !== 'string') return { ok: false, kid: s.kid, reason: `unsupported signature (${String(s.alg)})` };
  let key: KeyObject;
  try {
    key = typeof publicKey === 'string' ? createPublicKey(publicKey) : publicKey;
  } catch (e) {
    return { ok: false, kid: s.kid, reason: `bad public key: ${(e as Error).message}` };
  }
  if (s.kid && s.kid !== keyIdOf(key)) return { ok: false, kid: s.kid, reason: `key id ${s.kid} does not match the public key (${keyIdOf(key)})` };
  const ok = verify(null, signingBytes(verdict as PvsVerdict), key, Buffer.from(s.sig, 'base64url'));
  return ok ? { ok, kid: s.kid } : { ok, kid: s.kid, reason: 'signature does not match the verdict (tampered or wrong key)' };
}
