/**
 * The scorer with `consumer.scorer_input: join` (docs/pipeline.md "Hot path", spec-decisions D29): it consumes
 * acgp.decisions and reads each scored decision's trace from acgp.traces itself, at the partition and offset the
 * decision's headers name (contracts C10), instead of a re-encoded copy in acgp.scoring. The tripwire stage then
 * writes one record per trace.
 *
 * What comes from the trace record, not from anything the tripwire stage wrote (#22): the trace (decoded and
 * schema-checked here, JSON or Avro), its idempotency id (hash of the record bytes), its event time (the trace's
 * timestamp clamped to the record's broker time) and the client's reply route (the record's own headers, checked
 * against the replies topic as the tripwire stage checks them). The decision gives what the tripwire stage decided
 * (intervention, tripwires, rules, reasons) and must name the same trace_id, agent_id and event id, else the decision
 * is dead-lettered.
 *
 * Delivery is the decisions partition's alone: its chunks commit in transactions with their offsets as before
 * (consumer.exactly_once), the trace reads commit nothing. A decision the tripwire stage wrote twice (its crash
 * replay) is the second decision record of the same event id: the scored marks skip it, as they skipped a second
 * scoring record.
 */
import type { InMessage } from '../adapters/kafka/client.js';
import type { TraceDecoder } from '../adapters/kafka/serde.js';
import { replyRoute, type ReplyTarget } from '../adapters/kafka/request-reply.js';
import { StewardError } from '../errors.js';
import type { StageOutput, StageProcessor } from './stage-runner.js';
import { eventTimeMs } from './stage-runner.js';
import { decisionInputOf } from '../contracts/engine-records.js';
import type { DecisionMessage } from '../contracts/messages.js';
import { tracePosition } from '../adapters/kafka/trace-position.js';
import { traceEventId } from '../engine/event-id.js';
import { scoreOne, type ScorerStageDeps } from './scorer.js';
import { INTERVENTIONS } from '../engine/types.js';
import { avroSchemaId, type OutputDecoder } from '../adapters/kafka/output-decoder.js';

const KNOWN_INTERVENTIONS = new Set<string>(INTERVENTIONS);

export interface JoinedScorerDeps extends ScorerStageDeps {
  decoder: TraceDecoder;
  /** Reads a record of acgp.traces by partition and offset (adapters/kafka/trace-reader.ts); undefined: none there. */
  traces: { get(partition: number, offset: string): Promise<InMessage | undefined> };
  /** The only topic/partitions verdict replies may go to (as the tripwire stage's `replies`). */
  replies: ReplyTarget;
  /** limits.max_event_time_skew_ms (null: trust trace timestamps), as in the tripwire stage. */
  maxEventTimeSkewMs?: number | null;
  /** Told about a decision without trace position headers (written before contracts C10): it is not scored here. */
  onUnpositioned?: (m: InMessage) => void;
  /** Reads decisions written in Avro (topics.avro_outputs); absent, they are dead-lettered. */
  outputs?: OutputDecoder;
}

export class JoinedScorerProcessor implements StageProcessor {
  readonly stage = 'scorer';
  readonly inputTopics: string[];

  constructor(private readonly d: JoinedScorerDeps) {
    this.inputTopics = [d.topics.decisions];
  }

  async process(m: InMessage): Promise<StageOutput[]> {
    const decision = parseDecision(m, avroSchemaId(m.value) !== undefined ? await decodeAvroDecision(m, this.d.outputs) : undefined);
    // Halted traces are never scored: their decision is final (the trust-debt stage reads it). With run governance,
    // a halted event of a run still gets its replay answer (scoreOne: no verdict).
    if (decision.halted === true && !this.d.runRecords) return [];
    const pos = tracePosition(m);
    if (!pos) {
      this.d.onUnpositioned?.(m);
      return [];
    }
    const rec = await this.d.traces.get(pos.partition, pos.offset);
    if (!rec) throw new StewardError('STEWARD_TRACE_SCHEMA', `the trace this decision names (${this.d.topics.traces}[${pos.partition}]@${pos.offset}) is not in the topic (deleted by retention, or a position the topic never had: past its end, no such partition)`);
    const { trace, timestampMs } = await this.d.decoder.decode(rec.value);
    const eventId = traceEventId(trace.trace_id, rec.value);
    if (trace.trace_id !== decision.trace_id || trace.agent_id !== decision.agent_id || (decision.event_id !== undefined && decision.event_id !== eventId)) {
      throw new StewardError('STEWARD_TRACE_SCHEMA', `the decision of ${JSON.stringify(decision.trace_id)} names a record of another trace (${this.d.topics.traces}[${pos.partition}]@${pos.offset})`);
    }
    const evTime = eventTimeMs(timestampMs, rec, this.d.maxEventTimeSkewMs ?? null);
    return scoreOne(this.d, this.stage, m, trace, { ...decision, event_id: eventId }, decisionInputOf(decision), evTime, replyRoute(rec, this.d.replies));
  }
}

function decodeAvroDecision(m: InMessage, outputs: OutputDecoder | undefined): Promise<DecisionMessage> {
  if (!outputs) throw new StewardError('STEWARD_OUTPUT_AVRO', `Avro decision (schema id ${avroSchemaId(m.value)}) but no schema registry configured`);
  return outputs.decode('decision', m.value!);
}

/** The acgp.decisions message, checked where the scorer relies on it (else DLQ); `decoded`: an Avro record's message. */
export function parseDecision(m: InMessage, decoded?: DecisionMessage): DecisionMessage {
  if (m.value === null) throw new StewardError('STEWARD_TRACE_JSON', 'empty decision message');
  let d: Partial<DecisionMessage>;
  if (decoded) d = decoded;
  else {
    try {
      d = JSON.parse(m.value.toString('utf8')) as Partial<DecisionMessage>;
    } catch (e) {
      throw new StewardError('STEWARD_TRACE_JSON', `malformed decision message: ${(e as Error).message}`);
    }
  }
  if (!d || typeof d !== 'object' || typeof d.trace_id !== 'string' || typeof d.agent_id !== 'string' || typeof d.intervention !== 'string' || !KNOWN_INTERVENTIONS.has(d.intervention) || typeof d.stage !== 'string') {
    throw new StewardError('STEWARD_TRACE_SCHEMA', 'decision message lacks trace_id/agent_id/intervention/stage');
  }
  return d as DecisionMessage;
}
