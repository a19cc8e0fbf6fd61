// topics.avro_outputs on the real services (Kafka, registry, Redis, ClickHouse; the repository's blueprints):
// (1) the same traces through tripwire → scorer → sink once with JSON outputs and once with Avro outputs give
// the same decision, verdict and ledger rows, the Avro run's records carry the magic byte and the registry's id,
// and its verdicts' PVS-1 signatures verify from the stored rows; (2) a decisions topic that switches from JSON to
// Avro mid-stream (plus one record under a schema id the registry does not know) is read completely by the scorer
// join, the trust-debt stage and the sink, the unknown id dead-lettered by each with its reason; (3) acgp.trust-debt
// switched from JSON to Avro mid-stream stores the same trust_debt_events rows and ledger chain as all-JSON, and
// `steward review` writes its changes there in Avro too when selected.
import { generateKeyPairSync } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { startPipeline, type StageName } from '../../../src/process/pipeline.js';
import { bootstrapEngine } from '../../../src/process/engine-runtime.js';
import { startSinkFromConfig } from '../../../src/process/sink-stage.js';
import { ledgerSignerFrom } from '../../../src/adapters/clickhouse/ledger-keys.js';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { readDlqHeaders } from '../../../src/adapters/kafka/dlq.js';
import { decisionCodec, outputEncoders } from '../../../src/adapters/kafka/output-avro.js';
import { verifyVerdict } from '../../../src/engine/verdict/index.js';
import { demoTrace, DEMO_AGENTS } from '../../../src/demo/agents.js';
import type { StewardConfig } from '../../../src/config/steward-config.js';
import type { TopicNames } from '../../../src/adapters/kafka/topics.js';
import type { KafkaAdapter } from '../../../src/adapters/kafka/client.js';
import type { Trace } from '../../../src/engine/types.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import type { DecisionMessage, VerdictMessage } from '../../../src/contracts/messages.js';
import { OutputDecoder } from '../../../src/adapters/kafka/output-decoder.js';
import { createRegistry } from '../../../src/adapters/kafka/serde.js';
import { Collector, quietLogger, withPipelineEnv } from './harness.js';
import { consumeMessages, deleteRedisPrefix, deleteSubjects, schemaRegistry, services, uniqueIdent, uniqueName, uniqueRedisPrefix, waitFor, withRedis, withTopics } from '../setup/helpers.js';
import { run as review } from '../../../src/cli/commands/review.js';
import { registerAll } from '../../../src/adapters/kafka/schema-registration.js';
import { RedisTrustDebtStore } from '../../../src/adapters/redis/trust-debt-store.js';
import { DEFAULT_TRUST_DEBT_CONFIG } from '../../../src/engine/trust-debt/index.js';
import { readAvroSchema } from '../../../src/adapters/kafka/serde.js';

const BLUEPRINTS = fileURLToPath(new URL('../../../blueprints', import.meta.url));
const keys = generateKeyPairSync('ed25519');
const PEM = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PUBLIC = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const T0 = Date.UTC(2026, 2, 1, 9);

function traces(from: number, to: number): Trace[] {
  const out: Trace[] = [];
  for (let i = from; i < to; i++) for (const a of DEMO_AGENTS) out.push(demoTrace(a, i, 11, T0 + out.length * 30_000 + from * 1_000_000, 'avro-it'));
  // Known outcomes on top of the generated mix (halts, as in engine-e2e), so both encodings carry every kind.
  const at = new Date(T0 + from * 1_000_000 + 3_600_000).toISOString();
  out.push({ trace_id: `avro-it-big-trade-${from}`, agent_id: 'trader-1', timestamp: at, hook: 'tool_call', tool: 'execute_trade', args: { trade_value: 150000, symbol: 'ACME' } });
  out.push({ trace_id: `avro-it-rm-${from}`, agent_id: 'coder-1', timestamp: at, hook: 'tool_call', tool: 'shell', args: { command: 'rm -rf /', program: 'rm' } });
  out.push({ trace_id: `avro-it-refund-${from}`, agent_id: 'support-1', timestamp: at, hook: 'tool_call', tool: 'issue_refund', args: { amount: 400, order_id: 'ORD-1' } });
  return out;
}

interface Run {
  cfg: StewardConfig;
  topics: TopicNames;
  adapter: KafkaAdapter;
  store: ClickHouseStore;
}

/** A pipeline env with its own ClickHouse database and Redis prefix (both removed after), a fixed signing key. */
async function withRun(name: string, avroOutputs: string[], fn: (r: Run) => Promise<void>, extra: Record<string, any> = {}): Promise<void> {
  const database = uniqueIdent(`steward_it_${name.replace(/-/g, '_')}`);
  const redisPrefix = uniqueRedisPrefix(name);
  const store = new ClickHouseStore({ url: services().clickhouseUrl, database });
  try {
    await withPipelineEnv(name, async ({ cfg, topics, adapter }) => fn({ cfg, topics, adapter, store }), {
      topics: { avro_outputs: avroOutputs },
      redis: { key_prefix: redisPrefix },
      clickhouse: { database },
      signing: { key: PEM },
      blueprints: { dir: BLUEPRINTS, agents: `${BLUEPRINTS}/agents.yaml` },
      ...extra,
    });
  } finally {
    await store.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
    await store.close();
    const r = new Redis(services().redisUrl);
    await deleteRedisPrefix(r, redisPrefix);
    r.disconnect();
  }
}

async function start(r: Run, stages: StageName[]) {
  const logger = quietLogger();
  const rt = await bootstrapEngine(r.cfg, stages, logger);
  const pipe = await startPipeline(r.cfg, stages, { ...rt.deps, startSink: () => startSinkFromConfig(r.cfg, logger, ledgerSignerFrom(PEM)) }, { logger });
  return { stop: async () => (await pipe.stop(), await rt.close()) };
}

async function produce(r: Run, ts: Trace[]): Promise<void> {
  const producer = await r.adapter.producer();
  try {
    await producer.send([{ topic: r.topics.traces, messages: ts.map((t) => ({ key: t.agent_id, value: Buffer.from(JSON.stringify(t)) })) }]);
  } finally {
    await producer.disconnect();
  }
}

const bogusRecord = (m: InMessage) => m.value![0] === 0 && m.value!.readInt32BE(1) === 2_000_000_000;
/** Rows of a table (deduplicated; the ledger is a plain MergeTree: no FINAL, and the sink writes each entry once). */
const count = async (s: ClickHouseStore, table: string) => Number((await s.query<{ n: string }>(`SELECT count() AS n FROM ${s.table(table)}${table === 'ledger' ? '' : ' FINAL'}`).catch(() => [{ n: '0' }]))[0].n);

/** The stored rows, without what depends on the wall clock or measured latency (decided/scored/ingested times, latency_ms). */
async function rows(s: ClickHouseStore) {
  const strip = <T extends Record<string, unknown>>(xs: T[], drop: string[]) => xs.map((x) => Object.fromEntries(Object.entries(x).filter(([k]) => !drop.includes(k))));
  const decisions = strip(await s.query(`SELECT * FROM ${s.table('decisions')} FINAL ORDER BY trace_id`), ['decided_at_ms', 'ingested_at_ms', 'latency_ms']);
  const verdictRows = await s.query<Record<string, unknown>>(`SELECT * FROM ${s.table('verdicts')} FINAL ORDER BY trace_id`);
  // verdict_json carries the scorer's measured latency (metadata.latency_ms) under its signature: compared without both.
  const verdicts = strip(verdictRows, ['scored_at_ms', 'ingested_at_ms', 'signature', 'verdict_json']).map((v, i) => {
    const { signature: _s, metadata, ...rest } = JSON.parse(String(verdictRows[i].verdict_json)) as { signature: unknown; metadata: Record<string, unknown> };
    return { ...v, verdict: { ...rest, metadata: { ...metadata, latency_ms: undefined } } };
  });
  const ledger = strip(await s.query(`SELECT * FROM ${s.table('ledger')} ORDER BY agent_id, seq`), ['ingested_at_ms']);
  return { decisions, verdicts, ledger, verdictJson: verdictRows.map((v) => String(v.verdict_json)) };
}

describe('topics.avro_outputs through the pipeline', () => {
  it('Avro decisions and verdicts (magic byte, registry id) store the same rows and ledger chain as JSON ones', { timeout: 240_000 }, async () => {
    const ts = traces(0, 8);
    const stored: Record<string, Awaited<ReturnType<typeof rows>>> = {};
    for (const mode of ['json', 'avro'] as const) {
      await withRun(`pl-avro-out-${mode}`, mode === 'avro' ? ['decisions', 'verdicts'] : [], async (r) => {
        const out = await new Collector(r.adapter, [r.topics.decisions, r.topics.verdicts, r.topics.dlq]).start();
        const p = await start(r, ['tripwire', 'scorer', 'sink']);
        try {
          await produce(r, ts);
          await waitFor(async () => out.on(r.topics.decisions).length >= ts.length && (await count(r.store, 'decisions')) >= ts.length && (await count(r.store, 'ledger')) >= ts.length, { timeoutMs: 90_000, message: `${mode}: decisions and ledger rows` });
          // Every trace not halted is scored: wait for all their verdicts (they come after the decisions).
          await waitFor(() => out.on(r.topics.verdicts).length >= out.json<{ halted?: boolean }>(r.topics.decisions).filter((d) => !d.halted).length, { timeoutMs: 90_000, message: `${mode}: verdicts of every trace not halted` });
          const scored = out.on(r.topics.verdicts).length;
          expect(scored).toBeGreaterThan(ts.length / 2); // most traces are scored, some halted
          await waitFor(async () => (await count(r.store, 'verdicts')) >= scored, { timeoutMs: 60_000, message: `${mode}: verdict rows` });
          expect(out.on(r.topics.dlq)).toEqual([]);
          const values = [...out.on(r.topics.decisions), ...out.on(r.topics.verdicts)].map((m) => m.value!);
          if (mode === 'avro') {
            const reg = schemaRegistry();
            const ids = { [r.topics.decisions]: await reg.getLatestSchemaId(`${r.topics.decisions}-value`), [r.topics.verdicts]: await reg.getLatestSchemaId(`${r.topics.verdicts}-value`) };
            for (const m of [...out.on(r.topics.decisions), ...out.on(r.topics.verdicts)]) expect([m.value![0], m.value!.readInt32BE(1)]).toEqual([0, ids[m.topic]]);
          } else for (const v of values) expect(v[0]).toBe(0x7b); // '{'
          stored[mode] = await rows(r.store);
          // Signed over the canonical content: verifies from what the sink stored, whichever encoding carried it.
          for (const v of stored[mode].verdictJson) expect(verifyVerdict(JSON.parse(v), PUBLIC).ok).toBe(true);
        } finally {
          await out.stop();
          await p.stop();
        }
      });
    }
    const [j, a] = [stored.json, stored.avro];
    expect(j.decisions).toHaveLength(ts.length);
    expect(new Set(j.decisions.map((d) => d.intervention)).size).toBeGreaterThan(1); // a real mix
    expect(a.decisions).toEqual(j.decisions);
    expect(a.verdicts).toEqual(j.verdicts);
    expect(a.ledger).toEqual(j.ledger); // same entries, hashes, chain links and signatures
  });

  it('a decisions topic switched from JSON to Avro mid-stream is read completely by the scorer join, trust-debt stage and sink; an unknown schema id is dead-lettered by each', { timeout: 240_000 }, async () => {
    const first = traces(0, 4);
    const second = traces(4, 8);
    await withRun('pl-avro-switch', [], async (r0) => {
      const out = await new Collector(r0.adapter, [r0.topics.decisions, r0.topics.verdicts, r0.topics.trustDebt, r0.topics.dlq]).start();
      try {
        // Before the switch: only the tripwire stage runs, writing JSON decisions.
        const before = await start(r0, ['tripwire']);
        await produce(r0, first);
        await waitFor(() => out.on(r0.topics.decisions).length >= first.length, { timeoutMs: 60_000, message: 'JSON decisions' });
        await before.stop();
        // A record under a schema id the registry does not hold, between the two encodings.
        const producer = await r0.adapter.producer();
        const bogus = decisionCodec(2_000_000_000).encode(JSON.parse(out.on(r0.topics.decisions)[0].value!.toString('utf8')));
        await producer.send([{ topic: r0.topics.decisions, messages: [{ key: first[0].agent_id, value: bogus }] }]);
        await producer.disconnect();
        // After the switch: Avro decisions; every reader starts now and reads the topic from its beginning.
        const r = { ...r0, cfg: { ...r0.cfg, topics: { ...r0.cfg.topics, avroOutputs: ['decisions', 'verdicts'] as ('decisions' | 'verdicts')[] } } };
        const after = await start(r, ['tripwire', 'scorer', 'trust-debt', 'sink']);
        try {
          await produce(r, second);
          const all = first.length + second.length;
          await waitFor(() => out.on(r.topics.decisions).length >= all + 1, { timeoutMs: 60_000, message: 'Avro decisions' });
          // Per partition: JSON records, then Avro ones (the unknown id among them), never JSON after Avro.
          for (let p = 0; p < r.cfg.topics.partitions; p++) {
            const kinds = out.on(r.topics.decisions).filter((m) => m.partition === p).map((m) => (m.value![0] === 0 ? 'avro' : 'json'));
            if (kinds.includes('avro')) expect(kinds.slice(kinds.indexOf('avro'))).not.toContain('json');
          }
          expect(out.on(r.topics.decisions).filter((m) => m.value![0] !== 0)).toHaveLength(first.length);
          // What each record stands for, read back through the real registry: the trust-debt stage's expected events.
          const dec = new OutputDecoder(createRegistry(r.cfg.schemaRegistryUrl!));
          const read = async (m: InMessage, kind: 'decision' | 'verdict') => (m.value![0] === 0 ? await dec.decode(kind, m.value!) : JSON.parse(m.value!.toString('utf8')));
          const decisions = (await Promise.all(out.on(r.topics.decisions).filter((m) => !bogusRecord(m)).map((m) => read(m, 'decision')))) as DecisionMessage[];
          expect(decisions).toHaveLength(all);
          const halted = new Set(decisions.filter((d) => d.halted).map((d) => d.trace_id));
          // The scorer join scored the JSON decisions and the Avro ones; the sink stored all of them.
          await waitFor(async () => (await count(r.store, 'decisions')) >= all && out.on(r.topics.verdicts).length >= all - halted.size && out.on(r.topics.dlq).length >= 3, { timeoutMs: 90_000, message: 'all decisions stored and scored, three dead letters' });
          expect(out.on(r.topics.verdicts).every((m) => m.value![0] === 0)).toBe(true); // written after the switch
          const verdicts = (await Promise.all(out.on(r.topics.verdicts).map((m) => read(m, 'verdict')))) as VerdictMessage[];
          expect(new Set(verdicts.map((v) => v.trace_id))).toEqual(new Set([...first, ...second].map((t) => t.trace_id).filter((id) => !halted.has(id))));
          await waitFor(async () => (await count(r.store, 'verdicts')) >= all - halted.size, { timeoutMs: 60_000, message: 'verdict rows' });
          const storedIds = new Set((await r.store.query<{ trace_id: string }>(`SELECT trace_id FROM ${r.store.table('decisions')} FINAL`)).map((x) => x.trace_id));
          expect([...first, ...second].filter((t) => !storedIds.has(t.trace_id))).toEqual([]);
          // Trust debt: one event per (non-degraded) verdict and per halted decision, from both encodings.
          const moving = new Set([...verdicts.filter((v) => !v.degraded).map((v) => v.trace_id), ...decisions.filter((d) => d.halted && !d.fallback && !d.degraded).map((d) => d.trace_id)]);
          expect(moving.size).toBeGreaterThan(0);
          await waitFor(() => moving.size <= new Set(out.json<{ trace_id?: string }>(r.topics.trustDebt).map((t) => t.trace_id).filter((id) => id && moving.has(id))).size, { timeoutMs: 60_000, message: 'trust-debt events' });
          const dlq = out.on(r.topics.dlq).map(readDlqHeaders);
          expect(dlq.map((h) => [h.stage, h.code, h.message]).sort()).toEqual(
            ['scorer', 'sink', 'trust-debt'].map((s) => [s, 'STEWARD_OUTPUT_AVRO', 'unknown Avro schema id 2000000000']),
          );
        } finally {
          await after.stop();
        }
      } finally {
        await out.stop();
      }
    }, { consumer: { scorer_input: 'join' } });
  });

  it('acgp.trust-debt switched from JSON to Avro mid-stream: the same trust_debt_events rows and ledger chain as all-JSON', { timeout: 240_000 }, async () => {
    // Halted decisions written straight to acgp.decisions (keyed by agent: one partition each, so each agent's debt
    // moves in the same order in both runs); the trust-debt stage turns each into one change, the sink stores them.
    const agents = ['td-a', 'td-b', 'td-c'];
    const ds: DecisionMessage[] = Array.from({ length: 18 }, (_, i) => ({
      trace_id: `avro-td-${i}`, agent_id: agents[i % 3], tenant: 'acme', blueprint: 'b@1.0', intervention: 'block', approved: false, stage: 'rule', halted: true,
      reasons: ['no'], severity: i % 4 === 0 ? 'critical' : 'high', tripwires: [], rules: [], latency_ms: 1, event_time_ms: T0 + i * 600_000, decided_at_ms: T0 + i * 600_000 + 5,
      hook: 'tool_call', event_id: `avro-td-${i}#e`,
    }) as DecisionMessage);
    const half = ds.length / 2;
    const stored: Record<string, { events: unknown[]; ledger: unknown[] }> = {};
    for (const mode of ['json', 'avro'] as const) {
      await withRun(`pl-avro-td-${mode}`, [], async (r0) => {
        const out = await new Collector(r0.adapter, [r0.topics.trustDebt, r0.topics.dlq]).start();
        const send = async (xs: DecisionMessage[]) => {
          const producer = await r0.adapter.producer();
          await producer.send([{ topic: r0.topics.decisions, messages: xs.map((d) => ({ key: d.agent_id, value: Buffer.from(JSON.stringify(d)) })) }]);
          await producer.disconnect();
        };
        const changes = () => new Set(out.json<{ event_id: string }>(r0.topics.trustDebt).map((t) => t.event_id)).size;
        try {
          // Before the switch: JSON trust-debt changes (both runs).
          const before = await start(r0, ['trust-debt', 'sink']);
          await send(ds.slice(0, half));
          await waitFor(() => changes() >= half, { timeoutMs: 60_000, message: `${mode}: JSON trust-debt changes` });
          await before.stop();
          const r = mode === 'avro' ? { ...r0, cfg: { ...r0.cfg, topics: { ...r0.cfg.topics, avroOutputs: ['trust_debt'] as 'trust_debt'[] } } } : r0;
          const after = await start(r, ['trust-debt', 'sink']);
          try {
            await send(ds.slice(half));
            await waitFor(async () => changes() >= ds.length && (await count(r.store, 'trust_debt_events')) >= ds.length && (await count(r.store, 'ledger')) >= ds.length, { timeoutMs: 90_000, message: `${mode}: trust-debt rows and ledger` });
          } finally {
            await after.stop();
          }
          expect(out.on(r.topics.dlq)).toEqual([]);
          const written = out.on(r.topics.trustDebt);
          const avro = written.filter((m) => m.value![0] === 0);
          if (mode === 'avro') {
            const id = await schemaRegistry().getLatestSchemaId(`${r.topics.trustDebt}-value`);
            expect(new Set(avro.map((m) => m.value!.readInt32BE(1)))).toEqual(new Set([id]));
            // JSON for the first half, Avro after the switch: both on the topic, both read by the sink.
            expect(new Set(avro.map((m) => out.parsed<{ trace_id: string }>(m).trace_id))).toEqual(new Set(ds.slice(half).map((d) => d.trace_id)));
          } else expect(avro).toEqual([]);
          const events = await r.store.query<Record<string, unknown>>(`SELECT * FROM ${r.store.table('trust_debt_events')} FINAL ORDER BY event_id`);
          const ledger = await r.store.query<Record<string, unknown>>(`SELECT * FROM ${r.store.table('ledger')} ORDER BY agent_id, seq`);
          const drop = ({ ingested_at_ms: _i, ...rest }: Record<string, unknown>) => rest;
          stored[mode] = { events: events.map(drop), ledger: ledger.map(drop) };
        } finally {
          await out.stop();
        }
      }, { trust_debt: { audit_sweep_interval_ms: 0 } });
    }
    expect(stored.json.events).toHaveLength(ds.length);
    expect((stored.json.events as { level: string }[]).some((e) => e.level !== 'normal')).toBe(true); // thresholds crossed
    expect(stored.avro.events).toEqual(stored.json.events);
    expect(stored.avro.ledger).toEqual(stored.json.ledger); // same entries, hashes, chain links and signatures
  });

  it('`steward review` publishes its debt change to acgp.trust-debt in Avro when trust_debt is selected', { timeout: 60_000 }, async () => {
    const topicPrefix = uniqueName('rv-avro');
    const topic = `${topicPrefix}.trust-debt`;
    const env = { STEWARD_AVRO_OUTPUTS: process.env.STEWARD_AVRO_OUTPUTS, SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL };
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      Object.assign(process.env, { STEWARD_AVRO_OUTPUTS: 'trust_debt', SCHEMA_REGISTRY_URL: services().schemaRegistryUrl });
      await withTopics([topic], () => withRedis(async (redis, prefix) => {
        const at = Date.parse('2026-01-01T00:00:00Z');
        await new RedisTrustDebtStore(redis, { prefix }).apply({ eventId: 't-0', tenant: 'acme', agentId: 'bot', atMs: at, kind: 'intervention', intervention: 'halt' }, DEFAULT_TRUST_DEBT_CONFIG);
        expect(await review(['approve', '--trace', 't-0', '--agent', 'bot', '--tenant', 'acme', '--at', '2026-01-01T00:00:00Z', '--prefix', prefix, '--redis', services().redisUrl, '--topic-prefix', topicPrefix])).toBe(0);
        const [m] = await consumeMessages(topic, 1);
        const id = await schemaRegistry().getLatestSchemaId(`${topic}-value`);
        expect([m.value![0], m.value!.readInt32BE(1)]).toEqual([0, id]);
        const t = await new OutputDecoder(createRegistry(services().schemaRegistryUrl)).decode('trustDebt', m.value!);
        expect(t).toMatchObject({ event_id: 'review:t-0', cause: 'review_approved', agent_id: 'bot', tenant: 'acme', before: 0.5, duplicate: false });
      }));
    } finally {
      write.mockRestore();
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
      else process.env[k] = v;
      await deleteSubjects([`${topic}-value`]);
    }
  });

  it('`steward schemas register` registers the topics\' schemas, not ledger-entry.avsc as acgp.ledger-value (the ledger topic holds JSON drafts)', { timeout: 30_000 }, async () => {
    const prefix = uniqueName('avro-reg');
    const subjects = ['traces', 'decisions', 'verdicts', 'trust-debt', 'ledger'].map((t) => `${prefix}.${t}-value`);
    try {
      const got = await registerAll(services().schemaRegistryUrl, prefix);
      expect(got.map((r) => r.subject)).toEqual(subjects.slice(0, 4));
      expect(await schemaRegistry().getLatestSchemaId(subjects[4]).catch((e: unknown) => e)).toBeInstanceOf(Error);
    } finally {
      await deleteSubjects(subjects);
    }
  });

  it('start-up under a subject with another compatibility setting: the id of the schema registered there, else STEWARD_CONFIG', { timeout: 30_000 }, async () => {
    const url = services().schemaRegistryUrl;
    const [ours, other] = [`${uniqueName('avro-subj-a')}-value`, `${uniqueName('avro-subj-b')}-value`];
    const put = (subject: string, path: string, body: object, method = 'POST') =>
      fetch(`${url}/${path.replace('{s}', encodeURIComponent(subject))}`, { method, headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<{ id?: number }>);
    try {
      // Registered by operators under FULL compatibility (the client library registers only under BACKWARD).
      const { id } = await put(ours, 'subjects/{s}/versions', { schema: readAvroSchema('decision') });
      await put(ours, 'config/{s}', { compatibility: 'FULL' }, 'PUT');
      await put(other, 'subjects/{s}/versions', { schema: JSON.stringify({ type: 'record', name: 'Decision', namespace: 'org.acgp.steward', fields: [{ name: 'only', type: 'int' }] }) });
      await put(other, 'config/{s}', { compatibility: 'FULL' }, 'PUT');
      const registry = createRegistry(url);
      const enc = await outputEncoders(registry, { decision: ours });
      const [d] = traces(0, 1).slice(0, 1);
      const value = enc.decision!({ trace_id: d!.trace_id, agent_id: d!.agent_id, tenant: 'acme', blueprint: 'b@1.0', intervention: 'ok', approved: true, stage: 'none', halted: false, reasons: [], tripwires: [], rules: [], latency_ms: 1, event_time_ms: 1, decided_at_ms: 2, hook: 'tool_call' } as DecisionMessage);
      expect([value[0], value.readInt32BE(1)]).toEqual([0, id]);
      expect(await outputEncoders(registry, { decision: other }).catch((e: unknown) => e)).toMatchObject({ code: 'STEWARD_CONFIG', retryable: false, message: expect.stringMatching(/cannot be registered under .* and is not registered there/) });
    } finally {
      await deleteSubjects([ours, other]);
    }
  });
});
