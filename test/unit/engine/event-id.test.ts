import { describe, expect, it } from 'vitest';
import { traceEventId } from '../../../src/engine/event-id.js';

describe('traceEventId (idempotency id of a trace record)', () => {
  it('is the trace_id plus 128 bits of SHA-256 of the record bytes: equal for a redelivery, distinct for another trace under the same id', () => {
    const a = Buffer.from('{"trace_id":"t-1","amount":1}');
    const id = traceEventId('t-1', a);
    expect(id).toMatch(/^t-1#[0-9a-f]{32}$/);
    expect(traceEventId('t-1', Buffer.from(a))).toBe(id);
    expect(traceEventId('t-1', Buffer.from('{"trace_id":"t-1","amount":2}'))).not.toBe(id);
    expect(traceEventId('t-1', null)).toBe('t-1');
  });
});
