/**
 * `steward verify --public-key PEM [FILE|-]`: checks Ed25519 signatures of PVS-1 verdicts (PVS-1 §5.2).
 * Input: one verdict (JSON), or JSONL of verdicts or of `steward eval` lines (their `verdict` is checked).
 * Exit 0 when every verdict verifies, 1 when any does not, 2 on bad arguments.
 * Key rotation: --public-key may be given several times (old and new keys); each verdict is checked with the
 * trusted key its signature's key id names (docs/security.md, signing keys).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { keyIdOf, verifyVerdict, type VerifyResult } from '../../engine/verdict/index.js';

export const USAGE = 'usage: steward verify --public-key PEM [--public-key PEM]... [VERDICT.json|VERDICTS.jsonl|-]';

/** Checks one verdict against the trusted keys: the one its signature's kid names (a single key is tried as is). */
export function verifyWithKeys(verdict: unknown, keys: readonly KeyObject[]): VerifyResult {
  if (keys.length === 1) return verifyVerdict(verdict, keys[0]!);
  const kid = (verdict as { signature?: { kid?: unknown } } | null)?.signature?.kid;
  const key = keys.find((k) => keyIdOf(k) === kid);
  if (key) return verifyVerdict(verdict, key);
  const r = verifyVerdict(verdict, keys[0]!);
  return r.ok ? r : { ok: false, kid: typeof kid === 'string' ? kid : undefined, reason: typeof kid === 'string' ? `no trusted key has key id ${kid}` : (r.reason ?? 'no signature') };
}

async function readAll(src: string): Promise<string> {
  if (src !== '-') return readFileSync(src, 'utf8');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * An eval line of a gate hook (D50): `verdict: null` with the gate line's shape (`gate`, or `user_feedback` with its
 * `outcome`). A line whose `verdict` is an object is never one, whatever other keys it carries.
 */
function isGateHookLine(v: unknown): v is { trace_id: unknown } {
  if (!v || typeof v !== 'object' || !('trace_id' in v) || 'version' in v) return false;
  const o = v as Record<string, unknown>;
  return o.verdict == null && ('gate' in o || ('user_feedback' in o && 'outcome' in o));
}

export function verdictsOf(text: string, skipped: string[] = []): { where: string; value: unknown; error?: string }[] {
  const pick = (v: unknown): unknown => {
    const o = v as Record<string, unknown> | null;
    return o && typeof o === 'object' && !('version' in o) && o.verdict && typeof o.verdict === 'object' ? o.verdict : v;
  };
  try {
    const whole = JSON.parse(text);
    return (Array.isArray(whole) ? whole : [whole]).map((v, i) => ({ where: Array.isArray(whole) ? `[${i}]` : 'verdict', value: pick(v) }));
  } catch {
    // not one JSON document: JSONL
  }
  const out: { where: string; value: unknown; error?: string }[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      const v = JSON.parse(line);
      if (v && typeof v === 'object' && 'error' in v && 'line' in v) return; // an eval error line has no verdict
      // Nor has an eval line of a gate hook: the stream makes no PVS-1 verdict for a final answer or feedback (D50).
      // Only that shape is skipped, and said: a line whose verdict is an object is always checked, and one whose
      // verdict was removed shows (an eval line itself is unsigned, so a removal can be shown, not detected).
      if (isGateHookLine(v)) {
        skipped.push(`SKIP line ${i + 1} ${String(v.trace_id)} (gate hook: no verdict)`);
        return;
      }
      out.push({ where: `line ${i + 1}`, value: pick(v) });
    } catch (e) {
      out.push({ where: `line ${i + 1}`, value: undefined, error: `invalid JSON: ${(e as Error).message}` });
    }
  });
  return out;
}

export async function run(argv: string[]): Promise<number> {
  const keyFiles: string[] = [];
  let input: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    if (a === '--public-key' || a === '--key') keyFiles.push(argv[++i] ?? '');
    else if (a.startsWith('--public-key=')) keyFiles.push(a.slice('--public-key='.length));
    else if (a.startsWith('-') && a !== '-') {
      process.stderr.write(`steward verify: unknown option '${a}'\n${USAGE}\n`);
      return 2;
    } else input = a;
  }
  if (keyFiles.length === 0 && process.env.STEWARD_VERIFY_KEY) keyFiles.push(process.env.STEWARD_VERIFY_KEY);
  if (keyFiles.length === 0) {
    process.stderr.write(`steward verify: --public-key PEM is required\n${USAGE}\n`);
    return 2;
  }
  let keys: KeyObject[];
  let text: string;
  try {
    keys = keyFiles.map((f) => createPublicKey(readFileSync(f, 'utf8')));
    text = await readAll(input ?? '-');
  } catch (e) {
    process.stderr.write(`steward verify: ${(e as Error).message}\n`);
    return 2;
  }
  const skipped: string[] = [];
  const items = verdictsOf(text, skipped);
  for (const line of skipped) process.stdout.write(line + '\n');
  if (items.length === 0) {
    process.stderr.write('steward verify: no verdict in the input\n');
    return 2;
  }
  let bad = 0;
  for (const it of items) {
    const r = it.error ? { ok: false, reason: it.error } : verifyWithKeys(it.value, keys);
    const id = (it.value as { metadata?: { trace_id?: string } } | undefined)?.metadata?.trace_id;
    if (r.ok) process.stdout.write(`OK ${it.where}${id ? ` ${id}` : ''} kid=${r.kid}\n`);
    else {
      bad++;
      process.stdout.write(`FAIL ${it.where}${id ? ` ${id}` : ''}: ${r.reason}\n`);
    }
  }
  return bad > 0 ? 1 : 0;
}
