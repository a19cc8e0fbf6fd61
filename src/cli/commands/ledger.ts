/**
 * `steward ledger verify [--agent ID] [--keys PEM_FILE_OR_DIR]... [--anchors FILE] [--write-anchors FILE] [--json]
 *  [--database DB] [--url URL]`
 * Reads the memory ledger from ClickHouse (one agent or all) and verifies hashes, signatures and chain
 * links. Exit 0 when intact, 1 on any tampering (each problem printed with agent, seq and entry id), 2 on usage.
 * A hash chain alone cannot show that its newest entries were dropped; anchors can: --write-anchors saves
 * each agent's head after an intact run, and a later --anchors run reports any chain that now ends before
 * its anchor (or no longer holds the anchored hash) as truncated.
 * ACM runs' own chains (acm_ledger, spec-decisions D30: one per run and agent, from genesis) are verified too,
 * after the agents' (with --agent: that agent's run chains); their problems name the run.
 * Trusted keys: --keys, else STEWARD_LEDGER_PUBLIC_KEYS (paths separated by ':'), else the public half of
 * the signing key (STEWARD_LEDGER_KEY or the steward signing key).
 */
import { parseArgs } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { loadPublicKeys } from '../../adapters/clickhouse/ledger-keys.js';
import { ledgerAgents, readLedgerPages } from '../../adapters/clickhouse/ledger-store.js';
import { readRunChain, runChains } from '../../adapters/clickhouse/run-chain-read.js';
import { ChainVerifier, type LedgerVerifyResult } from '../../engine/ledger/index.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';
import { CLICKHOUSE_OPTIONS, clickhouseStoreFromArgs } from './migrate.js';

export const USAGE = 'usage: steward ledger verify [--agent ID] [--keys FILE|DIR]... [--anchors FILE] [--write-anchors FILE] [--json] [--database DB] [--url URL] [--config FILE]';

type Anchors = Record<string, { seq: number; hash: string }>;

/** Anchors file: `{ "<agent>": { "seq": n, "hash": "…" } }`, or the `--json` output (its `heads`). */
function readAnchors(file: string): Anchors {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new StewardError('STEWARD_USAGE', `cannot read anchors ${file}: ${(e as Error).message}`);
  }
  const heads = (doc as { heads?: unknown })?.heads ?? doc;
  if (typeof heads !== 'object' || heads === null || Array.isArray(heads)) throw new StewardError('STEWARD_USAGE', `anchors ${file}: expected an object of agent → { seq, hash }`);
  const out: Anchors = {};
  for (const [agent, h] of Object.entries(heads as Record<string, unknown>)) {
    const { seq, hash } = (h ?? {}) as { seq?: unknown; hash?: unknown };
    if (!Number.isSafeInteger(seq) || typeof hash !== 'string') throw new StewardError('STEWARD_USAGE', `anchors ${file}: agent ${agent} needs an integer seq and a hash`);
    out[agent] = { seq: seq as number, hash };
  }
  return out;
}

function trustedKeys(keys: string[] | undefined, configFile?: string): Map<string, KeyObject> {
  if (keys && keys.length > 0) return loadPublicKeys(keys);
  const env = process.env.STEWARD_LEDGER_PUBLIC_KEYS;
  if (env) return loadPublicKeys(env.split(':').filter(Boolean));
  const cfg = loadStewardConfig(configFile);
  const key = (cfg.ledgerSigning ?? cfg.signing)?.key;
  if (!key) throw new StewardError('STEWARD_USAGE', `no trusted keys: pass --keys\n${USAGE}`);
  return loadPublicKeys([key]);
}

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...CLICKHOUSE_OPTIONS, agent: { type: 'string' }, keys: { type: 'string', multiple: true }, json: { type: 'boolean' }, anchors: { type: 'string' }, 'write-anchors': { type: 'string' } },
    });
  } catch (e) {
    throw new StewardError('STEWARD_USAGE', `${(e as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals[0] !== 'verify') throw new StewardError('STEWARD_USAGE', USAGE);
  const keys = trustedKeys(values.keys, values.config);
  const anchors = values.anchors ? readAnchors(values.anchors) : {};
  const store = clickhouseStoreFromArgs(values);
  try {
    // One agent at a time, each read in pages of 10 000 entries: memory is bounded by a page. Anchored agents
    // with no entries left are verified too (they are reported as truncated).
    const agents = values.agent !== undefined ? [values.agent] : [...new Set([...(await ledgerAgents(store)), ...Object.keys(anchors)])].sort();
    const r: LedgerVerifyResult = { ok: true, agents: 0, entries: 0, issues: [], heads: {} };
    for (const agent of agents) {
      // Page by page: memory is bounded by a page, not by the longest chain.
      const v = new ChainVerifier(agent, keys, anchors[agent]);
      for await (const page of readLedgerPages(store, agent)) v.add(page);
      const one = v.finish();
      r.ok &&= one.ok;
      r.agents += one.agents;
      r.entries += one.entries;
      r.issues.push(...one.issues);
      Object.assign(r.heads, one.heads);
    }
    const runs = { chains: 0, entries: 0, issues: [] as (LedgerVerifyResult['issues'][number] & { tenant: string; run_id: string })[] };
    for (const c of (await runChains(store)).filter((c) => values.agent === undefined || c.agent_id === values.agent)) {
      const v = new ChainVerifier(c.agent_id, keys);
      v.add(await readRunChain(store, c));
      const one = v.finish();
      runs.chains++;
      runs.entries += one.entries;
      runs.issues.push(...one.issues.map((i) => ({ ...i, tenant: c.tenant, run_id: c.run_id })));
    }
    const ok = r.ok && runs.issues.length === 0;
    if (values.json) {
      process.stdout.write(JSON.stringify({ ok, agents: r.agents, entries: r.entries, issues: r.issues, heads: r.heads, runs }) + '\n');
    } else {
      for (const i of r.issues) process.stdout.write(`agent ${i.agent_id} seq ${i.seq} entry ${i.entry_id || '-'}: ${i.kind}: ${i.message}\n`);
      for (const i of runs.issues) process.stdout.write(`run ${i.run_id} (tenant ${i.tenant || '-'}) agent ${i.agent_id} seq ${i.seq} entry ${i.entry_id || '-'}: ${i.kind}: ${i.message}\n`);
      const problems = r.issues.length + runs.issues.length;
      const runPart = runs.chains > 0 ? `, ${runs.entries} entries in ${runs.chains} run chain(s)` : '';
      process.stdout.write(`ledger: ${r.entries} entries, ${r.agents} agent(s)${runPart}, ${problems} problem(s)${ok ? ' — intact' : ' — TAMPERED'}\n`);
    }
    if (values['write-anchors']) {
      if (!r.ok) process.stderr.write(`steward ledger: not writing anchors from a tampered ledger\n`);
      else writeFileSync(values['write-anchors'], JSON.stringify(Object.fromEntries(Object.entries(r.heads).map(([a, h]) => [a, { seq: h.seq, hash: h.hash }])), null, 2) + '\n');
    }
    // An agent whose whole chain is gone must not read as intact (without anchors nothing else would say so).
    if (values.agent && r.entries === 0) {
      process.stderr.write(`steward ledger: no entries for agent ${values.agent}\n`);
      return 1;
    }
    return ok ? 0 : 1;
  } finally {
    await store.close();
  }
}
