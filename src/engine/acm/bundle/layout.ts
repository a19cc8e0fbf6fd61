/**
 * The replay bundle layout (ACM §17, docs/acm.md "Replay bundles"): one directory per run,
 *   bundle.json                         manifest: every file with sha256 and size, the run, the keys
 *   engine-trace/traces.jsonl           the run's traces exactly as received, one per line
 *   memory-ledger/ledger.jsonl          the run's ledger entries in chain order
 *   policy/requests/requests.jsonl      PDP requests (policy input + the state each decision read)
 *   policy/responses/responses.jsonl    PDP responses (blueprint decision, ACM checks, signed verdict)
 *   policy/blueprints/…, policy/agents.yaml, policy/engine-config.json, policy/verify/…, policy/acm-options.json
 *                                       the policy the run was decided under
 *   context/<id>@<version>.json         every context packet version the run bound or received
 *   task-io/<task>.json                 each task's input, output, error and verification
 *   planner/plan-<n>.json               each plan event: goal card, plan graphs, selection, planner metadata
 * Files are keyed by their bundle path; the builder and verifier work on an in-memory map (no I/O).
 */
import type { EngineConfig } from '../../config.js';
import type { LedgerEntry } from '../../ledger/types.js';
import type { Trace } from '../../types.js';
import { canonicalJson, sha256Hex } from '../canonical.js';
import type { ContextVersion } from '../context.js';
import type { PolicyRequestRecord, PolicyResponseRecord } from '../pdp.js';
import type { AcmOptions } from '../run-state.js';

export const MANIFEST = 'bundle.json';
export const TRACES = 'engine-trace/traces.jsonl';
export const LEDGER = 'memory-ledger/ledger.jsonl';
export const REQUESTS = 'policy/requests/requests.jsonl';
export const RESPONSES = 'policy/responses/responses.jsonl';
export const BLUEPRINTS_DIR = 'policy/blueprints/';
export const AGENTS = 'policy/agents.yaml';
export const ENGINE_CONFIG = 'policy/engine-config.json';
export const VERIFY_DIR = 'policy/verify/';
export const ACM_OPTIONS = 'policy/acm-options.json';

export type BundleFiles = Map<string, string>;

/** Everything recorded about one run, in arrival order (what a stage or `steward eval` collects). */
export interface RunRecord {
  run_id: string;
  agent_id: string;
  tenant: string;
  traces: { line: string; trace: Trace; now_ms: number }[];
  requests: PolicyRequestRecord[];
  responses: PolicyResponseRecord[];
  ledger: LedgerEntry[];
  contexts: ContextVersion[];
}

/** The policy a run was decided under, as text (names relative to their directory). */
export interface PolicyFiles {
  blueprints: { name: string; text: string }[];
  agents?: string;
  config: EngineConfig;
  sheets: { name: string; text: string }[];
  acm: AcmOptions;
}

export interface BundleKey {
  kid: string;
  /** SPKI PEM. */
  public_key: string;
  signs: ('ledger' | 'verdicts')[];
}

export interface BundleManifest {
  format: 'acm-replay-bundle';
  format_version: 1;
  engine?: { name: string; version: string };
  run: {
    id: string;
    agent_id: string;
    tenant?: string;
    goal?: Record<string, unknown>;
    plan_id?: string;
    context?: Record<string, unknown>;
    capability_map_version?: string;
    engine?: string;
    first_event_ms?: number;
    last_event_ms?: number;
  };
  files: { path: string; sha256: string; bytes: number; kind?: string }[];
  keys: { kid: string; alg: 'Ed25519'; public_key: string; signs?: ('ledger' | 'verdicts')[] }[];
}

/** Bundle paths of the policy files, in a fixed order. */
export function policyFileMap(p: PolicyFiles): BundleFiles {
  const m: BundleFiles = new Map();
  for (const b of [...p.blueprints].sort((a, c) => a.name.localeCompare(c.name))) m.set(BLUEPRINTS_DIR + b.name, b.text);
  if (p.agents !== undefined) m.set(AGENTS, p.agents);
  m.set(ENGINE_CONFIG, JSON.stringify(p.config, null, 2) + '\n');
  for (const s of [...p.sheets].sort((a, c) => a.name.localeCompare(c.name))) m.set(VERIFY_DIR + s.name, s.text);
  m.set(ACM_OPTIONS, JSON.stringify(p.acm, null, 2) + '\n');
  return m;
}

/** sha256 over the canonical {path: sha256} map of the policy files (recorded in every POLICY_DECISION). */
export function policyDigest(files: BundleFiles): string {
  const m: Record<string, string> = {};
  for (const [path, text] of files) if (path.startsWith('policy/') && !path.startsWith('policy/requests/') && !path.startsWith('policy/responses/')) m[path] = sha256Hex(text);
  return sha256Hex(canonicalJson(m));
}

/**
 * sha256 (hex) of a record's line as the bundle holds it (JSON.stringify of the record, no newline): what
 * POLICY_DECISION entries hold for requests and responses. The exact bytes are anchored, so a verifier
 * hashes the line it read and an exporter must keep the line it recorded (docs/acm.md).
 */
export function recordDigest(r: unknown): string {
  return sha256Hex(JSON.stringify(r));
}

/** A file-name-safe form of an id (context ids, task ids). */
export function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9@._-]/g, '_');
}

export function contextPath(v: { id: string; version: number }): string {
  return `context/${safeName(v.id)}@${v.version}.json`;
}

export function jsonl(items: readonly unknown[]): string {
  return items.map((i) => JSON.stringify(i)).join('\n') + (items.length > 0 ? '\n' : '');
}

export function json(v: unknown): string {
  return JSON.stringify(v, null, 2) + '\n';
}
