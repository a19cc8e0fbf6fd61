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

/** `n` bench traces into `topic`, trace numbers from `from` (a later round gets traces of its own, same mix). */
export async function fill(kafka: Kafka, topic: string, n: number, from = 0): Promise<void> {
  const p = kafka.producer();
  await p.connect();
  for (let i = 0; i < n; i += 1000) {
    await p.send({ topic, messages: Array.from({ length: Math.min(1000, n - i) }, (_, j) => {
      const t = benchTrace(from + i + j);
      return { key: t.agent_id, value: JSON.stringify(t) };
    }) });
  }
  await p.disconnect();
}
