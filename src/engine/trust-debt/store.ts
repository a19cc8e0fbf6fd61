/**
 * The trust-debt store contract. Implemented by MemoryTrustDebtStore (`steward eval`, unit tests) and
 * RedisTrustDebtStore (stream stages, many instances). One shared test suite runs against both.
 */
import type { Intervention, TrustDebtConfig, TrustDebtLevel } from '../types.js';
import { accumulationFor, asCredit, type Crossing, type ThresholdName } from './math.js';

export type TrustDebtEventKind = 'intervention' | 'review_approved' | 'remediation_granted' | 'audit_credit';

export interface TrustDebtEvent {
  /** Idempotency key: an event id is applied once per agent even when redelivered. Use the trace id for interventions. */
  eventId: string;
  tenant: string;
  agentId: string;
  /** Event time (trace timestamp in eval, event time in the stream), ms since epoch. */
  atMs: number;
  kind: TrustDebtEventKind;
  intervention?: Intervention;
  /** Severity of the tripwire that produced the final intervention; undefined = standard (spec-decisions D15). */
  severity?: string;
  /** Credit override for recovery kinds (negative; a positive value is read as the same credit). */
  credit?: number;
  /**
   * Leave good-behaviour audit credits that fell due before this event to the agent's next event or the
   * sweep: set on wall-clock events (reviews) applied while the pipeline is behind, whose lazy audits would
   * otherwise credit windows a non-ok event still in the backlog belongs to (docs/trust-debt.md).
   */
  deferAudits?: boolean;
}

export interface TrustDebtChange {
  eventId: string;
  tenant: string;
  agentId: string;
  atMs: number;
  /** `intervention:<name>`, `review_approved`, `remediation_granted`, `audit_credit`, `good_behavior_audit`. */
  cause: string;
  /** The stored value decayed to atMs (after any audit credits due before it). */
  before: number;
  after: number;
  level: TrustDebtLevel;
  /** The level last recorded for the agent (decay-driven down-crossings are reported here). */
  previousLevel: TrustDebtLevel;
  crossings: { threshold: ThresholdName; direction: 'up' | 'down' }[];
  /** True when this event id had been applied before: the original change is returned, nothing moved. */
  duplicate: boolean;
  /** Good-behaviour audit credits (§10.4.2) that fell due before this event and were applied first. */
  audits?: TrustDebtChange[];
}

export type RemediationStatus = 'pending' | 'granted' | 'denied';

export interface RemediationRequest {
  requestId: string;
  tenant: string;
  agentId: string;
  reason: string;
  atMs: number;
  status: RemediationStatus;
  reviewer?: string;
  decidedAtMs?: number;
  /** The credit granted (negative), when granted. */
  credit?: number;
}

export interface RemediationDecision {
  reviewer: string;
  /** Credit to grant (negative, or positive read as the same credit); default successful_review_credit. */
  credit?: number;
  atMs: number;
}

/** A queued ARS re-evaluation (§10.6 re_tiering_review crossed upwards). */
export interface RetierRequest {
  tenant: string;
  agentId: string;
  eventId: string;
  atMs: number;
  debt: number;
}

export interface TrustDebtStore {
  /** Decayed read at atMs (pending audit credits included), no write. Unknown agents read as the floor. */
  current(tenant: string, agentId: string, atMs: number, cfg: TrustDebtConfig): Promise<{ debt: number; level: TrustDebtLevel }>;
  /** Atomic: due audit credits, lazy decay, increment/credit, cap/floor, crossings; idempotent by eventId. */
  apply(ev: TrustDebtEvent, cfg: TrustDebtConfig): Promise<TrustDebtChange>;
  /** Grants good-behaviour audit credits due by atMs for every known agent (each window once). */
  sweep(atMs: number, cfgFor: (tenant: string, agentId: string) => TrustDebtConfig): Promise<TrustDebtChange[]>;
  /** §10.4.3: the agent asks for re-evaluation; stays pending until decided. Idempotent by requestId. */
  requestRemediation(
    tenant: string,
    agentId: string,
    req: { requestId: string; reason: string; atMs: number },
    cfg?: TrustDebtConfig,
  ): Promise<RemediationRequest>;
  /** Grant (credit applied once, event id `remediation:<requestId>`) or deny a pending request. */
  decideRemediation(
    requestId: string,
    decision: 'grant' | 'deny',
    opts: RemediationDecision,
    cfg?: TrustDebtConfig,
  ): Promise<{ request: RemediationRequest; change?: TrustDebtChange }>;
  getRemediation(requestId: string): Promise<RemediationRequest | undefined>;
  /** Pending requests, oldest first; optionally one tenant's. */
  pendingRemediations(tenant?: string): Promise<RemediationRequest[]>;
  /** Queued re-tiering requests, oldest first, without removing them. */
  retierQueue(limit?: number): Promise<RetierRequest[]>;
  /** A reviewer resolved the agent's re-tiering review: removes its queued requests atomically and returns them. */
  resolveRetier(tenant: string, agentId: string): Promise<RetierRequest[]>;
}

/** The debt delta an event carries (positive = debt, negative = credit); 0 when disabled by config. */
export function deltaFor(ev: TrustDebtEvent, cfg: TrustDebtConfig): number {
  if (!cfg.enabled) return 0;
  if (ev.kind === 'intervention') return ev.intervention ? accumulationFor(ev.intervention, ev.severity, cfg) : 0;
  if (!cfg.recovery.enabled) return 0;
  switch (ev.kind) {
    case 'review_approved':
    case 'remediation_granted':
      return asCredit(ev.credit ?? cfg.recovery.successfulReviewCredit);
    case 'audit_credit':
      return asCredit(ev.credit ?? cfg.recovery.goodBehaviorAudit.credit);
    default:
      // a kind read off a message that is none of the above moves nothing (never `undefined` → NaN)
      return 0;
  }
}

export function causeOf(ev: TrustDebtEvent): string {
  return ev.kind === 'intervention' ? `intervention:${ev.intervention ?? 'ok'}` : ev.kind;
}

/** Only a non-ok intervention breaks the good-behaviour window (§10.4.2). */
export function resetsWindow(ev: TrustDebtEvent): boolean {
  return ev.kind === 'intervention' && ev.intervention !== undefined && ev.intervention !== 'ok';
}

export function auditEventId(tenant: string, agentId: string, dueMs: number): string {
  return `audit:${tenant}:${agentId}:${dueMs}`;
}

export function remediationEventId(requestId: string): string {
  return `remediation:${requestId}`;
}

export type { Crossing };
