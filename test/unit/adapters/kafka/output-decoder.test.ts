import { describe, expect, it } from 'vitest';
import avro from 'avsc';
import { OutputDecoder, avroSchemaId } from '../../../../src/adapters/kafka/output-decoder.js';
import { decisionCodec, verdictCodec } from '../../../../src/adapters/kafka/output-avro.js';
import { readAvroSchema } from '../../../../src/adapters/kafka/serde.js';
import { decisionMessage, verdictMessage } from '../../../../src/contracts/engine-records.js';
import { Ed25519Signer, signVerdict, verifyVerdict } from '../../../../src/engine/verdict/index.js';
import type { PvsVerdict } from '../../../../src/engine/types.js';
import { StewardError } from '../../../../src/errors.js';
import { stubRegistry } from '../../../support/stub-registry.js';
import { blockedRecord, scoreRecord, shellTrace } from '../../consumers/fixtures.js';

const asJson = (o: unknown) => JSON.parse(JSON.stringify(o)) as unknown;
const decision = decisionMessage({ ...blockedRecord(), eventId: 't-1#ab' }, shellTrace, 1767225600000, 1767225600005, '0.1.0');
const verdict = verdictMessage(scoreRecord({ intervention: 'flag', stage: 'ctq', ctq: 0.7 }), decision, 1767225600009);

describe('OutputDecoder: decisions and verdicts in either encoding', () => {
  it('decodes Avro through the writer schema the registry holds under the id, one lookup per id', async () => {
    const state = { lookups: 0 };
    const dec = new OutputDecoder(stubRegistry({ 7: readAvroSchema('decision'), 8: readAvroSchema('verdict') }, state));
    const a = decisionCodec(7).encode(decision);
    const b = verdictCodec(8).encode(verdict);
    const schemas = await dec.schemasFor([a, b, a, Buffer.from(JSON.stringify(decision)), null]);
    expect(state.lookups).toBe(2);
    expect(schemas.decode('decision', a)).toEqual(asJson(decision));
    expect(schemas.decode('verdict', b)).toEqual(asJson(verdict));
    expect(await dec.decode('decision', a)).toEqual(asJson(decision));
    expect(state.lookups).toBe(2); // cached
    expect(avroSchemaId(Buffer.from(JSON.stringify(decision)))).toBeUndefined();
    expect(avroSchemaId(a)).toBe(7);
  });

  it('reads a record written under another compatible version of the schema (resolved into ours)', async () => {
    const ours = JSON.parse(readAvroSchema('decision')) as { fields: { name: string }[] };
    // A later writer with one more field (with a default) than our reader knows.
    const later = { ...ours, fields: [...ours.fields, { name: 'shard', type: 'string', default: '' }] };
    const w = avro.Type.forSchema(later as avro.Schema);
    const rec = { ...(avro.Type.forSchema(ours as avro.Schema).fromBuffer(decisionCodec(1).encode(decision).subarray(5)) as object), shard: 'x' };
    const body = w.toBuffer(rec);
    const header = Buffer.alloc(5);
    header.writeInt32BE(11, 1);
    const dec = new OutputDecoder(stubRegistry({ 11: JSON.stringify(later) }));
    expect(await dec.decode('decision', Buffer.concat([header, body]))).toEqual(asJson(decision));
  });

  it('an id the registry does not know, or a schema that is not the message\'s, is the record\'s fault (STEWARD_OUTPUT_AVRO, not retryable)', async () => {
    const dec = new OutputDecoder(stubRegistry({ 3: readAvroSchema('trace') }));
    const unknown = decisionCodec(99).encode(decision);
    const err = await dec.decode('decision', unknown).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StewardError);
    expect(err).toMatchObject({ code: 'STEWARD_OUTPUT_AVRO', retryable: false, message: 'unknown Avro schema id 99' });
    const traceId = decisionCodec(3).encode(decision);
    expect(await dec.decode('decision', traceId).catch((e: unknown) => e)).toMatchObject({ code: 'STEWARD_OUTPUT_AVRO', message: expect.stringMatching(/schema id 3 is not a decision schema/) });
    // Without a registry: dead-lettered with a reason, never parsed as JSON.
    expect(await new OutputDecoder(undefined).decode('verdict', verdictCodec(8).encode(verdict)).catch((e: unknown) => e)).toMatchObject({ code: 'STEWARD_OUTPUT_AVRO', message: expect.stringMatching(/no schema registry configured/) });
  });

  it('a registry that is down is a retryable error, and the next lookup goes out again', async () => {
    const state = { down: true, lookups: 0 };
    const dec = new OutputDecoder(stubRegistry({ 7: readAvroSchema('decision') }, state));
    const a = decisionCodec(7).encode(decision);
    expect(await dec.schemasFor([a]).catch((e: unknown) => e)).toMatchObject({ code: 'STEWARD_KAFKA', retryable: true });
    state.down = false;
    expect((await dec.schemasFor([a])).decode('decision', a)).toEqual(asJson(decision));
  });

  it("a PVS-1 verdict's signature verifies the same after an Avro round trip", async () => {
    const signer = Ed25519Signer.ephemeral();
    const signed = signVerdict({ ...(scoreRecord().verdict as PvsVerdict), metadata: { trace_id: 't-1', ctq: 0.7123456789, risk: 1 / 3 } } as unknown as PvsVerdict, signer);
    const v = { ...verdict, verdict: signed };
    const dec = new OutputDecoder(stubRegistry({ 8: readAvroSchema('verdict') }));
    const back = await dec.decode('verdict', verdictCodec(8).encode(v));
    expect(verifyVerdict(back.verdict, signer.publicKeyPem())).toEqual({ ok: true, kid: signer.kid });
    expect(verifyVerdict({ ...(back.verdict as object), approved: false }, signer.publicKeyPem()).ok).toBe(false);
  });
});
