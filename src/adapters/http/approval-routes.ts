/**
 * The approvers' HTTP route (docs/approvals.md "Answering"): `POST /v1/approvals/{id}/approve|deny` with an
 * approver's API key in X-API-Key (the approver registry keeps its sha256). Outside the agents' scope: an
 * agent key never answers an approval, an approver key never sends traces. The key is authenticated before
 * anything else, and only then rate-limited — by approver id, in a limiter of the route's own: a flood of
 * random keys must neither create buckets nor reset the agents' ones. The answer itself (role check, the one
 * transition in Redis, publishing the outcome) is the process's `answer`.
 */
import type { FastifyInstance } from 'fastify';

export type ApprovalAnswerFn = (apiKey: string, approvalId: string, decision: 'approve' | 'deny', reason: string | undefined) => Promise<{ status: number; body: Record<string, unknown> }>;

export interface ApprovalRouteDeps {
  /** The approver id an API key belongs to (registry lookup by its sha256); undefined: no approver's key. */
  approverOf(apiKey: string): string | undefined;
  answer: ApprovalAnswerFn;
}

const errorSchema = { type: 'object', properties: { error: { type: 'string' }, message: { type: 'string' } } } as const;

export function registerApprovalRoutes(app: FastifyInstance, deps: ApprovalRouteDeps, rateLimit: (approverId: string) => number): void {
  for (const decision of ['approve', 'deny'] as const) {
    app.post(
      `/v1/approvals/:approval_id/${decision}`,
      {
        schema: {
          summary: `${decision === 'approve' ? 'Approve' : 'Deny'} a pending tool call (an approver's API key; docs/approvals.md)`,
          security: [{ apiKey: [] }],
          params: { type: 'object', required: ['approval_id'], properties: { approval_id: { type: 'string', minLength: 1, maxLength: 64 } } },
          body: { type: ['object', 'null'], properties: { reason: { type: 'string', maxLength: 2000 } }, additionalProperties: false },
          response: { 200: { type: 'object', additionalProperties: true }, 409: { type: 'object', additionalProperties: true }, '4xx': errorSchema, '5xx': errorSchema },
        },
      },
      async (req, reply) => {
        const key = req.headers['x-api-key'];
        if (typeof key !== 'string' || key === '') return reply.code(401).send({ error: 'STEWARD_HTTP_UNAUTHORIZED', message: "an approver's API key (X-API-Key) is required" });
        const approver = deps.approverOf(key);
        if (approver === undefined) return reply.code(401).send({ error: 'STEWARD_HTTP_UNAUTHORIZED', message: 'unknown approver key' });
        const wait = rateLimit(approver);
        if (wait > 0) return reply.code(429).header('retry-after', String(wait)).send({ error: 'STEWARD_HTTP_RATE', message: 'too many requests for this approver' });
        const { approval_id } = req.params as { approval_id: string };
        const reason = (req.body as { reason?: string } | null)?.reason;
        const r = await deps.answer(key, approval_id, decision, reason);
        if (r.status >= 400 && r.status !== 409) return reply.code(r.status).send({ error: r.status === 401 ? 'STEWARD_HTTP_UNAUTHORIZED' : r.status === 403 ? 'STEWARD_APPROVAL_FORBIDDEN' : 'STEWARD_HTTP_NOT_FOUND', message: String(r.body.error ?? '') });
        return reply.code(r.status).send(r.body);
      },
    );
  }
}
