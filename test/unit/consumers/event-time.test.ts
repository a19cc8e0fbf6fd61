import { describe, expect, it } from 'vitest';
import { eventTimeMs } from '../../../src/consumers/stage-runner.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';

const at = (timestampMs: number) => ({ timestampMs }) as InMessage;
const T = Date.parse('2026-11-22T12:00:00Z');

describe('eventTimeMs', () => {
  it('uses the trace timestamp, the record time when it is missing or unparsable', () => {
    expect(eventTimeMs('2026-11-22T11:59:00Z', at(T))).toBe(T - 60_000);
    expect(eventTimeMs(T - 5, at(T))).toBe(T - 5);
    expect(eventTimeMs('yesterday', at(T))).toBe(T);
    expect(eventTimeMs(undefined, at(T), 1000)).toBe(T);
  });
  it('clamps an agent-written timestamp to within the skew of the record time', () => {
    const skew = 300_000;
    expect(eventTimeMs('2026-11-22T11:58:00Z', at(T), skew)).toBe(T - 120_000); // inside: kept
    expect(eventTimeMs('2026-12-30T00:00:00Z', at(T), skew)).toBe(T + skew); // days ahead: would reset rate windows
    expect(eventTimeMs('2020-01-01T00:00:00Z', at(T), skew)).toBe(T - skew);
    expect(eventTimeMs('2020-01-01T00:00:00Z', at(T), null)).toBe(Date.parse('2020-01-01T00:00:00Z'));
    expect(eventTimeMs(T + 1, at(NaN), skew)).toBe(T + 1);
  });
});
