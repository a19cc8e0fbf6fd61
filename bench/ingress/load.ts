/**
 * Load generator of bench:ingress, run as a child process so that the agents' side of each path (the HTTP
 * client's JSON and requests, or the producer's encoding) is not charged to the process under test:
 *   load.ts produce <topic> <n> <batch> <inFlight> <agent>       — produce traces to the topic directly
 *   load.ts http <url> <n> <batch> <inFlight> <apiKey> <prefix>  — POST /v1/ingest/traces/batch (gzipped, as the
 *                                                                 acgp client sends them, with BENCH_INGEST_GZIP=1)
 * The HTTP client is undici's `request` on a keep-alive pool of `inFlight` connections (a lean client, as a Python
 * agent's httpx is: no WHATWG objects per request); BENCH_INGEST_CLIENT=fetch: `fetch`, as before.
 * Each first sends n/2 traces untimed (warm-up; BENCH_LOAD_WARM=0: none), then times n. Prints a line `timed` when the timed part begins, then one JSON line `{ "rate": traces per second,
 * "refused": n }` after the last answer.
 */
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { benchProcessEnv } from '../sink/services-env.js';
import { batchIdOf, ingestEvents, pool, produceValues } from './payloads.js';
import { gzipSync } from 'node:zlib';
import { Agent, request } from 'undici';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const GZIP = process.env.BENCH_INGEST_GZIP === '1';
const FETCH = process.env.BENCH_INGEST_CLIENT === 'fetch';

/**
 * Tells the parent that the timed part begins (a `timed` line; it snapshots the services' CPU) and waits a moment
 * for it to do so, so that the services' CPU is charged over the timed part, not the child's start-up.
 */
async function mark(): Promise<void> {
  console.log('timed');
  await new Promise((r) => setTimeout(r, 50));
}

async function main(): Promise<void> {
  const [mode, target, nS, batchS, inFlightS, a, b] = process.argv.slice(2);
  const n = Number(nS);
  const batch = Number(batchS);
  const inFlight = Number(inFlightS);
  // A fresh process runs cold code: the first traces (untimed, half as many again; BENCH_LOAD_WARM, a fraction of n)
  // warm both paths up, as the in-process measures are warm after their first round — else the direct producer's
  // JIT warm-up counted.
  const warm = Math.floor((n * Number(process.env.BENCH_LOAD_WARM ?? 0.5)) / batch) * batch;
  let refused = 0;
  let rate: number;
  let cpu: NodeJS.CpuUsage;
  if (mode === 'produce') {
    const adapter = new KafkaAdapter(buildConfig({}, benchProcessEnv()).kafka);
    const producer = await adapter.producer();
    const send = async (i: number) => {
      await producer.send([{ topic: target, messages: produceValues(i, batch, a).map((value) => ({ key: a, value })) }]);
    };
    await pool(warm / batch, inFlight, (i) => send(n / batch + i));
    await mark();
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await pool(n / batch, inFlight, send);
    rate = n / ((performance.now() - t0) / 1000);
    cpu = process.cpuUsage(c0);
    await producer.disconnect();
  } else {
    const dispatcher = new Agent({ connections: inFlight, keepAliveTimeout: 60_000, pipelining: 1 });
    const post = async (i: number, tag: string) => {
      const json = JSON.stringify({ batch_id: batchIdOf(i, tag), events: ingestEvents(i, batch, tag), event_count: batch });
      // BENCH_INGEST_GZIP=1: gzipped as the acgp client sends every body over 1 KB.
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': a, 'x-idempotency-key': batchIdOf(i, tag), ...(GZIP && { 'content-encoding': 'gzip' }) };
      const body = GZIP ? gzipSync(json) : json;
      if (FETCH) {
        const r = await fetch(`${target}/ingest/traces/batch`, { method: 'POST', headers, body });
        if (r.status !== 200) refused++;
        await r.arrayBuffer();
      } else {
        const r = await request(`${target}/ingest/traces/batch`, { method: 'POST', headers, body, dispatcher });
        if (r.statusCode !== 200) refused++;
        await r.body.arrayBuffer();
      }
    };
    await pool(warm / batch, inFlight, (i) => post(i, `${b}-warm`));
    await mark();
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await pool(n / batch, inFlight, (i) => post(i, b));
    rate = n / ((performance.now() - t0) / 1000);
    cpu = process.cpuUsage(c0);
    await dispatcher.close();
  }
  // The client's own CPU per trace over the timed part: on a shared machine it competes with what it measures.
  console.log(JSON.stringify({ rate, refused, cpuUsPerTrace: (cpu.user + cpu.system) / n }));
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
