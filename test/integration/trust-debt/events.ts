/** Deterministic event streams for the multi-process trust-debt tests (same seed → same events in every process). */
import { trustDebtConfigFrom, type TrustDebtEvent } from '../../../src/engine/trust-debt/index.js';
import type { Intervention } from '../../../src/engine/types.js';

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The settings the streams are applied with: §10.1 defaults plus the (opt-in) §10.1 example audit, so audits happen too. */
export const STREAM_CFG = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 168, credit: -0.2 } } });

const KINDS: Intervention[] = ['ok', 'ok', 'ok', 'nudge', 'flag', 'escalate', 'block', 'halt'];

/**
 * `total` deliveries over `agents` agents, `dupRatio` of them redeliveries of an earlier event (same
 * id, same content). Times move forward 0–3 h per agent, so decay and audits both happen.
 */
export function eventStream(seed: number, total: number, dupRatio: number, agents: number): TrustDebtEvent[] {
  const rnd = mulberry32(seed);
  const out: TrustDebtEvent[] = [];
  const clock = new Array<number>(agents).fill(Date.UTC(2026, 0, 1));
  let n = 0;
  while (out.length < total) {
    if (out.length > 0 && rnd() < dupRatio) {
      out.push({ ...out[Math.floor(rnd() * out.length)]! });
      continue;
    }
    const a = Math.floor(rnd() * agents);
    clock[a] += Math.floor(rnd() * 3 * 3_600_000);
    const r = rnd();
    const base = { eventId: `ev-${seed}-${n++}`, tenant: 'conc', agentId: `agent-${a}`, atMs: clock[a]! };
    if (r < 0.05) out.push({ ...base, kind: 'review_approved' });
    else {
      const sev = rnd();
      out.push({ ...base, kind: 'intervention', intervention: KINDS[Math.floor(rnd() * KINDS.length)]!, severity: sev < 0.1 ? 'severe' : sev < 0.3 ? 'critical' : undefined });
    }
  }
  return out;
}
