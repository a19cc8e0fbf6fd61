import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/config/steward-config.js';
import { parseConfigText } from '../../../src/config/config-text.js';

const REG = { SCHEMA_REGISTRY_URL: 'http://registry:8080' };
const err = (fn: () => unknown): { code?: string; message: string } => {
  try {
    fn();
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('no error');
};

describe('topics.avro_outputs', () => {
  it('defaults to none (JSON); takes decisions, verdicts and trust_debt from the file or STEWARD_AVRO_OUTPUTS', () => {
    expect(buildConfig({}, {}).topics.avroOutputs).toEqual([]);
    expect(buildConfig(parseConfigText('topics:\n  avro_outputs: [decisions, verdicts, trust_debt]\n'), REG).topics.avroOutputs).toEqual(['decisions', 'verdicts', 'trust_debt']);
    expect(buildConfig({}, { ...REG, STEWARD_AVRO_OUTPUTS: 'trust_debt' }).topics.avroOutputs).toEqual(['trust_debt']);
    expect(buildConfig({}, { ...REG, STEWARD_AVRO_OUTPUTS: 'verdicts' }).topics.avroOutputs).toEqual(['verdicts']);
  });

  // The ledger stays JSON (docs/pipeline.md "Serde": its records are drafts and run-record halves, not ledger-entry.avsc).
  it('refuses other topics (the ledger among them), repeats, and a selection without a schema registry', () => {
    const file = err(() => buildConfig(parseConfigText('topics:\n  avro_outputs: [decisions, trust-debt]\n', 'steward.yaml'), REG));
    expect(file).toMatchObject({ code: 'STEWARD_CONFIG' });
    expect(file.message).toMatch(/steward\.yaml:2:.*avro_outputs/);
    expect(err(() => buildConfig({}, { ...REG, STEWARD_AVRO_OUTPUTS: 'decisions,ledger' })).message).toMatch(/STEWARD_AVRO_OUTPUTS=decisions,ledger: \$\.topics\.avro_outputs\[1\]/);
    expect(err(() => buildConfig({}, { ...REG, STEWARD_AVRO_OUTPUTS: 'decisions,decisions' })).message).toMatch(/STEWARD_AVRO_OUTPUTS/);
    expect(err(() => buildConfig({}, { STEWARD_AVRO_OUTPUTS: 'decisions' }))).toMatchObject({ code: 'STEWARD_CONFIG', message: expect.stringMatching(/topics\.avro_outputs \(decisions\) needs schema_registry\.url/) });
  });
});
