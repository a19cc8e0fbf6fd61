/**
 * The JSON Schemas of the HTTP ingress's routes (docs/http.md): Fastify checks each body against them before a
 * handler sees it, and the OpenAPI document is generated from them. The event is the acgp client's (docs/http.md "Mapping").
 */
/** The 4xx body: the reason code (the DLQ's, for traces) and its message (docs/http.md "Errors"). */
export const errorSchema = { type: 'object', properties: { error: { type: 'string' }, message: { type: 'string' }, index: { type: 'integer' } } } as const;

/** One event of the acgp client. */
export const eventSchema = {
  type: 'object',
  required: ['trace_id'],
  properties: {
    trace_id: { type: 'string', minLength: 1, maxLength: 256 },
    agent_type: { type: 'string' },
    goal: { type: 'string' },
    user_query: { type: 'string' },
    reasoning_text: { type: ['string', 'null'] },
    final_output: { type: ['string', 'null'] },
    context_information: { type: ['object', 'null'], additionalProperties: true },
    documents_used: { type: ['array', 'null'], items: { type: 'string' } },
    timestamp: { type: ['string', 'null'] },
    idempotency_key: { type: 'string', maxLength: 512 },
  },
  additionalProperties: true,
} as const;

export const ingestResponse = {
  type: 'object',
  properties: { accepted: { type: 'integer' }, duplicates: { type: 'integer' }, batch_id: { type: 'string' } },
} as const;

export const healthSchema = {
  summary: 'The ingress is up',
  response: { 200: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } },
} as const;
