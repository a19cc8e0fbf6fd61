/**
 * Approvers (gate spec §6; docs/approvals.md "Approvers"): a registry of identities with Ed25519 public keys
 * (for signed answers on acgp.approvals and `steward approve|deny`) and hashed API keys (for the HTTP route),
 * each with roles that hold for some tenants and agent tiers — the delegation rule: a request's role may be
 * answered by any approver holding that role for the request's tenant and tier.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { parse } from 'yaml';
import { StewardError } from '../../errors.js';
import type { ApprovalRequest } from './policy.js';

export interface ApproverRole {
  role: string;
  /** Tenants the role holds for; undefined: every tenant. */
  tenants?: string[];
  /** Agent tiers the role holds for; undefined: every tier. */
  tiers?: string[];
}

export interface Approver {
  id: string;
  publicKeys: KeyObject[];
  /** `sha256:<64 hex>` of each API key's text (the key itself is never stored). */
  apiKeys: string[];
  roles: ApproverRole[];
}

export interface ApproverRegistry {
  approvers: ReadonlyMap<string, Approver>;
  /** The approver an HTTP API key belongs to. */
  byApiKey(key: string): Approver | undefined;
}

export type ApprovalDecision = 'approve' | 'deny';

/** An approver's answer as it travels (acgp.approvals `kind: answer`). */
export interface ApprovalAnswer {
  approval_id: string;
  decision: ApprovalDecision;
  approver: string;
  reason?: string;
  ts_ms: number;
  /** Ed25519 (base64) over `answerSigningText`; absent on the authenticated HTTP route. */
  signature?: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strs = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.map(String) : undefined);

export const apiKeyHash = (key: string): string => 'sha256:' + createHash('sha256').update(key, 'utf8').digest('hex');

/** `approvers.yaml`: `approvers: [{id, public_keys: [PEM], api_keys: [sha256:hex], roles: [{role, tenants?, tiers?}]}]`. */
export function parseApproverRegistry(text: string, file: string): ApproverRegistry {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: invalid YAML: ${(e as Error).message}`);
  }
  if (!isObj(doc) || !Array.isArray(doc.approvers)) throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: expected an 'approvers' list`);
  const approvers = new Map<string, Approver>();
  const byKey = new Map<string, Approver>();
  doc.approvers.forEach((a, i) => {
    if (!isObj(a) || typeof a.id !== 'string' || a.id === '') throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: approvers[${i}] needs an id`);
    if (approvers.has(a.id)) throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: approver '${a.id}' is listed twice`);
    const publicKeys = (strs(a.public_keys) ?? []).map((pem, j) => {
      try {
        const k = createPublicKey(pem);
        if (k.asymmetricKeyType !== 'ed25519') throw new Error(`an ${k.asymmetricKeyType} key`);
        return k;
      } catch (e) {
        throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: approver '${a.id}' public_keys[${j}] is no Ed25519 public key (${(e as Error).message})`);
      }
    });
    const apiKeys = strs(a.api_keys) ?? [];
    for (const k of apiKeys) if (!/^sha256:[0-9a-f]{64}$/.test(k)) throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: approver '${a.id}': api_keys are stored hashed as sha256:<64 hex>`);
    const roles: ApproverRole[] = (Array.isArray(a.roles) ? a.roles : []).map((r) =>
      typeof r === 'string' ? { role: r } : isObj(r) && typeof r.role === 'string' ? { role: r.role, ...(strs(r.tenants) && { tenants: strs(r.tenants) }), ...(strs(r.tiers) && { tiers: strs(r.tiers) }) } : { role: '' },
    );
    if (roles.some((r) => r.role === '')) throw new StewardError('STEWARD_APPROVAL_REGISTRY', `${file}: approver '${a.id}': roles are names or {role, tenants?, tiers?}`);
    const ap: Approver = { id: a.id, publicKeys, apiKeys, roles };
    approvers.set(a.id, ap);
    for (const k of apiKeys) byKey.set(k, ap);
  });
  return { approvers, byApiKey: (key) => byKey.get(apiKeyHash(key)) };
}

/** Whether `ap` may answer `req`: a role matching the request's (any role when it names none) for its tenant and tier. */
export function mayAnswer(ap: Approver, req: Pick<ApprovalRequest, 'role' | 'tenant' | 'agent_tier'>): boolean {
  return ap.roles.some((r) => (req.role === null || r.role === req.role) && (!r.tenants || r.tenants.includes(req.tenant)) && (!r.tiers || r.tiers.includes(req.agent_tier)));
}

/** What an approver signs: every field that decides the outcome, one per line (no JSON canonicalisation needed). */
export function answerSigningText(a: Pick<ApprovalAnswer, 'approval_id' | 'decision' | 'approver' | 'ts_ms'>): string {
  return `acgp-approval-answer:v1\n${a.approval_id}\n${a.decision}\n${a.approver}\n${a.ts_ms}`;
}

export function signatureValid(ap: Approver, a: ApprovalAnswer): boolean {
  if (!a.signature) return false;
  const sig = Buffer.from(a.signature, 'base64');
  const data = Buffer.from(answerSigningText(a), 'utf8');
  return ap.publicKeys.some((k) => verify(null, data, k, sig));
}

export type AnswerCheck = { ok: true; approver: Approver } | { ok: false; code: string; message: string };

/** How far an approver's clock may be behind the broker's when it signs (docs/approvals.md "Answering"). */
export const ANSWER_CLOCK_SKEW_MS = 5 * 60_000;

/** The approver exists and the signature is one of its keys' (no request needed: checked before looking it up). */
export function checkAnswerSignature(reg: ApproverRegistry, a: ApprovalAnswer): AnswerCheck {
  const ap = reg.approvers.get(a.approver);
  if (!ap) return { ok: false, code: 'STEWARD_APPROVAL_UNKNOWN_APPROVER', message: `approver '${a.approver}' is not in the approver registry` };
  if (!signatureValid(ap, a)) return { ok: false, code: 'STEWARD_APPROVAL_SIGNATURE', message: `answer to ${a.approval_id} is not signed by a key of approver '${a.approver}'` };
  return { ok: true, approver: ap };
}

/**
 * A signed answer (Kafka, CLI): the approver exists, the signature is theirs, it was signed while the request was
 * open (requested_ms - skew ≤ ts_ms ≤ deadline_ms: a captured answer cannot be replayed for ever), and they may
 * answer this request.
 */
export function checkSignedAnswer(reg: ApproverRegistry, a: ApprovalAnswer, req: ApprovalRequest): AnswerCheck {
  const sig = checkAnswerSignature(reg, a);
  return sig.ok ? checkAnswerFor(sig.approver, a, req) : sig;
}

/** The request-side half of checkSignedAnswer, for an answer whose signature `approver`'s key already verified. */
export function checkAnswerFor(approver: Approver, a: ApprovalAnswer, req: ApprovalRequest): AnswerCheck {
  const sig = { ok: true as const, approver };
  if (a.ts_ms < req.requested_ms - ANSWER_CLOCK_SKEW_MS || a.ts_ms > req.deadline_ms) {
    return { ok: false, code: 'STEWARD_APPROVAL_STALE', message: `answer to ${a.approval_id} was signed at ${a.ts_ms}, outside the request's window [${req.requested_ms - ANSWER_CLOCK_SKEW_MS}, ${req.deadline_ms}]` };
  }
  if (!mayAnswer(sig.approver, req)) return { ok: false, code: 'STEWARD_APPROVAL_FORBIDDEN', message: `approver '${sig.approver.id}' holds no role ${req.role ?? '(any)'} for tenant ${req.tenant}, tier ${req.agent_tier}` };
  return sig;
}
