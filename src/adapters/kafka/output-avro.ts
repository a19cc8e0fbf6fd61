/**
 * The acgp.decisions, acgp.verdicts and acgp.trust-debt messages in Avro (schemas/avro/decision.avsc, verdict.avsc,
 * trust-debt-event.avsc) and back,
 * in the Confluent wire format (byte 0, 4-byte schema id, Avro body). Measured against JSON in
 * bench/pipeline/avro-outputs.ts (docs/pipeline.md "Hot path"). The tripwire stage and the scorer write them when
 * `topics.avro_outputs` selects the topic (JSON otherwise); every reader takes both (output-decoder.ts).
 *
 * The schemas carry the check lists (`tripwires`, `rules`, `metrics`) and the PVS-1 `verdict` as JSON text,
 * optional fields as `null` unions and flags as booleans; the way back leaves absent what JSON leaves absent,
 * so a reader sees the same message either way.
 */
import avro from 'avsc';
import type { DecisionMessage, TrustDebtMessage, VerdictMessage } from '../../contracts/messages.js';
import { SchemaType, type SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { StewardError } from '../../errors.js';
import { readAvroSchema, registerAvro, type AvroSchemaName } from './serde.js';

const DECISION_OPTIONAL = ['severity', 'event_id', 'tool', 'session_id', 'engine_version', 'fallback_reason', 'blueprint_version', 'rollout_arm', 'approval_id', 'approval_deadline_ms'] as const;
const VERDICT_OPTIONAL = ['severity', 'event_id'] as const;

type Rec = Record<string, unknown>;

export function decisionToAvro(d: DecisionMessage): Rec {
  const r: Rec = {
    trace_id: d.trace_id,
    agent_id: d.agent_id,
    tenant: d.tenant,
    blueprint: d.blueprint,
    intervention: d.intervention,
    approved: d.approved,
    stage: d.stage,
    halted: d.halted,
    reasons: d.reasons,
    tripwires: JSON.stringify(d.tripwires ?? []),
    rules: JSON.stringify(d.rules ?? []),
    latency_ms: d.latency_ms,
    event_time_ms: d.event_time_ms,
    decided_at_ms: d.decided_at_ms,
    fallback: d.fallback === true,
    hook: d.hook,
    rejected: d.rejected ?? null,
    degraded: d.degraded === true,
  };
  const o = d as unknown as Rec;
  for (const f of DECISION_OPTIONAL) r[f] = o[f] ?? null;
  return r;
}

export function decisionFromAvro(r: Rec): DecisionMessage {
  const d: Rec = {
    trace_id: r.trace_id,
    agent_id: r.agent_id,
    tenant: r.tenant,
    blueprint: r.blueprint,
    intervention: r.intervention,
    approved: r.approved,
    stage: r.stage,
    halted: r.halted,
    reasons: r.reasons,
    tripwires: JSON.parse(String(r.tripwires)),
    rules: JSON.parse(String(r.rules)),
    latency_ms: r.latency_ms,
    event_time_ms: r.event_time_ms,
    decided_at_ms: r.decided_at_ms,
    hook: r.hook,
  };
  for (const f of DECISION_OPTIONAL) if (r[f] !== null && r[f] !== undefined) d[f] = r[f];
  if (r.rejected) d.rejected = r.rejected;
  if (r.fallback === true) d.fallback = true;
  if (r.degraded === true) d.degraded = true;
  return d as unknown as DecisionMessage;
}

export function verdictToAvro(v: VerdictMessage): Rec {
  const r: Rec = {
    trace_id: v.trace_id,
    agent_id: v.agent_id,
    tenant: v.tenant,
    blueprint: v.blueprint,
    intervention: v.intervention,
    approved: v.approved,
    stage: v.stage,
    ctq: v.ctq,
    risk: v.risk,
    metrics: JSON.stringify(v.metrics),
    verdict: JSON.stringify(v.verdict),
    event_time_ms: v.event_time_ms,
    scored_at_ms: v.scored_at_ms,
    degraded: v.degraded === true,
  };
  for (const f of VERDICT_OPTIONAL) r[f] = v[f] ?? null;
  return r;
}

export function verdictFromAvro(r: Rec): VerdictMessage {
  const v: Rec = {
    trace_id: r.trace_id,
    agent_id: r.agent_id,
    tenant: r.tenant,
    blueprint: r.blueprint,
    intervention: r.intervention,
    approved: r.approved,
    stage: r.stage,
    ctq: r.ctq,
    risk: r.risk,
    metrics: JSON.parse(String(r.metrics)),
    verdict: JSON.parse(String(r.verdict)),
    event_time_ms: r.event_time_ms,
    scored_at_ms: r.scored_at_ms,
  };
  for (const f of VERDICT_OPTIONAL) if (r[f] !== null && r[f] !== undefined) v[f] = r[f];
  if (r.degraded === true) v.degraded = true;
  return v as unknown as VerdictMessage;
}

// A trust-debt change maps field for field (trust-debt-event.avsc); only trace_id is optional (null when absent).
export function trustDebtToAvro(t: TrustDebtMessage): Rec {
  return {
    event_id: t.event_id,
    trace_id: t.trace_id ?? null,
    tenant: t.tenant,
    agent_id: t.agent_id,
    at_ms: t.at_ms,
    cause: t.cause,
    before: t.before,
    after: t.after,
    level: t.level,
    previous_level: t.previous_level,
    crossings: t.crossings.map((x) => ({ threshold: x.threshold, direction: x.direction })),
    duplicate: t.duplicate,
  };
}

export function trustDebtFromAvro(r: Rec): TrustDebtMessage {
  // JSON's key order (trustDebtMessage), trace_id left out when null as JSON.stringify leaves out undefined.
  return {
    event_id: r.event_id,
    ...(r.trace_id !== null && r.trace_id !== undefined ? { trace_id: r.trace_id } : {}),
    tenant: r.tenant,
    agent_id: r.agent_id,
    at_ms: r.at_ms,
    cause: r.cause,
    before: r.before,
    after: r.after,
    level: r.level,
    previous_level: r.previous_level,
    // Plain objects (avsc decodes into record-class instances), as JSON.parse gives.
    crossings: (r.crossings as Rec[]).map((x) => ({ threshold: x.threshold, direction: x.direction })),
    duplicate: r.duplicate,
  } as unknown as TrustDebtMessage;
}

/** One output schema's codec in the Confluent wire format, under a schema id the registry gave it. */
export class AvroOutputCodec<T> {
  private readonly type: avro.Type;
  private readonly header: Buffer;

  constructor(
    schema: OutputSchema,
    readonly schemaId: number,
    private readonly to: (m: T) => Rec,
    private readonly from: (r: Rec) => T,
  ) {
    this.type = avro.Type.forSchema(JSON.parse(readAvroSchema(schema)) as avro.Schema);
    this.header = Buffer.alloc(5);
    this.header.writeInt32BE(schemaId, 1);
  }

  encode(m: T): Buffer {
    return Buffer.concat([this.header, this.type.toBuffer(this.to(m))]);
  }

  decode(b: Buffer): T {
    return this.from(this.type.fromBuffer(b.subarray(5)) as Rec);
  }
}

export const decisionCodec = (schemaId: number) => new AvroOutputCodec<DecisionMessage>('decision', schemaId, decisionToAvro, decisionFromAvro);
export const verdictCodec = (schemaId: number) => new AvroOutputCodec<VerdictMessage>('verdict', schemaId, verdictToAvro, verdictFromAvro);
export const trustDebtCodec = (schemaId: number) => new AvroOutputCodec<TrustDebtMessage>('trust-debt-event', schemaId, trustDebtToAvro, trustDebtFromAvro);

/** The schemas an output topic may be written in (ledger-entry.avsc is not one: docs/pipeline.md "Serde"). */
export type OutputSchema = Extract<AvroSchemaName, 'decision' | 'verdict' | 'trust-debt-event'>;

/** The id of `name`.avsc already registered under `subject`; STEWARD_CONFIG when it is not there. */
async function registeredId(registry: SchemaRegistry, name: OutputSchema, subject: string, refused: Error): Promise<number> {
  try {
    return await registry.getRegistryIdBySchema(subject, { type: SchemaType.AVRO, schema: readAvroSchema(name) });
  } catch (e) {
    // The client wraps the registry's 404 (not registered there) in a ConfluentSchemaRegistryError; anything else is the registry failing.
    const notThere = (e as Error).name === 'ConfluentSchemaRegistryError' || (e as { status?: number }).status === 404;
    if (!notThere) throw new StewardError('STEWARD_KAFKA', `topics.avro_outputs: could not look up ${subject} in the schema registry: ${(e as Error).message}`, { retryable: true, cause: e });
    throw new StewardError('STEWARD_CONFIG', `topics.avro_outputs: ${name}.avsc cannot be registered under ${subject} (${refused.message}) and is not registered there: register it there through the registry's API, or set the subject's compatibility to BACKWARD`, { cause: refused });
  }
}

/** The encoders of the output topics selected in topics.avro_outputs (absent: that topic stays JSON). */
export interface OutputEncoders {
  decision?: (d: DecisionMessage) => Buffer;
  verdict?: (v: VerdictMessage) => Buffer;
  trustDebt?: (t: TrustDebtMessage) => Buffer;
}

/**
 * Registers the selected topics' schemas at start-up (`<topic>-value`, TopicNameStrategy as `steward schemas
 * register`; the registry answers an already registered schema with its id) and returns their encoders: the id is
 * looked up once here, never per record. A registry that cannot be reached fails the start (retryable).
 */
export async function outputEncoders(registry: SchemaRegistry | undefined, subjects: { decision?: string; verdict?: string; trustDebt?: string }): Promise<OutputEncoders> {
  const out: OutputEncoders = {};
  if (!subjects.decision && !subjects.verdict && !subjects.trustDebt) return out;
  if (!registry) throw new StewardError('STEWARD_CONFIG', 'topics.avro_outputs needs schema_registry.url');
  const id = async (name: OutputSchema, subject: string): Promise<number> => {
    try {
      return await registerAvro(registry, name, subject);
    } catch (e) {
      const status = (e as { status?: number }).status;
      // Not an outage: the client library registers only under a subject whose compatibility is BACKWARD (its
      // default), and the registry refuses (409/422) a schema its rule rejects. The schema may already be registered
      // there (by operators, `steward schemas register`): its id is all the stage needs.
      if ((e as Error).name === 'ConfluentSchemaRegistryCompatibilityError' || status === 409 || status === 422) return registeredId(registry, name, subject, e as Error);
      throw new StewardError('STEWARD_KAFKA', `topics.avro_outputs: could not register ${subject} in the schema registry: ${(e as Error).message}`, { retryable: true, cause: e });
    }
  };
  const guarded = <T>(kind: string, codec: AvroOutputCodec<T>) => (m: T): Buffer => {
    try {
      return codec.encode(m);
    } catch (e) {
      throw new StewardError('STEWARD_OUTPUT_AVRO', `the ${kind} does not fit its Avro schema: ${(e as Error).message}`);
    }
  };
  if (subjects.decision) out.decision = guarded('decision', decisionCodec(await id('decision', subjects.decision)));
  if (subjects.verdict) out.verdict = guarded('verdict', verdictCodec(await id('verdict', subjects.verdict)));
  if (subjects.trustDebt) out.trustDebt = guarded('trust-debt event', trustDebtCodec(await id('trust-debt-event', subjects.trustDebt)));
  return out;
}
