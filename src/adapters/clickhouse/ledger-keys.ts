/**
 * Ledger keys from the environment or files. Signing: STEWARD_LEDGER_KEY, else the steward signing key
 * (`signing.key` / STEWARD_SIGNING_KEY) — PEM text or a path to a PEM file. Verification: PEM public (or
 * private) keys from files or directories, keyed by their key id.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { asPublicKey, ed25519Signer, keyId, type LedgerSigner } from '../../engine/ledger/index.js';
import { signOutcomeBytes } from '../../engine/approvals/outcome.js';
import { StewardError } from '../../errors.js';
import { describeHidden } from '../../observability/redact.js';
import { createSignPool, type SignPool } from '../crypto/sign-pool.js';

/** A ledger signer that can also sign in bulk on worker threads (the sink stage's path). */
export interface PoolableLedgerSigner extends LedgerSigner {
  /** A pool of `threads` signing threads with this signer's key (default: cores − 1, 1..4); close it when done. */
  signPool(threads?: number): SignPool;
}

function pemText(keyOrPath: string): string {
  if (keyOrPath.includes('-----BEGIN')) return keyOrPath;
  try {
    return readFileSync(keyOrPath, 'utf8');
  } catch (e) {
    // The value may be key material pasted without its PEM armour: never echo it.
    const code = (e as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new StewardError('STEWARD_CONFIG', `ledger key is not PEM text and not a readable file (${code}; ${describeHidden(keyOrPath)})`);
  }
}

export function ledgerSignerFrom(keyOrPath: string, kid?: string): PoolableLedgerSigner {
  const pem = pemText(keyOrPath);
  return { ...ed25519Signer(pem, kid), signPool: (threads) => createSignPool(pem, threads) };
}

/**
 * Signs approval outcomes (docs/approvals.md "Waiting") with the ledger key — signing.ledger_key, else signing.key —
 * when the process has one; undefined without (outcomes then go unsigned, and verifying clients pass them over).
 */
export function approvalOutcomeSigner(cfg: { signing?: { key: string }; ledgerSigning?: { key: string } }): ((value: string) => string) | undefined {
  const key = cfg.ledgerSigning ?? cfg.signing;
  if (!key) return undefined;
  const pem = pemText(key.key);
  return (value) => signOutcomeBytes(value, pem);
}

/** Loads every *.pem under the given files/directories (and PEM text) as trusted verification keys. */
export function loadPublicKeys(sources: string[]): Map<string, KeyObject> {
  const out = new Map<string, KeyObject>();
  const add = (pem: string) => {
    const k = asPublicKey(pem.includes('PRIVATE KEY') ? createPublicKey(pem) : pem);
    out.set(keyId(k), k);
  };
  for (const s of sources) {
    if (s.includes('-----BEGIN')) {
      add(s);
      continue;
    }
    const st = statSync(s, { throwIfNoEntry: false });
    if (!st) throw new StewardError('STEWARD_USAGE', `no such key file or directory: ${s}`);
    const files = st.isDirectory() ? readdirSync(s).filter((f) => f.endsWith('.pem')).map((f) => join(s, f)) : [s];
    for (const f of files) add(readFileSync(f, 'utf8'));
  }
  return out;
}
