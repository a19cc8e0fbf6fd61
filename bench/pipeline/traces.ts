// The pipeline benches' traffic: the demo agents' realistic mix over BENCH_AGENTS, and the fill of a traces topic.
import type { Kafka } from 'kafkajs';
import type { Trace } from '../../src/engine/types.js';
import { demoTrace } from '../../src/demo/agents.js';
import { BENCH_AGENTS } from './engine.js';

const RUN = Date.now().toString(36);

/** The demo agents' realistic mix over 30 agents (JSON); event time spread so rate limits stay mostly quiet. */
export function benchTrace(i: number): Trace {
  const a = BENCH_AGENTS[i % BENCH_AGENTS.length];
  return demoTrace(a.type, i, 3, Date.UTC(2026, 0, 1) + i * 60_000, `b${RUN}`, a.id);
}

/** Messages of bench traces `from` .. `from + n - 1` (JSON, keyed by agent), in batches of 1 000. */
export function traceBatches(n: number, from = 0): { key: string; value: string }[][] {
  const out: { key: string; value: string }[][] = [];
  for (let i = 0; i < n; i += 1000) {
    out.push(Array.from({ length: Math.min(1000, n - i) }, (_, j) => {
      const t = benchTrace(from + i + j);
      return { key: t.agent_id, value: JSON.stringify(t) };
    }));
  }
  return out;
}

/** Sends `batches` to `topic` one after the other (one producer). */
export async function produceBatches(kafka: Kafka, topic: string, batches: { key: string; value: string }[][]): Promise<void> {
  const p = kafka.producer();
  await p.connect();
  for (const messages of batches) await p.send({ topic, messages });
  await p.disconnect();
}

/** `n` bench traces into `topic`, trace numbers from `from` (a later round gets traces of its own, same mix). */
export async function fill(kafka: Kafka, topic: string, n: number, from = 0): Promise<void> {
  await produceBatches(kafka, topic, traceBatches(n, from));
}
