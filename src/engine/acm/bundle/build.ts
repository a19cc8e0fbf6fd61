/**
 * Builds a run's replay bundle (ACM §14.3, §17) from its records: pure, returns path → text with
 * bundle.json last. Deterministic: the same records give the same bytes.
 */
import type { RunState } from '../run-state.js';
import { canonicalJson, sha256Hex } from '../canonical.js';
import type { LedgerEntry } from '../../ledger/types.js';
import { contextFiles, plannerFiles, taskIoFiles } from './artifacts.js';
import { jsonl, LEDGER, MANIFEST, policyFileMap, REQUESTS, RESPONSES, TRACES, type BundleFiles, type BundleKey, type BundleManifest, type PolicyFiles, type RunRecord } from './layout.js';

export interface BuildBundleInput {
  record: RunRecord;
  /** The run's final state (task-io/ comes from it). */
  state?: RunState;
  policy: PolicyFiles;
  keys: BundleKey[];
  engine: { name: string; version: string };
}

/** An entry with its keys in chain order and its payload's keys in canonical (RFC 8785) order. */
export function ledgerLineOrder(e: LedgerEntry): LedgerEntry {
  const payload = JSON.parse(canonicalJson(e.payload)) as Record<string, unknown>;
  return { entry_id: e.entry_id, agent_id: e.agent_id, tenant: e.tenant, seq: e.seq, ts_ms: e.ts_ms, type: e.type, payload, prev_hash: e.prev_hash, kid: e.kid, hash: e.hash, signature: e.signature };
}

function kindOf(path: string): string {
  return path.split('/')[0] === 'policy' ? path.split('/').slice(0, 2).join('/') : path.split('/')[0]!;
}

export function buildReplayBundle(i: BuildBundleInput): BundleFiles {
  const r = i.record;
  const files: BundleFiles = new Map();
  files.set(TRACES, r.traces.map((t) => t.line).join('\n') + (r.traces.length ? '\n' : ''));
  // Fixed key order, payload in canonical order: the same entries give the same bytes whoever collected them
  // (a stage's chain, or ClickHouse, which stores payloads canonically).
  files.set(LEDGER, jsonl(r.ledger.map(ledgerLineOrder)));
  files.set(REQUESTS, jsonl(r.requests));
  files.set(RESPONSES, jsonl(r.responses));
  for (const [p, t] of policyFileMap(i.policy)) files.set(p, t);
  for (const [p, t] of contextFiles(r.contexts)) files.set(p, t);
  for (const [p, t] of taskIoFiles(i.state)) files.set(p, t);
  for (const [p, t] of plannerFiles(r.traces)) files.set(p, t);

  const plan = i.state?.plan;
  const chosen = plan?.plans.find((p) => p.id === plan.chosen_plan_id);
  const capMap =
    chosen?.capabilityMapVersion ?? (r.traces.map((t) => (t.trace.plan as { capabilityMapVersion?: unknown } | undefined)?.capabilityMapVersion).find((v) => typeof v === 'string') as string | undefined);
  const engineName = r.traces.map((t) => (t.trace.run as { engine?: unknown } | undefined)?.engine).find((v) => typeof v === 'string') as string | undefined;
  const manifest: BundleManifest = {
    format: 'acm-replay-bundle',
    format_version: 1,
    engine: i.engine,
    run: {
      id: r.run_id,
      agent_id: r.agent_id,
      tenant: r.tenant,
      ...(plan ? { goal: plan.goal, plan_id: plan.chosen_plan_id, context: plan.context } : {}),
      ...(capMap ? { capability_map_version: capMap } : {}),
      ...(engineName ? { engine: engineName } : {}),
      ...(r.traces.length ? { first_event_ms: r.traces[0]!.now_ms, last_event_ms: r.traces[r.traces.length - 1]!.now_ms } : {}),
    },
    files: [...files.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([path, text]) => ({ path, sha256: sha256Hex(text), bytes: Buffer.byteLength(text, 'utf8'), kind: kindOf(path) })),
    keys: i.keys.map((k) => ({ kid: k.kid, alg: 'Ed25519', public_key: k.public_key, signs: k.signs })),
  };
  files.set(MANIFEST, JSON.stringify(manifest, null, 2) + '\n');
  return files;
}

/** Recomputes bundle.json's file list over the given files (what a tamperer would do; used by tests and tools). */
export function resealManifest(files: BundleFiles): BundleFiles {
  const m = JSON.parse(files.get(MANIFEST)!) as BundleManifest;
  const out: BundleFiles = new Map([...files].filter(([p]) => p !== MANIFEST));
  m.files = [...out.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, text]) => ({ path, sha256: sha256Hex(text), bytes: Buffer.byteLength(text, 'utf8'), kind: kindOf(path) }));
  out.set(MANIFEST, JSON.stringify(m, null, 2) + '\n');
  return out;
}
