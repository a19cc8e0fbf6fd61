/**
 * Bundle checks that need no replay: the manifest, every file's sha256, the memory ledger's chain and
 * signatures against the trusted keys, the verdict signatures, and each context packet's content
 * address. A tamperer who recomputes bundle.json still meets the signed ledger here or in the replay.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { verifyLedger } from '../../ledger/verify.js';
import type { LedgerEntry } from '../../ledger/types.js';
import { signingBytes } from '../../verdict/sign.js';
import type { PvsVerdict } from '../../types.js';
import { contentAddress, sha256Hex } from '../canonical.js';
import { schemaProblems } from '../validate.js';
import type { PolicyResponseRecord } from '../pdp.js';
import { LEDGER, MANIFEST, RESPONSES, type BundleFiles, type BundleManifest } from './layout.js';

export interface BundleProblem {
  /** Bundle path, with `:LINE` for a line of a .jsonl file. */
  path: string;
  code: string;
  message: string;
}

export function formatBundleProblem(p: BundleProblem): string {
  return `${p.path}: ${p.code}: ${p.message}`;
}

export interface ParsedLines<T> {
  /** `text`: the line as read (what line digests are computed over). */
  items: { line: number; value: T; text: string }[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): boolean => typeof v === 'string';
const isNum = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);

/** Minimal shapes the verifier relies on; a record that lacks them is reported, never dereferenced. */
export const SHAPES: Record<string, (v: unknown) => boolean> = {
  trace: (v) => isObj(v) && isStr(v.trace_id) && isStr(v.agent_id) && isStr(v.hook),
  ledger: (v) => isObj(v),
  request: (v) =>
    isObj(v) && isNum(v.seq) && isNum(v.trace_line) && isStr(v.trace_id) && isStr(v.trace_digest) && isNum(v.now_ms) && Array.isArray(v.reads) && v.reads.every(isObj) && isObj(v.trust_debt) && Array.isArray(v.scorer_answers) && v.scorer_answers.every(isObj) && isObj(v.blueprint),
  response: (v) =>
    isObj(v) && isNum(v.seq) && isStr(v.trace_id) && isStr(v.intervention) && typeof v.approved === 'boolean' && isObj(v.blueprint) && Array.isArray(v.blueprint.tripwires) && Array.isArray(v.blueprint.rules) && (v.acm === undefined || (isObj(v.acm) && Array.isArray(v.acm.violations))),
};

export function parseJsonl<T>(files: BundleFiles, path: string, problems: BundleProblem[], shape?: keyof typeof SHAPES): ParsedLines<T> {
  const text = files.get(path);
  const items: { line: number; value: T; text: string }[] = [];
  if (text === undefined) return { items };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.trim() === '') continue;
    try {
      const value = JSON.parse(l) as unknown;
      if (shape && !SHAPES[shape]!(value)) problems.push({ path: `${path}:${i + 1}`, code: 'STEWARD_REPLAY_RECORD', message: `not a ${shape} record` });
      else items.push({ line: i + 1, value: value as T, text: l });
    } catch (e) {
      problems.push({ path: `${path}:${i + 1}`, code: 'STEWARD_REPLAY_JSON', message: `not JSON: ${(e as Error).message}` });
    }
  }
  return { items };
}

export function parseJson<T>(files: BundleFiles, path: string, problems: BundleProblem[]): T | undefined {
  const text = files.get(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    problems.push({ path, code: 'STEWARD_REPLAY_JSON', message: `not JSON: ${(e as Error).message}` });
    return undefined;
  }
}

/** Manifest + file hashes. Returns the manifest when it is usable. */
export function checkManifest(files: BundleFiles, problems: BundleProblem[]): BundleManifest | undefined {
  if (!files.has(MANIFEST)) {
    problems.push({ path: MANIFEST, code: 'STEWARD_REPLAY_MANIFEST', message: 'no bundle.json: not a replay bundle' });
    return undefined;
  }
  const m = parseJson<BundleManifest>(files, MANIFEST, problems);
  if (!m) return undefined;
  const schema = schemaProblems('replay-bundle', m);
  for (const p of schema) problems.push({ path: MANIFEST, code: 'STEWARD_REPLAY_MANIFEST', message: `${p.path}: ${p.message}` });
  if (schema.length > 0) return undefined;
  const listed = new Set<string>();
  for (const f of m.files) {
    listed.add(f.path);
    const text = files.get(f.path);
    if (text === undefined) problems.push({ path: f.path, code: 'STEWARD_REPLAY_FILE_MISSING', message: 'listed in bundle.json but missing' });
    else if (sha256Hex(text) !== f.sha256) problems.push({ path: f.path, code: 'STEWARD_REPLAY_FILE_HASH', message: `sha256 ${sha256Hex(text)} differs from bundle.json's ${f.sha256}` });
  }
  for (const p of files.keys()) if (p !== MANIFEST && !listed.has(p)) problems.push({ path: p, code: 'STEWARD_REPLAY_FILE_UNLISTED', message: 'not listed in bundle.json' });
  return m;
}

/** Trusted keys: `--keys` when given (only those), else the manifest's. */
export function trustedKeys(m: BundleManifest | undefined, given: Record<string, string> | undefined, problems: BundleProblem[]): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const src: [string, string, string][] = given ? Object.entries(given).map(([k, v]) => [k, v, '--keys']) : (m?.keys ?? []).map((k) => [k.kid, k.public_key, MANIFEST]);
  for (const [kid, pem, where] of src) {
    try {
      const key = createPublicKey(pem);
      if (key.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 key');
      keys.set(kid, key);
    } catch (e) {
      problems.push({ path: where, code: 'STEWARD_REPLAY_KEY', message: `key ${kid}: ${(e as Error).message}` });
    }
  }
  return keys;
}

/** Returns the entry ids the ledger verification found nothing wrong with. */
export function checkLedger(entries: { line: number; value: LedgerEntry }[], keys: Map<string, KeyObject>, problems: BundleProblem[]): Set<string> {
  const lineOf = new Map<LedgerEntry, number>(entries.map((e) => [e.value, e.line]));
  const byId = new Map<string, number>(entries.map((e) => [`${e.value.seq}\u0000${e.value.entry_id}`, e.line]));
  // Fast path: hashes, links and key ids of every entry, the signature of the last one (it covers the
  // rest through the chain); on any issue, every signature, so the report names the entry at fault.
  let res = verifyLedger(
    entries.map((e) => e.value),
    keys,
    { signatures: 'last' },
  );
  if (res.issues.length > 0) res = verifyLedger(entries.map((e) => e.value), keys);
  for (const i of res.issues) {
    const line = byId.get(`${i.seq}\u0000${i.entry_id}`) ?? [...lineOf.values()][0] ?? 1;
    problems.push({ path: `${LEDGER}:${line}`, code: `STEWARD_REPLAY_LEDGER_${i.kind.toUpperCase()}`, message: `seq ${i.seq} (${i.entry_id}): ${i.message}` });
  }
  const bad = new Set(res.issues.map((i) => i.entry_id));
  return new Set(entries.map((e) => e.value.entry_id).filter((id) => !bad.has(id)));
}

/**
 * Verdicts: signed by a trusted key. A response whose digest a verified POLICY_DECISION signed is
 * authenticated by that signature already (the digest covers the verdict and its signature bytes), so
 * its verdict is checked for a trusted key id only; any other verdict is verified cryptographically.
 */
export function checkVerdicts(responses: { line: number; value: PolicyResponseRecord }[], keys: Map<string, KeyObject>, bound: (r: PolicyResponseRecord) => boolean, problems: BundleProblem[]): void {
  for (const { line, value } of responses) {
    const v = value.verdict as { signature?: { kid?: string; sig?: unknown } } | undefined;
    if (!v) continue;
    const kid = v.signature?.kid;
    const key = kid !== undefined ? keys.get(kid) : undefined;
    if (!key) {
      problems.push({ path: `${RESPONSES}:${line}`, code: 'STEWARD_REPLAY_UNKNOWN_KEY', message: `verdict of ${value.trace_id} is signed with key ${kid ?? '(none)'}, which is not trusted` });
      continue;
    }
    if (bound(value)) continue;
    let ok = false;
    try {
      ok = typeof v.signature?.sig === 'string' && verify(null, signingBytes(v as unknown as PvsVerdict), key, Buffer.from(v.signature.sig, 'base64url'));
    } catch {
      ok = false;
    }
    if (!ok) problems.push({ path: `${RESPONSES}:${line}`, code: 'STEWARD_REPLAY_VERDICT_SIGNATURE', message: `verdict of ${value.trace_id}: signature does not verify with key ${kid}` });
  }
}

/** Each context file's packet must hash to its recorded digest (and that digest is what PLAN_SELECTED signed). */
export function checkContexts(files: BundleFiles, problems: BundleProblem[]): void {
  for (const path of files.keys()) {
    if (!path.startsWith('context/')) continue;
    const c = parseJson<{ id: string; version: number; digest: string; packet: unknown }>(files, path, problems);
    if (!c) continue;
    const actual = contentAddress(c.packet);
    if (actual !== c.digest) problems.push({ path, code: 'STEWARD_REPLAY_CONTEXT_DIGEST', message: `packet content address ${actual} differs from the recorded ${c.digest}` });
  }
}
