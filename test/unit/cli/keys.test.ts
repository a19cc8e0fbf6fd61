// `steward keys generate` and `steward run` requiring a signing key (issue #22 item 6, docs/security.md).
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertSigningKey } from '../../../src/cli/commands/run.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { keyId } from '../../../src/engine/ledger/crypto.js';
import { ROOT, steward } from '../contracts/cli.js';

describe('steward keys generate', () => {
  it('writes a matching Ed25519 pair (private key 0600), prints its key id, and never overwrites', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'steward-keys-')), 'k');
    const r = steward(['keys', 'generate', '--out', dir, '--name', 'prod-2026']);
    expect(r.status, r.stderr).toBe(0);
    const priv = createPrivateKey(readFileSync(join(dir, 'prod-2026.pem'), 'utf8'));
    const pub = createPublicKey(readFileSync(join(dir, 'prod-2026.pub.pem'), 'utf8'));
    expect(priv.asymmetricKeyType).toBe('ed25519');
    expect(verify(null, Buffer.from('x'), pub, sign(null, Buffer.from('x'), priv))).toBe(true);
    expect(statSync(join(dir, 'prod-2026.pem')).mode & 0o777).toBe(0o600);
    expect(r.stdout).toContain(`key id ${keyId(pub)}`);
    const again = steward(['keys', 'generate', '--out', dir, '--name', 'prod-2026']);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/exists: not overwritten/);
    expect(steward(['keys', 'generate']).status).toBe(2);
    expect(ROOT).toBeTruthy();
  });
});

describe('steward run needs a signing key for the stages that sign', () => {
  it('refuses without signing.key unless signing.allow_ephemeral; stages that sign nothing need none', () => {
    const none = buildConfig({}, {});
    expect(() => assertSigningKey(none, ['tripwire', 'scorer'])).toThrow(/stages scorer sign what they write.*steward keys generate/);
    expect(() => assertSigningKey(none, ['tripwire', 'gate', 'sink'])).toThrow(/stages gate, sink sign/);
    expect(() => assertSigningKey(none, ['tripwire', 'trust-debt'])).not.toThrow();
    expect(() => assertSigningKey(buildConfig({}, { STEWARD_ALLOW_EPHEMERAL_KEY: '1' }), ['scorer'])).not.toThrow();
    expect(() => assertSigningKey(buildConfig({ signing: { key: '-----BEGIN PRIVATE KEY-----x' } }, {}), ['scorer', 'sink'])).not.toThrow();
    // a ledger key alone covers the sink, not the scorer's verdicts
    const ledgerOnly = buildConfig({}, { STEWARD_LEDGER_KEY: '-----BEGIN PRIVATE KEY-----x' });
    expect(() => assertSigningKey(ledgerOnly, ['sink'])).not.toThrow();
    expect(() => assertSigningKey(ledgerOnly, ['scorer', 'sink'])).toThrow(/stages scorer sign/);
  });
});
