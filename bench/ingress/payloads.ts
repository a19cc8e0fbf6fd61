// The traces bench:ingress sends, shared by the in-process run and the child-process load generator.
import type { Trace } from '../../src/engine/types.js';

export const trace = (i: number, tag: string, agent: string): Trace => ({ trace_id: `${tag}-${i}`, agent_id: agent, timestamp: new Date().toISOString(), hook: 'tool_call', tool: 'search', args: { q: `query ${i}` } });

/** Batch b of direct-produce values (JSON trace bytes). */
export const produceValues = (b: number, batch: number, agent: string): Buffer[] =>
  Array.from({ length: batch }, (_, j) => Buffer.from(JSON.stringify(trace(b * batch + j, 'p', agent))));

/** Batch b of acgp client events (what the acgp client's batch sender posts). */
export const ingestEvents = (b: number, batch: number, prefix: string) =>
  Array.from({ length: batch }, (_, j) => ({ trace_id: `i-${b * batch + j}`, agent_type: 'executor', goal: 'g', user_query: 'q', reasoning_text: `r ${j}`, final_output: '', context_information: {}, timestamp: new Date().toISOString().slice(0, -1), idempotency_key: `${prefix}-b${b}-${j}` }));

/** Runs job(0..n-1) with `width` in flight. */
export async function pool(n: number, width: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await job(next++);
  }));
}
