/**
 * Where a decision's trace is (contracts C10): the tripwire stage writes the partition and offset of the
 * acgp.traces record it decided as headers of the acgp.decisions record, so the scorer can read the trace
 * itself (consumer.scorer_input: join) instead of a re-encoded copy. Headers, not message fields: the
 * decision message (JSON or Avro) stays as readers know it.
 */
import { headerText } from './headers.js';
import type { InMessage } from './kafka-types.js';

export const TRACE_POSITION_HEADERS = { partition: 'x-steward-trace-partition', offset: 'x-steward-trace-offset' } as const;

export function tracePositionHeaders(trace: Pick<InMessage, 'partition' | 'offset'>): Record<string, string> {
  return { [TRACE_POSITION_HEADERS.partition]: String(trace.partition), [TRACE_POSITION_HEADERS.offset]: trace.offset };
}

/** The trace position a decision record names, or undefined (a decision written before C10, or malformed headers). */
export function tracePosition(decision: InMessage): { partition: number; offset: string } | undefined {
  const p = headerText(decision, TRACE_POSITION_HEADERS.partition);
  const o = headerText(decision, TRACE_POSITION_HEADERS.offset);
  if (p === undefined || o === undefined || !/^\d{1,9}$/.test(p) || !/^\d{1,19}$/.test(o)) return undefined;
  return { partition: Number(p), offset: o };
}
