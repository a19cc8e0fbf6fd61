// `steward keys generate` and `steward run` requiring a signing key (issue #22 item 6, docs/security.md).
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertSigningKey } from '../../../src/cli/commands/run.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { keyId } from '../../../src/engine/ledger/crypto.js';
import { Ed25519Signer, signVerdict } from '../../../src/engine/verdict/index.js';
import type { PvsVerdict } from '../../../src/engine/types.js';
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

describe('steward verify with several trusted keys (rotation)', () => {
  it('verdicts signed with the old and the new key both verify when both public keys are given; each by its kid', () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-rot-'));
    for (const n of ['old', 'new']) expect(steward(['keys', 'generate', '--out', dir, '--name', n]).status).toBe(0);
    const verdict = { version: 'pvs-1', metadata: { trace_id: 't-1' }, decision: 'ok' } as unknown as PvsVerdict;
    const lines = ['old', 'new'].map((n) => JSON.stringify(signVerdict({ ...verdict, metadata: { trace_id: `t-${n}` } } as unknown as PvsVerdict, Ed25519Signer.fromPem(readFileSync(join(dir, `${n}.pem`), 'utf8'))))).join('\n');
    const file = join(dir, 'verdicts.jsonl');
    writeFileSync(file, lines + '\n');
    const both = steward(['verify', '--public-key', join(dir, 'old.pub.pem'), '--public-key', join(dir, 'new.pub.pem'), file]);
    expect(both.status, both.stdout + both.stderr).toBe(0);
    expect(both.stdout).toMatch(/OK line 1 t-old/);
    expect(both.stdout).toMatch(/OK line 2 t-new/);
    const newOnly = steward(['verify', '--public-key', join(dir, 'new.pub.pem'), file]);
    expect(newOnly.status).toBe(1);
    expect(newOnly.stdout).toMatch(/FAIL line 1 t-old/);
    const unrelated = steward(['verify', '--public-key', join(dir, 'new.pub.pem'), '--public-key', join(dir, 'new.pub.pem'), file]);
    expect(unrelated.stdout).toMatch(/FAIL line 1 t-old: no trusted key has key id/);
  });
});
