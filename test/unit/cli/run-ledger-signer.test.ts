import { generateKeyPairSync, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseStages } from '../../../src/cli/commands/run.js';
import { ledgerSignerFor } from '../../../src/process/steward-process.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { keyId } from '../../../src/engine/ledger/crypto.js';
import { createLogger } from '../../../src/logger.js';

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const kidOf = (p: string) => keyId(createPublicKey(p));
const logger = createLogger({ level: 'silent' });
/** The settings of a steward.yaml (`raw`) and an environment, as `steward run` reads them. */
const cfg = (raw: object, env: NodeJS.ProcessEnv = {}) => buildConfig(raw, env);

describe('steward run ledger signer', () => {
  it('prefers STEWARD_LEDGER_KEY, then the steward signing key, else an ephemeral key', () => {
    const ledgerKey = pem();
    const signingKey = pem();
    expect(ledgerSignerFor(cfg({ signing: { key: signingKey } }, { STEWARD_LEDGER_KEY: ledgerKey }), logger).kid).toBe(kidOf(ledgerKey));
    expect(ledgerSignerFor(cfg({ signing: { key: signingKey } }), logger).kid).toBe(kidOf(signingKey));
    expect(ledgerSignerFor(cfg({ signing: { key: signingKey, ledger_key: ledgerKey } }), logger).kid).toBe(kidOf(ledgerKey));
    const a = ledgerSignerFor(cfg({}), logger).kid;
    const b = ledgerSignerFor(cfg({}), logger).kid;
    expect(a).not.toBe(b);
    expect([kidOf(ledgerKey), kidOf(signingKey)]).not.toContain(a);
  });

  it('signing.require_key refuses the ephemeral ledger key (a sink-only process too)', () => {
    expect(() => ledgerSignerFor(cfg({ signing: { require_key: true } }), logger)).toThrow(/signing.require_key is set but no ledger signing key/);
    expect(ledgerSignerFor(cfg({}, { STEWARD_REQUIRE_SIGNING_KEY: '1', STEWARD_LEDGER_KEY: pem() }), logger).kid).toMatch(/./);
  });

  it('a ledger key that is not PEM names its setting and never echoes the value', () => {
    const key = 'MC4CAQAwBQYDK2VwBCIEIBs2QmZoSupErSeCrEtKeYmAtErIaL';
    expect(() => ledgerSignerFor(cfg({}, { STEWARD_LEDGER_KEY: key }), logger)).toThrow(
      `ledger signing key (signing.ledger_key / STEWARD_LEDGER_KEY): ledger key is not PEM text and not a readable file (ENOENT; value hidden, ${key.length} chars)`,
    );
  });
});

describe('steward run --stages', () => {
  it('names known stages, dedupes, and refuses an empty or unknown list', () => {
    expect(parseStages(undefined)).toEqual(['tripwire', 'scorer', 'gate', 'trust-debt', 'sink', 'approvals']);
    expect(parseStages('scorer, tripwire,scorer')).toEqual(['scorer', 'tripwire']);
    expect(() => parseStages(',')).toThrow(/--stages names no stage/);
    expect(() => parseStages('tripwire,nope')).toThrow(/unknown stage 'nope'/);
  });
});
