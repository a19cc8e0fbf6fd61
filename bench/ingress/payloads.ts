// The traces bench:ingress sends, shared by the in-process run and the child-process load generator.
import type { Trace } from '../../src/engine/types.js';

export const trace = (i: number, tag: string, agent: string): Trace => ({ trace_id: `${tag}-${i}`, agent_id: agent, timestamp: new Date().toISOString(), hook: 'tool_call', tool: 'search', args: { q: `query ${i}` } });

/** Batch b of direct-produce values (JSON trace bytes). */
export const produceValues = (b: number, batch: number, agent: string): Buffer[] =>
  Array.from({ length: batch }, (_, j) => Buffer.from(JSON.stringify(trace(b * batch + j, 'p', agent))));

/** The batch id of batch b (the acgp client's is a uuid4: no '_'); it is also the batch's X-Idempotency-Key. */
export const batchIdOf = (b: number, prefix: string) => `${prefix}-b${b}`.replaceAll('_', '-');

/**
 * Batch b of acgp client events, as the acgp client's batch sender (0.1.4, transport/batch_sender.py) makes them:
 * each event's idempotency_key is `<batch_id>_<trace_id>`, and the batch is posted with X-Idempotency-Key = batch_id.
 */
export const ingestEvents = (b: number, batch: number, prefix: string) => {
  const id = batchIdOf(b, prefix);
  return Array.from({ length: batch }, (_, j) => ({ trace_id: `i-${b * batch + j}`, agent_type: 'executor', goal: 'g', user_query: 'q', reasoning_text: `r ${j}`, final_output: '', context_information: {}, timestamp: new Date().toISOString().slice(0, -1), idempotency_key: `${id}_i-${b * batch + j}` }));
};

/** Runs job(0..n-1) with `width` in flight. */
export async function pool(n: number, width: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await job(next++);
  }));
}
