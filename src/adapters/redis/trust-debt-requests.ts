/**
 * Remediation requests (ACGP-1004 §10.4.3) and the re-tiering queue (§10.6) of the Redis trust-debt store:
 * requests are filed and decided by Lua scripts (idempotent by request id), a granted credit is applied through
 * the store's own event path (idempotent by event id).
 */
import { StewardError } from '../../errors.js';
import { redisAdapterError, scanKeys, type RedisClient } from './client.js';
import { DEFAULT_TRUST_DEBT_CONFIG, assertRemediationAllowed, remediationError, remediationEventId, type RemediationDecision, type RemediationRequest, type RetierRequest, type TrustDebtChange, type TrustDebtEvent } from '../../engine/trust-debt/index.js';
import type { TrustDebtConfig } from '../../engine/types.js';
import { parseRequest, parseRetier } from './trust-debt-replies.js';
import { DECIDE_REMEDIATION_LUA, REQUEST_REMEDIATION_LUA, RESOLVE_RETIER_LUA } from './trust-debt-lua.js';

type Cmd = (...args: (string | number)[]) => Promise<unknown>;
interface Scripts {
  stewardTdRequest: Cmd;
  stewardTdDecide: Cmd;
}

export function redisError(e: unknown, what: string): StewardError {
  // A key that cannot be built (encodeURIComponent on a lone surrogate) fails the same way on every retry.
  if (e instanceof URIError) return new StewardError('STEWARD_TRACE_SCHEMA', `redis ${what}: id not encodable: ${e.message}`, { cause: e });
  // Script / wrong-type errors are dead-lettered with the reason; out of memory is STEWARD_STATE_OOM, retried by
  // the stage at most redis.oom_retry_ms and then dead-lettered (spec-decisions D32, docs/trust-debt.md).
  return redisAdapterError(e, what);
}

export class TrustDebtRequests {
  private readonly cmd: Scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    /** The re-tiering queue of the agent's slot, and the pattern matching every slot's queue (spec-decisions D28). */
    private readonly retierKey: (tenant: string, agentId: string) => string,
    private readonly retierPattern: string,
    private readonly apply: (ev: TrustDebtEvent, cfg: TrustDebtConfig) => Promise<TrustDebtChange>,
  ) {
    const r = redis as unknown as Partial<Scripts> & RedisClient;
    if (typeof r.stewardTdRequest !== 'function') {
      redis.defineCommand('stewardTdRequest', { numberOfKeys: 2, lua: REQUEST_REMEDIATION_LUA });
      redis.defineCommand('stewardTdDecide', { numberOfKeys: 2, lua: DECIDE_REMEDIATION_LUA });
    }
    this.cmd = redis as unknown as Scripts;
  }

  // One hash tag for all remediation requests: a request is decided by its id alone (the agent is read from
  // it), and the two scripts touch the request and the pending index together. Requests are filed by people,
  // so one slot holds them all.
  private remKey(requestId: string): string {
    return `${this.prefix}td-rem:{rem}:${requestId}`;
  }
  private get pendingKey(): string {
    return `${this.prefix}td-rem-pending:{rem}`;
  }

  async request(
    tenant: string,
    agentId: string,
    req: { requestId: string; reason: string; atMs: number },
    cfg: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG,
  ): Promise<RemediationRequest> {
    assertRemediationAllowed(cfg, req.requestId);
    try {
      return parseRequest(await this.cmd.stewardTdRequest(this.remKey(req.requestId), this.pendingKey, req.requestId, tenant, agentId, req.reason, String(req.atMs)));
    } catch (e) {
      if (e instanceof Error && e.message.includes('CONFLICT')) {
        throw remediationError(`request id ${req.requestId} belongs to another agent`, req.requestId);
      }
      throw redisError(e, 'remediation request');
    }
  }

  async decide(
    requestId: string,
    decision: 'grant' | 'deny',
    opts: RemediationDecision,
    cfg: TrustDebtConfig = DEFAULT_TRUST_DEBT_CONFIG,
  ): Promise<{ request: RemediationRequest; change?: TrustDebtChange }> {
    const status = decision === 'grant' ? 'granted' : 'denied';
    const credit = -Math.abs(opts.credit ?? cfg.recovery.successfulReviewCredit);
    let request: RemediationRequest;
    try {
      request = parseRequest(await this.cmd.stewardTdDecide(this.remKey(requestId), this.pendingKey, requestId, status, opts.reviewer, String(opts.atMs), String(credit)));
    } catch (e) {
      const msg = e instanceof Error ? e.message : '';
      if (msg.includes('NOTFOUND')) throw remediationError(`no remediation request ${requestId}`, requestId);
      const conflict = /CONFLICT:(\w+)/.exec(msg);
      if (conflict) throw remediationError(`remediation request ${requestId} is already ${conflict[1]}`, requestId);
      throw redisError(e, 'remediation decision');
    }
    if (request.status !== 'granted') return { request };
    // Second step, idempotent by event id: a retry after a crash between the two steps applies the credit once.
    const change = await this.apply(
      { eventId: remediationEventId(requestId), tenant: request.tenant, agentId: request.agentId, atMs: request.decidedAtMs ?? opts.atMs, kind: 'remediation_granted', credit: request.credit },
      cfg,
    );
    return { request, change };
  }

  async get(requestId: string): Promise<RemediationRequest | undefined> {
    const flat = await this.redis.hgetall(this.remKey(requestId));
    if (!flat.requestId) return undefined;
    return parseRequest(Object.entries(flat).flat());
  }

  async pending(tenant?: string): Promise<RemediationRequest[]> {
    const ids = await this.redis.zrange(this.pendingKey, 0, -1);
    const all = await Promise.all(ids.map((id) => this.get(id)));
    return all
      .filter((r): r is RemediationRequest => r !== undefined && r.status === 'pending' && (tenant === undefined || r.tenant === tenant))
      .sort((a, b) => a.atMs - b.atMs || a.requestId.localeCompare(b.requestId));
  }

  /** Oldest first across every slot's queue: by event time, then event id (there is no arrival order across slots). */
  async retierQueue(limit = 1000): Promise<RetierRequest[]> {
    const keys = await scanKeys(this.redis, this.retierPattern);
    const lists = await Promise.all(keys.map((k) => this.redis.lrange(k, 0, limit - 1)));
    const all = lists.flat().map(parseRetier);
    all.sort((a, b) => a.atMs - b.atMs || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
    return all.slice(0, limit);
  }

  async resolveRetier(tenant: string, agentId: string): Promise<RetierRequest[]> {
    let items: string[];
    try {
      items = (await this.redis.eval(RESOLVE_RETIER_LUA, 1, this.retierKey(tenant, agentId), tenant, agentId)) as string[];
    } catch (e) {
      throw redisError(e, 'resolve re-tiering request');
    }
    return items.map(parseRetier);
  }
}
