/**
 * The approvers' HTTP route (docs/approvals.md "Answering"): `POST /v1/approvals/{id}/approve|deny` with an
 * approver's API key in X-API-Key (the approver registry keeps its sha256). Outside the agents' scope: an
 * agent key never answers an approval, an approver key never sends traces. The key is authenticated before
 * anything else, and only then rate-limited — by approver id, in a limiter of the route's own: a flood of
 * random keys must neither create buckets nor reset the agents' ones. The answer itself (role check, the one
 * transition in Redis, publishing the outcome) is the process's `answer`.
 */
import type { FastifyInstance } from 'fastify';
import type { ApprovalOutcome } from '../../engine/approvals/outcome.js';
import type { ApprovalRequest } from '../../engine/approvals/policy.js';

export type ApprovalAnswerFn = (apiKey: string, approvalId: string, decision: 'approve' | 'deny', reason: string | undefined) => Promise<{ status: number; body: Record<string, unknown> }>;

export interface ApprovalRouteDeps {
  /** The approver id an API key belongs to (registry lookup by its sha256); undefined: no approver's key. */
  approverOf(apiKey: string): string | undefined;
  answer: ApprovalAnswerFn;
}

/** An answer's body is `{reason}` (at most 2 000 characters): 16 KiB leaves room for JSON escapes. */
export const APPROVAL_BODY_LIMIT = 16 * 1024;

const errorSchema = { type: 'object', properties: { error: { type: 'string' }, message: { type: 'string' } } } as const;

export function registerApprovalRoutes(app: FastifyInstance, deps: ApprovalRouteDeps, rateLimit: (approverId: string) => number): void {
  for (const decision of ['approve', 'deny'] as const) {
    app.post(
      `/v1/approvals/:approval_id/${decision}`,
      {
        // The key and the rate limit are checked before the body is read, and the body is small: these routes sit
        // outside the agents' scope and its in-flight byte budget, so an anonymous client could otherwise hold up to
        // max_body_bytes per connection until the client timeout (review of #24 r4 fixes, finding 1).
        bodyLimit: APPROVAL_BODY_LIMIT,
        onRequest: async (req, reply) => {
          const key = req.headers['x-api-key'];
          if (typeof key !== 'string' || key === '') return reply.code(401).send({ error: 'STEWARD_HTTP_UNAUTHORIZED', message: "an approver's API key (X-API-Key) is required" });
          const approver = deps.approverOf(key);
          if (approver === undefined) return reply.code(401).send({ error: 'STEWARD_HTTP_UNAUTHORIZED', message: 'unknown approver key' });
          const wait = rateLimit(approver);
          if (wait > 0) return reply.code(429).header('retry-after', String(wait)).send({ error: 'STEWARD_HTTP_RATE', message: 'too many requests for this approver' });
        },
        schema: {
          summary: `${decision === 'approve' ? 'Approve' : 'Deny'} a pending tool call (an approver's API key; docs/approvals.md)`,
          security: [{ apiKey: [] }],
          params: { type: 'object', required: ['approval_id'], properties: { approval_id: { type: 'string', minLength: 1, maxLength: 64 } } },
          body: { type: ['object', 'null'], properties: { reason: { type: 'string', maxLength: 2000 } }, additionalProperties: false },
          response: { 200: { type: 'object', additionalProperties: true }, 409: { type: 'object', additionalProperties: true }, '4xx': errorSchema, '5xx': errorSchema },
        },
      },
      async (req, reply) => {
        const key = req.headers['x-api-key'] as string;
        const { approval_id } = req.params as { approval_id: string };
        const reason = (req.body as { reason?: string } | null)?.reason;
        const r = await deps.answer(key, approval_id, decision, reason);
        if (r.status >= 400 && r.status !== 409) return reply.code(r.status).send({ error: r.status === 401 ? 'STEWARD_HTTP_UNAUTHORIZED' : r.status === 403 ? 'STEWARD_APPROVAL_FORBIDDEN' : 'STEWARD_HTTP_NOT_FOUND', message: String(r.body.error ?? '') });
        return reply.code(r.status).send(r.body);
      },
    );
  }
}

/** What the agent's status route needs of the approval store (RedisApprovalStore.request and status). */
export type ApprovalStatusFn = (approvalId: string) => Promise<{ request: ApprovalRequest; status: string; outcome?: ApprovalOutcome } | undefined>;

/**
 * `GET /v1/approvals/{id}` for an agent's API key (docs/approvals.md "Waiting"): the status of one of the key's
 * agent's own approvals, and its outcome once decided — so an agent over HTTP learns the outcome without any read
 * of acgp.approvals, which holds every tenant's requests (review finding 3). Registered inside the agents'
 * authenticated scope; another agent's approval is 404 exactly like an unknown one.
 */
export function registerAgentApprovalRoute(app: FastifyInstance, status: ApprovalStatusFn): void {
  app.get(
    '/v1/approvals/:approval_id',
    {
      schema: {
        summary: "The status and outcome of one of the key's agent's approvals (docs/approvals.md)",
        security: [{ apiKey: [] }],
        params: { type: 'object', required: ['approval_id'], properties: { approval_id: { type: 'string', minLength: 1, maxLength: 64 } } },
        response: { 200: { type: 'object', additionalProperties: true }, '4xx': errorSchema, '5xx': errorSchema },
      },
    },
    async (req, reply) => {
      const { approval_id } = req.params as { approval_id: string };
      const found = await status(approval_id);
      if (!found || found.request.agent_id !== req.agent!.id || found.request.tenant !== req.agent!.tenant) {
        return reply.code(404).send({ error: 'STEWARD_HTTP_NOT_FOUND', message: `no approval ${approval_id} of this agent` });
      }
      const o = found.outcome;
      return reply.code(200).send({
        approval_id,
        status: o?.status ?? found.status,
        tool: found.request.tool,
        requested_ms: found.request.requested_ms,
        deadline_ms: found.request.deadline_ms,
        ...(o && { decision: o.decision, approver: o.approver, reason: o.reason, via: o.via, decided_ms: o.decided_ms }),
      });
    },
  );
}
