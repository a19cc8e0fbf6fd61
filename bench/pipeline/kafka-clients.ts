/**
 * Kafka client comparison (issue #23, docs/pipeline.md "Kafka client"): a raw consume → produce passthrough on
 * kafkajs and on @platformatic/kafka over the same 20 000 bench traces (3 partitions), and the same loop
 * producing the tripwire stage's output volume per trace (a decision and a scoring message; decision only
 * with BENCH_SHAPE=join). Rounds alternate the clients (BENCH_ROUNDS, default 2), each round on fresh groups;
 * CPU is process.cpuUsage() per input message. Prints `platformatic_vs_kafkajs_passthrough=<ratio>` last.
 */
import { Kafka, logLevel } from 'kafkajs';
import { benchProcessEnv } from '../sink/services-env.js';
import { BENCH_AGENTS } from './engine.js';
import { demoTrace } from '../../src/demo/agents.js';
import { kafkajsPassthrough, platformaticPassthrough, type OutShape } from './raw-clients.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const N = Number(process.env.BENCH_THROUGHPUT_N ?? 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PARTITIONS = 3;
// The sizes bench:pipeline measures for the bench traffic (its passthrough_with_stage_output line): decision ~557 B, scoring ~900 B.
const DECISION_B = Number(process.env.BENCH_DECISION_B ?? 557);
const SCORING_B = Number(process.env.BENCH_SCORING_B ?? 900);

async function main(): Promise<void> {
  const brokers = (benchProcessEnv().KAFKA_BROKERS ?? '127.0.0.1:19092').split(',');
  const kafka = new Kafka({ clientId: 'bench-clients', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const p = `bench-kc-${Date.now().toString(36)}`;
  const t = { in: `${p}.in`, out: `${p}.out`, dec: `${p}.dec`, sco: `${p}.sco` };
  await admin.createTopics({ topics: Object.values(t).map((topic) => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })), waitForLeaders: true });
  try {
    const prod = kafka.producer();
    await prod.connect();
    for (let i = 0; i < N; i += 1000) {
      await prod.send({ topic: t.in, messages: Array.from({ length: Math.min(1000, N - i) }, (_, j) => {
        const a = BENCH_AGENTS[(i + j) % BENCH_AGENTS.length];
        const tr = demoTrace(a.type, i + j, 3, Date.UTC(2026, 0, 1) + (i + j) * 60_000, p, a.id);
        return { key: tr.agent_id, value: JSON.stringify(tr) };
      }) });
    }
    await prod.disconnect();
    const shape: OutShape = [{ topic: t.dec, value: 'd'.repeat(DECISION_B) }];
    if (process.env.BENCH_SHAPE !== 'join') shape.push({ topic: t.sco, value: 's'.repeat(SCORING_B) });
    const measure = async (fn: () => Promise<number>) => {
      const c0 = process.cpuUsage();
      const rate = await fn();
      const c = process.cpuUsage(c0);
      return { rate, us: (c.user + c.system) / N };
    };
    const rows: Record<string, { rate: number; us: number }[]> = { kafkajs: [], platformatic: [], kafkajs_output: [], platformatic_output: [] };
    for (let r = 0; r < ROUNDS; r++) {
      rows.kafkajs.push(await measure(() => kafkajsPassthrough(kafka, t.in, t.out, N, PARTITIONS, undefined, `${p}-k${r}`)));
      rows.platformatic.push(await measure(() => platformaticPassthrough(brokers, t.in, t.out, N, undefined, `${p}-p${r}`)));
      rows.kafkajs_output.push(await measure(() => kafkajsPassthrough(kafka, t.in, t.out, N, PARTITIONS, shape, `${p}-ko${r}`)));
      rows.platformatic_output.push(await measure(() => platformaticPassthrough(brokers, t.in, t.out, N, shape, `${p}-po${r}`)));
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
    const m = (k: string) => ({ rate: med(rows[k].map((x) => x.rate)), us: med(rows[k].map((x) => x.us)) });
    console.log(`n=${N} partitions=${PARTITIONS} rounds=${ROUNDS} output_shape=${shape.map((s) => s.value.length).join('+')}B`);
    for (const k of Object.keys(rows)) console.log(`${k}_msgs_per_s=${rows[k].map((x) => x.rate.toFixed(0)).join('/')} cpu_us_per_msg=${rows[k].map((x) => x.us.toFixed(1)).join('/')}`);
    const kj = m('kafkajs'), pf = m('platformatic'), kjo = m('kafkajs_output'), pfo = m('platformatic_output');
    console.log(`output_only_vs_own_passthrough kafkajs=${(kjo.rate / kj.rate).toFixed(3)} platformatic=${(pfo.rate / pf.rate).toFixed(3)}`);
    console.log(`platformatic_output_vs_kafkajs_passthrough=${(pfo.rate / kj.rate).toFixed(3)} cpu_platformatic_vs_kafkajs output=${(pfo.us / kjo.us).toFixed(3)} passthrough=${(pf.us / kj.us).toFixed(3)}`);
    console.log(`platformatic_vs_kafkajs_output=${(pfo.rate / kjo.rate).toFixed(3)}`);
    console.log(`platformatic_vs_kafkajs_passthrough=${(pf.rate / kj.rate).toFixed(3)}`);
  } finally {
    await admin.deleteTopics({ topics: Object.values(t) }).catch(() => undefined);
    await admin.disconnect();
  }
}

main().then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
