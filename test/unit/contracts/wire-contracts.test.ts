import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DECISION_FIELDS, LEDGER_ENTRY_FIELDS, RUN_ANSWER_FIELDS, RUN_PENDING_FIELDS, TRACE_FIELDS, TRUST_DEBT_FIELDS, VERDICT_FIELDS } from '../../../src/contracts/index.js';

const avroFields = (name: string): string[] => (JSON.parse(readFileSync(`schemas/avro/${name}.avsc`, 'utf8')) as { fields: { name: string }[] }).fields.map((f) => f.name);
const jsonSchemaFields = (name: string): string[] => Object.keys((JSON.parse(readFileSync(`schemas/${name}.schema.json`, 'utf8')) as { properties: object }).properties);
const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

// The TypeScript types in src/contracts are the definition; every schema file must list exactly their fields.
describe('wire contracts: one definition, schema files agree with it', () => {
  it.each([
    ['decision', DECISION_FIELDS],
    ['verdict', VERDICT_FIELDS],
    ['trust-debt-event', TRUST_DEBT_FIELDS],
    ['ledger-entry', LEDGER_ENTRY_FIELDS],
  ])('schemas/avro/%s.avsc has the fields of its message type', (name, fields) => {
    expect(sorted(avroFields(name))).toEqual(sorted(Object.keys(fields)));
  });

  it('schemas/avro/trace.avsc has the trace fields plus `extra` (the fields outside the schema, as JSON)', () => {
    expect(sorted(avroFields('trace'))).toEqual(sorted([...Object.keys(TRACE_FIELDS), 'extra']));
  });

  it.each([
    ['trace', TRACE_FIELDS],
    ['ledger-entry', LEDGER_ENTRY_FIELDS],
    // contracts C12: an ACM run event's replay-record halves on acgp.ledger.
    ['run-record-pending', RUN_PENDING_FIELDS],
    ['run-record-answer', RUN_ANSWER_FIELDS],
  ])('schemas/%s.schema.json has the fields of its type', (name, fields) => {
    expect(sorted(jsonSchemaFields(name))).toEqual(sorted(Object.keys(fields)));
  });
});
