/** Decoding of the trust-debt store's Redis replies (remediation requests, re-tiering queue entries). */
import type { RemediationRequest, RetierRequest } from '../../engine/trust-debt/index.js';

/** A remediation request from its hash (HGETALL's flat field/value list). */
export function parseRequest(flat: unknown): RemediationRequest {
  const a = flat as string[];
  const m: Record<string, string> = {};
  for (let i = 0; i + 1 < a.length; i += 2) m[a[i]!] = a[i + 1]!;
  const r: RemediationRequest = {
    requestId: m.requestId!,
    tenant: m.tenant!,
    agentId: m.agentId!,
    reason: m.reason ?? '',
    atMs: Number(m.atMs),
    status: m.status as RemediationRequest['status'],
  };
  if (m.reviewer !== undefined) r.reviewer = m.reviewer;
  if (m.decidedAtMs !== undefined) r.decidedAtMs = Number(m.decidedAtMs);
  if (m.credit !== undefined) r.credit = Number(m.credit);
  return r;
}

/** A re-tiering queue entry (JSON). */
export function parseRetier(s: string): RetierRequest {
  const o = JSON.parse(s) as Record<string, string>;
  return { tenant: o.tenant!, agentId: o.agentId!, eventId: o.eventId!, atMs: Number(o.atMs), debt: Number(o.debt) };
}
