/**
 * `steward keys generate --out DIR [--name NAME]`: an Ed25519 key pair for signing verdicts and ledger entries
 * (signing.key / signing.ledger_key) or agents' traces (registry public_keys): DIR/NAME.pem (PKCS#8 PEM, mode
 * 0600) and DIR/NAME.pub.pem (SPKI PEM, for `steward verify --public-key`, `steward ledger verify --keys`, agents.yaml).
 * Never overwrites a file. Prints the key id (docs/security.md, key rotation).
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { keyId } from '../../engine/ledger/crypto.js';
import { StewardError } from '../../errors.js';

export const USAGE = 'usage: steward keys generate --out DIR [--name NAME]   (writes DIR/NAME.pem and DIR/NAME.pub.pem; NAME defaults to steward)';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { out: { type: 'string' }, name: { type: 'string' } } });
  if (positionals[0] !== 'generate' || positionals.length !== 1) throw new StewardError('STEWARD_USAGE', USAGE);
  if (!values.out) throw new StewardError('STEWARD_USAGE', `--out DIR is required\n${USAGE}`);
  const name = values.name ?? 'steward';
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new StewardError('STEWARD_USAGE', `--name ${JSON.stringify(name)}: letters, digits, '.', '_' and '-' only`);
  const priv = join(values.out, `${name}.pem`);
  const pub = join(values.out, `${name}.pub.pem`);
  for (const f of [priv, pub]) if (existsSync(f)) throw new StewardError('STEWARD_USAGE', `${f} exists: not overwritten (keys in use must be rotated, not replaced: docs/security.md)`);
  mkdirSync(values.out, { recursive: true });
  const k = generateKeyPairSync('ed25519');
  writeFileSync(priv, k.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  writeFileSync(pub, k.publicKey.export({ type: 'spki', format: 'pem' }), { flag: 'wx' });
  process.stdout.write(`${priv}\n${pub}\nkey id ${keyId(k.publicKey)}\n`);
  return 0;
}
