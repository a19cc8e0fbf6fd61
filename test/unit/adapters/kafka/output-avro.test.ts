import { describe, expect, it } from 'vitest';
import { decisionCodec, verdictCodec } from '../../../../src/adapters/kafka/output-avro.js';
import { decisionMessage, verdictMessage } from '../../../../src/contracts/engine-records.js';
import { blockedRecord, scoreRecord, shellTrace } from '../../consumers/fixtures.js';

// What a JSON reader sees: undefined fields are absent.
const asJson = (o: unknown) => JSON.parse(JSON.stringify(o)) as unknown;

describe('decisions and verdicts in Avro (schemas/avro)', () => {
  it('a decision reads back as its JSON form, wire header included', () => {
    const d = decisionMessage({ ...blockedRecord(), eventId: 't-1#ab', degraded: true }, { ...shellTrace, session_id: undefined }, 1767225600000, 1767225600005, '0.1.0');
    const codec = decisionCodec(42);
    const b = codec.encode(d);
    expect([b[0], b.readInt32BE(1)]).toEqual([0, 42]);
    expect(codec.decode(b)).toEqual(asJson(d));
    expect(b.length).toBeLessThan(JSON.stringify(d).length);
  });

  // Audit #23 r2 finding 4: avsc writes a lone surrogate as U+FFFD; reasons may quote trace text holding one.
  it('a reason holding a lone surrogate reads back as its JSON form', () => {
    const d = decisionMessage({ ...blockedRecord({ reasons: ['tripwire no_rm fired on tool \ud800x', 'a\udc00', 'pair \u{1F600} kept'] }) }, shellTrace, 1, 2);
    expect(d.reasons).toEqual(['tripwire no_rm fired on tool \uFFFDx', 'a\uFFFD', 'pair \u{1F600} kept']);
    expect(decisionCodec(1).decode(decisionCodec(1).encode(d))).toEqual(asJson(d));
  });

  it('an ok decision without optional fields, and a verdict', () => {
    const d = decisionMessage({ ...blockedRecord({ intervention: 'ok', severity: undefined, reasons: [] }) }, { ...shellTrace, tool: undefined }, 1, 2);
    expect(decisionCodec(1).decode(decisionCodec(1).encode(d))).toEqual(asJson(d));
    const v = verdictMessage(scoreRecord({ intervention: 'flag', stage: 'ctq', ctq: 0.7 }), d, 3);
    expect(verdictCodec(2).decode(verdictCodec(2).encode(v))).toEqual(asJson(v));
  });
});
