/**
 * Reading acgp.decisions, acgp.verdicts and acgp.trust-debt records in either encoding (`topics.avro_outputs`, contracts C13,
 * spec-decisions D42, docs/pipeline.md "Serde"): a value in the Confluent wire format (byte 0, 4-byte schema id) is Avro, decoded with the writer
 * schema the registry holds under that id and resolved into our reader schema (schemas/avro/decision.avsc,
 * verdict.avsc, trust-debt-event.avsc), so a record written under an earlier or later compatible version still reads; anything else is
 * JSON as before. A deployment switches encoding mid-stream and the JSON records stay in the log, so every reader
 * accepts both on the same topic.
 *
 * Lookups: one registry request per schema id this process has not met yet (the resolver is cached per id and
 * message kind; the registry client also dedupes concurrent misses). `schemasFor` resolves a chunk's distinct ids
 * before a synchronous pass over it (the sink's scan path); `decode` is the one-record async form.
 *
 * Failures: an id the registry does not know, a schema that is not the message's (a trace schema's id on the
 * decisions topic), or a body that does not decode is the record's fault — STEWARD_OUTPUT_AVRO, dead-lettered
 * by the stage. A registry that is down or failing is retryable (STEWARD_KAFKA, retryable: true): the partition
 * waits, nothing is dropped.
 */
import avro from 'avsc';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { StewardError } from '../../errors.js';
import type { DecisionMessage, TrustDebtMessage, VerdictMessage } from '../../contracts/messages.js';
import { decisionFromAvro, trustDebtFromAvro, verdictFromAvro, type OutputSchema } from './output-avro.js';
import { isConfluentWire, readAvroSchema, registryFailure } from './serde.js';

export type OutputKind = 'decision' | 'verdict' | 'trustDebt';
export interface OutputMessages {
  decision: DecisionMessage;
  verdict: VerdictMessage;
  trustDebt: TrustDebtMessage;
}

type Rec = Record<string, unknown>;
const FROM: { [K in OutputKind]: (r: Rec) => OutputMessages[K] } = { decision: decisionFromAvro, verdict: verdictFromAvro, trustDebt: trustDebtFromAvro };
const SCHEMA: Record<OutputKind, OutputSchema> = { decision: 'decision', verdict: 'verdict', trustDebt: 'trust-debt-event' };

/** The schema id of a wire-format value, undefined for anything else (JSON). */
export function avroSchemaId(value: Buffer | null | undefined): number | undefined {
  return value && isConfluentWire(value) ? value.readInt32BE(1) : undefined;
}

/** Writer schemas looked up for a set of records: decodes them synchronously. */
export class WriterSchemas {
  constructor(
    private readonly decoder: OutputDecoder,
    /** Per schema id the registry did not know (or answered wrongly) this time: the error to dead-letter with. */
    private readonly failed: ReadonlyMap<number, StewardError>,
  ) {}

  /** The message of an Avro value (throws STEWARD_OUTPUT_AVRO for a record that cannot be read). */
  decode<K extends OutputKind>(kind: K, value: Buffer): OutputMessages[K] {
    const id = value.readInt32BE(1);
    const bad = this.failed.get(id);
    if (bad) throw bad;
    return this.decoder.decodeKnown(kind, id, value);
  }
}

export class OutputDecoder {
  /** Writer schema per id (avsc types, as the registry client built them). */
  private readonly writers = new Map<number, avro.Type>();
  /** Per kind and id: the resolver from the writer schema into our reader schema, or why there is none. */
  private readonly resolvers = new Map<string, avro.Resolver | StewardError>();
  private readonly readers: { [K in OutputKind]?: avro.Type } = {};

  constructor(private readonly registry: SchemaRegistry | undefined) {}

  /**
   * Looks up the writer schemas of the Avro values among `values` (JSON ones are skipped): one request per id
   * not seen before, in parallel. Throws a retryable StewardError when the registry is unreachable; ids it does
   * not know come back as failures the returned WriterSchemas throws per record.
   */
  async schemasFor(values: Iterable<Buffer | null | undefined>): Promise<WriterSchemas> {
    const ids = new Set<number>();
    for (const v of values) {
      const id = avroSchemaId(v);
      if (id !== undefined && !this.writers.has(id)) ids.add(id);
    }
    const failed = new Map<number, StewardError>();
    if (ids.size === 0) return new WriterSchemas(this, failed);
    const registry = this.registry;
    if (!registry) {
      for (const id of ids) failed.set(id, new StewardError('STEWARD_OUTPUT_AVRO', `Avro record (schema id ${id}) but no schema registry configured`));
      return new WriterSchemas(this, failed);
    }
    const looked = await Promise.allSettled(
      [...ids].map(async (id) => {
        try {
          this.writers.set(id, (await registry.getSchema(id)) as unknown as avro.Type);
        } catch (e) {
          const err = registryFailure(e, id, 'STEWARD_OUTPUT_AVRO');
          if (err.retryable) throw err;
          failed.set(id, err);
        }
      }),
    );
    const outage = looked.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (outage) throw outage.reason;
    return new WriterSchemas(this, failed);
  }

  /** One record, JSON or Avro: the async form for readers that take records one at a time. */
  async decode<K extends OutputKind>(kind: K, value: Buffer): Promise<OutputMessages[K]> {
    return (await this.schemasFor([value])).decode(kind, value);
  }

  /** Decodes an Avro value whose writer schema is cached (WriterSchemas.decode). */
  decodeKnown<K extends OutputKind>(kind: K, id: number, value: Buffer): OutputMessages[K] {
    const resolver = this.resolver(kind, id);
    try {
      return FROM[kind](this.reader(kind).fromBuffer(value.subarray(5), resolver) as Rec);
    } catch (e) {
      throw new StewardError('STEWARD_OUTPUT_AVRO', `Avro ${SCHEMA[kind]} (schema id ${id}) does not decode: ${(e as Error).message}`);
    }
  }

  private reader(kind: OutputKind): avro.Type {
    return (this.readers[kind] ??= avro.Type.forSchema(JSON.parse(readAvroSchema(SCHEMA[kind])) as avro.Schema));
  }

  private resolver(kind: OutputKind, id: number): avro.Resolver {
    const key = `${kind}:${id}`;
    let r = this.resolvers.get(key);
    if (!r) {
      const writer = this.writers.get(id);
      if (!writer) throw new StewardError('STEWARD_OUTPUT_AVRO', `Avro ${SCHEMA[kind]}: schema id ${id} was not looked up`);
      try {
        r = this.reader(kind).createResolver(writer);
      } catch (e) {
        // Not a schema this message can be read from (another subject's schema, an incompatible change): the record's fault.
        r = new StewardError('STEWARD_OUTPUT_AVRO', `Avro ${SCHEMA[kind]}: schema id ${id} is not a ${SCHEMA[kind]} schema (${(e as Error).message.slice(0, 200)})`);
      }
      this.resolvers.set(key, r);
    }
    if (r instanceof StewardError) throw r;
    return r;
  }
}
