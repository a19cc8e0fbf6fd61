/**
 * The acgp.finalize message: a `final_answer` or `user_feedback` trace the tripwire stage hands the gate
 * stage, as `{trace, event_time_ms, event_id, reply?}` around the trace text as received.
 */
import { carriedReplyRoute } from '../adapters/kafka/request-reply.js';
import type { InMessage } from '../adapters/kafka/client.js';
import { validateTrace } from '../adapters/kafka/serde.js';
import type { FinalizeRequestMessage, ReplyRoute } from '../contracts/messages.js';
import { StewardError } from '../errors.js';

/** Hooks the gate stage answers instead of the tripwire stage. */
export const GATE_HOOKS: ReadonlySet<string> = new Set(['final_answer', 'user_feedback']);

export function finalizeJson(traceJson: string, eventTimeMs: number, eventId: string, reply: ReplyRoute | undefined): string {
  let out = `{"trace":${traceJson},"event_time_ms":${Number.isFinite(eventTimeMs) ? eventTimeMs : 'null'},"event_id":${JSON.stringify(eventId)}`;
  if (reply !== undefined) out += `,"reply":${JSON.stringify(reply)}`;
  return out + '}';
}

/** The reply route the tripwire stage could have written (the deployment's replies topic, bounded values), else none. */

/** Parses and validates an acgp.finalize message; malformed input is a non-retryable StewardError (DLQ). */
export function parseFinalize(m: InMessage, repliesTopic?: string): FinalizeRequestMessage {
  if (m.value === null) throw new StewardError('STEWARD_TRACE_JSON', 'empty finalize message');
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(m.value.toString('utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new StewardError('STEWARD_TRACE_JSON', `malformed finalize message: ${(e as Error).message}`);
  }
  if (!o || typeof o !== 'object' || typeof o.event_time_ms !== 'number' || typeof o.event_id !== 'string' || o.event_id.length === 0 || o.event_id.length > 512) {
    throw new StewardError('STEWARD_TRACE_SCHEMA', 'finalize message needs trace, event_time_ms and event_id');
  }
  const trace = validateTrace(o.trace);
  if (!GATE_HOOKS.has(trace.hook)) throw new StewardError('STEWARD_TRACE_SCHEMA', `finalize message: hook '${trace.hook}' is not one the gate answers`);
  return { trace, event_time_ms: o.event_time_ms, event_id: o.event_id, reply: carriedReplyRoute(o.reply, repliesTopic) };
}
