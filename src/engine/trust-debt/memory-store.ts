/**
 * Embedded in-memory trust-debt store: `steward eval` and unit tests. Same contract and the same
 * state machine (`advance`) as the Redis store, so both pass one shared test suite.
 */
import { StewardError } from '../../errors.js';
import type { TrustDebtConfig, TrustDebtLevel } from '../types.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from './config.js';
import { advance, debtAt, levelFor, runAudits, type AgentDebtState, type StepChange } from './math.js';
import {
  auditEventId,
  causeOf,
  deltaFor,
  remediationEventId,
  resetsWindow,
  type RemediationDecision,
  type RemediationRequest,
  type RetierRequest,
  type TrustDebtChange,
  type TrustDebtEvent,
  type TrustDebtStore,
} from './store.js';

interface AgentEntry {
  tenant: string;
  agentId: string;
  state: AgentDebtState;
  seen: Map<string, TrustDebtChange>;
}

export function toChange(
  c: StepChange,
  meta: { eventId: string; tenant: string; agentId: string; cause: string; duplicate?: boolean },
): TrustDebtChange {
  return {
    eventId: meta.eventId,
    tenant: meta.tenant,
    agentId: meta.agentId,
    atMs: c.atMs,
    cause: meta.cause,
    before: c.before,
    after: c.after,
    level: c.level,
    previousLevel: c.previousLevel,
    crossings: c.crossings,
    duplicate: meta.duplicate ?? false,
  };
}

export function auditChanges(tenant: string, agentId: string, steps: StepChange[]): TrustDebtChange[] {
  return steps.map((c) => toChange(c, { eventId: auditEventId(tenant, agentId, c.atMs), tenant, agentId, cause: 'good_behavior_audit' }));
}

export function remediationError(message: string, requestId: string): StewardError {
  return new StewardError('STEWARD_REMEDIATION', message, { details: { requestId } });
}

/** Throws unless the agent's trust_debt settings accept remediation requests (every store checks this first). */
export function assertRemediationAllowed(cfg: TrustDebtConfig, requestId: string): void {
  if (!cfg.recovery.enabled || !cfg.recovery.agentRemediationRequest) {
    throw remediationError('agent remediation requests are disabled for this agent (trust_debt.recovery.agent_remediation_request)', requestId);
  }
}

export class MemoryTrustDebtStore implements TrustDebtStore {
  private readonly agents = new Map<string, AgentEntry>();
  private readonly remediations = new Map<string, RemediationRequest>();
  private readonly retier: RetierRequest[] = [];

  private key(tenant: string, agentId: string): string {
    return `${tenant}\u0000${agentId}`;
  }

  async current(tenant: string, agentId: string, atMs: number, cfg: TrustDebtConfig): Promise<{ debt: number; level: TrustDebtLevel }> {
    const debt = debtAt(this.agents.get(this.key(tenant, agentId))?.state, atMs, cfg);
    return { debt, level: levelFor(debt, cfg) };
  }

  async apply(ev: TrustDebtEvent, cfg: TrustDebtConfig): Promise<TrustDebtChange> {
    const k = this.key(ev.tenant, ev.agentId);
    let entry = this.agents.get(k);
    const prior = entry?.seen.get(ev.eventId);
    if (prior) {
      const dup: TrustDebtChange = { ...prior, duplicate: true };
      if (prior.audits) dup.audits = prior.audits.map((a) => ({ ...a, duplicate: true }));
      return dup;
    }
    const cause = causeOf(ev);
    if (!cfg.enabled) {
      const { debt, level } = await this.current(ev.tenant, ev.agentId, ev.atMs, cfg);
      return { eventId: ev.eventId, tenant: ev.tenant, agentId: ev.agentId, atMs: ev.atMs, cause, before: debt, after: debt, level, previousLevel: level, crossings: [], duplicate: false };
    }
    const r = advance(entry?.state, { atMs: ev.atMs, delta: deltaFor(ev, cfg), resetsWindow: resetsWindow(ev), deferAudits: ev.deferAudits === true }, cfg);
    if (!entry) {
      entry = { tenant: ev.tenant, agentId: ev.agentId, state: r.state, seen: new Map() };
      this.agents.set(k, entry);
    }
    entry.state = r.state;
    const change = toChange(r.change, { eventId: ev.eventId, tenant: ev.tenant, agentId: ev.agentId, cause });
    const audits = auditChanges(ev.tenant, ev.agentId, r.audits);
    if (audits.length > 0) change.audits = audits;
    entry.seen.set(ev.eventId, change);
    for (const c of [...audits, change]) this.enqueueRetier(c);
    return change;
  }

  private enqueueRetier(c: TrustDebtChange): void {
    if (c.crossings.some((x) => x.threshold === 're_tiering_review' && x.direction === 'up')) {
      this.retier.push({ tenant: c.tenant, agentId: c.agentId, eventId: c.eventId, atMs: c.atMs, debt: c.after });
    }
  }

  async sweep(atMs: number, cfgFor: (tenant: string, agentId: string) => TrustDebtConfig): Promise<TrustDebtChange[]> {
    const out: TrustDebtChange[] = [];
    for (const entry of this.agents.values()) {
      const { state, changes } = runAudits(entry.state, atMs, cfgFor(entry.tenant, entry.agentId));
      entry.state = state;
      const audits = auditChanges(entry.tenant, entry.agentId, changes);
      for (const c of audits) this.enqueueRetier(c);
      out.push(...audits);
    }
    return out;
  }

  async requestRemediation(
    tenant: string,
    agentId: string,
    req: { requestId: string; reason: string; atMs: number },
    cfg: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG,
  ): Promise<RemediationRequest> {
    assertRemediationAllowed(cfg, req.requestId);
    const existing = this.remediations.get(req.requestId);
    if (existing) {
      if (existing.tenant !== tenant || existing.agentId !== agentId) throw remediationError(`request id ${req.requestId} belongs to another agent`, req.requestId);
      return { ...existing };
    }
    const r: RemediationRequest = { requestId: req.requestId, tenant, agentId, reason: req.reason, atMs: req.atMs, status: 'pending' };
    this.remediations.set(req.requestId, r);
    return { ...r };
  }

  async decideRemediation(
    requestId: string,
    decision: 'grant' | 'deny',
    opts: RemediationDecision,
    cfg: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG,
  ): Promise<{ request: RemediationRequest; change?: TrustDebtChange }> {
    const r = this.remediations.get(requestId);
    if (!r) throw remediationError(`no remediation request ${requestId}`, requestId);
    const status = decision === 'grant' ? 'granted' : 'denied';
    if (r.status !== 'pending' && r.status !== status) throw remediationError(`remediation request ${requestId} is already ${r.status}`, requestId);
    if (r.status === 'pending') {
      r.status = status;
      r.reviewer = opts.reviewer;
      r.decidedAtMs = opts.atMs;
      if (status === 'granted') r.credit = -Math.abs(opts.credit ?? cfg.recovery.successfulReviewCredit);
    }
    if (r.status === 'denied') return { request: { ...r } };
    const change = await this.apply(
      { eventId: remediationEventId(requestId), tenant: r.tenant, agentId: r.agentId, atMs: r.decidedAtMs ?? opts.atMs, kind: 'remediation_granted', credit: r.credit },
      cfg,
    );
    return { request: { ...r }, change };
  }

  async getRemediation(requestId: string): Promise<RemediationRequest | undefined> {
    const r = this.remediations.get(requestId);
    return r ? { ...r } : undefined;
  }

  async pendingRemediations(tenant?: string): Promise<RemediationRequest[]> {
    return [...this.remediations.values()]
      .filter((r) => r.status === 'pending' && (tenant === undefined || r.tenant === tenant))
      .sort((a, b) => a.atMs - b.atMs || a.requestId.localeCompare(b.requestId))
      .map((r) => ({ ...r }));
  }

  async retierQueue(limit = 1000): Promise<RetierRequest[]> {
    return this.retier.slice(0, limit).map((r) => ({ ...r }));
  }

  async resolveRetier(tenant: string, agentId: string): Promise<RetierRequest[]> {
    const out: RetierRequest[] = [];
    for (let i = 0; i < this.retier.length; ) {
      const r = this.retier[i]!;
      if (r.tenant === tenant && r.agentId === agentId) out.push(...this.retier.splice(i, 1));
      else i++;
    }
    return out;
  }
}
