/**
 * Load generator of bench:ingress, run as a child process so that the agents' side of each path (the HTTP
 * client's JSON and requests, or the producer's encoding) is not charged to the process under test:
 *   load.ts produce <topic> <n> <batch> <inFlight> <agent>       — produce traces to the topic directly
 *   load.ts http <url> <n> <batch> <inFlight> <apiKey> <prefix>  — POST /v1/ingest/traces/batch (gzipped, as the
 *                                                                 acgp client sends them, with BENCH_INGEST_GZIP=1)
 * Prints one JSON line `{ "rate": traces per second, "refused": n }` after the last answer.
 */
import { KafkaAdapter } from '../../src/adapters/kafka/client.js';
import { buildConfig } from '../../src/config/steward-config.js';
import { benchProcessEnv } from '../sink/services-env.js';
import { ingestEvents, pool, produceValues } from './payloads.js';
import { gzipSync } from 'node:zlib';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const GZIP = process.env.BENCH_INGEST_GZIP === '1';

async function main(): Promise<void> {
  const [mode, target, nS, batchS, inFlightS, a, b] = process.argv.slice(2);
  const n = Number(nS);
  const batch = Number(batchS);
  const inFlight = Number(inFlightS);
  let refused = 0;
  let rate: number;
  if (mode === 'produce') {
    const adapter = new KafkaAdapter(buildConfig({}, benchProcessEnv()).kafka);
    const producer = await adapter.producer();
    const t0 = performance.now();
    await pool(n / batch, inFlight, async (i) => {
      await producer.send([{ topic: target, messages: produceValues(i, batch, a).map((value) => ({ key: a, value })) }]);
    });
    rate = n / ((performance.now() - t0) / 1000);
    await producer.disconnect();
  } else {
    const t0 = performance.now();
    await pool(n / batch, inFlight, async (i) => {
      const json = JSON.stringify({ batch_id: `b${i}`, events: ingestEvents(i, batch, b), event_count: batch });
      // BENCH_INGEST_GZIP=1: gzipped as the acgp client sends every body over 1 KB.
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': a, 'x-idempotency-key': `${b}-b${i}`, ...(GZIP && { 'content-encoding': 'gzip' }) };
      const r = await fetch(`${target}/ingest/traces/batch`, { method: 'POST', headers, body: GZIP ? gzipSync(json) : json });
      if (r.status !== 200) refused++;
      await r.arrayBuffer();
    });
    rate = n / ((performance.now() - t0) / 1000);
  }
  console.log(JSON.stringify({ rate, refused }));
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
