import { afterEach, describe, expect, it } from 'vitest';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { createSignPool, type SignPool } from '../../../../src/adapters/crypto/sign-pool.js';
import { ed25519Signer, verifySignature } from '../../../../src/engine/ledger/index.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const hashes = (n: number, salt = '') => Array.from({ length: n }, (_, i) => createHash('sha256').update(`${salt}${i}`).digest('hex'));

describe('createSignPool', () => {
  let pool: SignPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('signs in order, across slices and threads, exactly as the one-by-one signer (Ed25519 is deterministic)', async () => {
    pool = createSignPool(privateKey, 2);
    const hs = hashes(700);
    const sigs = await pool.signMany(hs);
    const one = ed25519Signer(privateKey);
    expect(sigs).toEqual(hs.map((h) => one.sign(h)));
    expect(sigs.every((s, i) => verifySignature(hs[i]!, s, publicKey))).toBe(true);
  });

  it('keeps concurrent calls apart and answers an empty call at once', async () => {
    pool = createSignPool(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 1);
    const [a, b, c] = await Promise.all([pool.signMany(hashes(300, 'a')), pool.signMany([]), pool.signMany(hashes(5, 'c'))]);
    const one = ed25519Signer(privateKey);
    expect(a).toEqual(hashes(300, 'a').map((h) => one.sign(h)));
    expect(b).toEqual([]);
    expect(c).toEqual(hashes(5, 'c').map((h) => one.sign(h)));
  });

  it('refuses a non-Ed25519 key, and calls after close', async () => {
    expect(() => createSignPool(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey)).toThrow(/Ed25519/);
    const p = createSignPool(privateKey, 1);
    await p.close();
    await expect(p.signMany(hashes(1))).rejects.toThrow(/closed/);
  });
});

describe('createSignPool when a signing thread dies', () => {
  it('fails only that thread\'s requests (retryable), replaces the thread, and signs again afterwards', async () => {
    const spawned: { w: import('node:worker_threads').Worker; slot: number }[] = [];
    const pool = createSignPool(privateKey, 2, { onSpawn: (w, slot) => spawned.push({ w, slot }) });
    try {
      expect(spawned.map((x) => x.slot)).toEqual([0, 1]);
      // Two slices: one per thread. Killing thread 0 fails the call, retryably.
      const call = pool.signMany(hashes(400, 'k'));
      await spawned[0]!.w.terminate();
      await expect(call).rejects.toMatchObject({ code: 'STEWARD_LEDGER_CHAIN', retryable: true });
      // Meanwhile thread 1 still signs; slot 0 comes back after its backoff.
      const one = ed25519Signer(privateKey);
      expect(await pool.signMany(hashes(3, 'm'))).toEqual(hashes(3, 'm').map((h) => one.sign(h)));
      for (let i = 0; i < 100 && spawned.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
      expect(spawned.map((x) => x.slot)).toEqual([0, 1, 0]);
      expect(await pool.signMany(hashes(600, 'n'))).toEqual(hashes(600, 'n').map((h) => one.sign(h)));
    } finally {
      await pool.close();
    }
  });
});
