/**
 * The acgp client's query routes (docs/http.md "Queries", D43): a stored verdict's scores and feedback and a
 * decision's oversight, of one of the key's agent's traces.
 */
import type { FastifyInstance } from 'fastify';
import { errorSchema } from './ingress-schemas.js';

/** Reads one stored row of the agent's trace, or undefined (nothing stored, or another agent's trace). */
export type QueryFn = (kind: 'scores' | 'feedback' | 'oversight', agentId: string, traceId: string) => Promise<Record<string, unknown> | undefined>;

export function registerQueryRoutes(app: FastifyInstance, query: QueryFn | undefined, common: Record<string, unknown>): void {
  for (const kind of ['scores', 'feedback', 'oversight'] as const) {
    app.get(
      `/v1/query/${kind}/:trace_id`,
      {
        schema: {
          ...common,
          summary: `The ${kind} of one of the key's agent's traces (docs/http.md "Queries")`,
          params: { type: 'object', required: ['trace_id'], properties: { trace_id: { type: 'string', minLength: 1, maxLength: 256 } } },
          response: { 200: { type: 'object', additionalProperties: true }, '4xx': errorSchema, '5xx': errorSchema },
        },
      },
      async (req, reply) => {
        if (!query) return reply.code(404).send({ error: 'STEWARD_HTTP_NOT_FOUND', message: 'queries are not served by this process' });
        const { trace_id } = req.params as { trace_id: string };
        const row = await query(kind, req.agent!.id, trace_id);
        // Nothing stored (yet, or another agent's trace: the same answer, so nothing leaks) is a 200 the acgp
        // client waits on — get_score()/get_feedback() retry while `status` is "not_found"; a 404 made them raise
        // at once under ACGP_FAIL_SILENTLY=false (D43; audit #24 r2, finding 5).
        if (!row) return reply.code(200).send({ status: 'not_found', trace_id });
        return reply.code(200).send(row);
      },
    );
  }
}
