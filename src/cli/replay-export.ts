/**
 * `steward replay export` from ClickHouse (docs/acm.md "Replay bundles"): the run's records and chains come from
 * the configured database (ClickHouseReplaySource); the policy files from the blueprint directory (the config's,
 * or --blueprints / --agents); the public keys from --keys, else the public halves of the configured ledger and
 * verdict signing keys. The signed policy digest of each POLICY_DECISION tells the verifier whether the policy
 * files are still the ones the run was decided under.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClickHouseStore } from '../adapters/clickhouse/client.js';
import { ClickHouseReplaySource } from '../adapters/clickhouse/replay-source.js';
import { loadStewardConfig } from '../config/steward-config.js';
import type { BundleKey, ReplaySource } from '../engine/acm/index.js';
import { ed25519Signer } from '../engine/ledger/crypto.js';
import { StewardError } from '../errors.js';
import { loadPolicyFiles } from './eval-bundles.js';
import { engineVersion } from './eval-setup.js';

export interface ExportOptions {
  config?: string;
  url?: string;
  database?: string;
  tenant?: string;
  blueprints?: string;
  agents?: string;
  /** kid → SPKI PEM (`--keys FILE`, parsed by the caller). */
  keys?: Record<string, string>;
}

function pem(keyOrPath: string): string {
  return keyOrPath.includes('-----BEGIN') ? keyOrPath : readFileSync(keyOrPath, 'utf8');
}

/** The bundle's keys: the configured signing keys' public halves (one entry per key id, with what it signs). */
function configuredKeys(cfg: ReturnType<typeof loadStewardConfig>): BundleKey[] {
  const out = new Map<string, BundleKey>();
  const add = (k: { key: string; keyId?: string } | undefined, signs: 'ledger' | 'verdicts') => {
    if (!k) return;
    const text = pem(k.key);
    const kid = ed25519Signer(text, k.keyId).kid;
    const e = out.get(kid) ?? { kid, public_key: createPublicKey(createPrivateKey(text)).export({ type: 'spki', format: 'pem' }).toString(), signs: [] };
    if (!e.signs.includes(signs)) e.signs.push(signs);
    out.set(kid, e);
  };
  add(cfg.ledgerSigning ?? cfg.signing, 'ledger');
  add(cfg.signing, 'verdicts');
  return [...out.values()];
}

export async function clickhouseReplaySource(o: ExportOptions): Promise<{ source: ReplaySource; close: () => Promise<void> }> {
  const cfg = loadStewardConfig(o.config);
  const keys = o.keys ? Object.entries(o.keys).map(([kid, public_key]): BundleKey => ({ kid, public_key, signs: ['ledger', 'verdicts'] })) : configuredKeys(cfg);
  if (keys.length === 0) throw new StewardError('STEWARD_USAGE', 'replay export: no public keys for the bundle: configure signing.key (or signing.ledger_key), or pass --keys FILE');
  const dir = o.blueprints ?? cfg.blueprints.dir;
  const agents = o.agents ?? (o.blueprints === undefined ? cfg.blueprints.agents : existsSync(join(dir, 'agents.yaml')) ? join(dir, 'agents.yaml') : undefined);
  const policy = await loadPolicyFiles(cfg.engine, dir, agents);
  const store = new ClickHouseStore({ ...cfg.clickhouse, url: o.url ?? cfg.clickhouse.url, database: o.database ?? cfg.clickhouse.database });
  const source = new ClickHouseReplaySource(store, { policy, keys, engine: { name: 'steward', version: engineVersion() }, ...(o.tenant !== undefined ? { tenant: o.tenant } : {}) });
  return { source, close: () => store.close() };
}
