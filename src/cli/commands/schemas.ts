/**
 * `steward schemas register [--config FILE] [--prefix P]`: registers schemas/avro/*.avsc in the schema
 * registry under TopicNameStrategy subjects (`<topic>-value`), e.g. acgp.traces-value.
 */
import { parseArgs } from 'node:util';
import { AVRO_SCHEMA_FILES, createRegistry, registerAvro, type AvroSchemaName } from '../../adapters/kafka/serde.js';
import { topicNames, type TopicKey } from '../../adapters/kafka/topics.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';

export const USAGE = 'usage: steward schemas register [--config FILE] [--prefix P]';

export const SCHEMA_TOPIC: Record<AvroSchemaName, TopicKey> = {
  trace: 'traces',
  decision: 'decisions',
  verdict: 'verdicts',
  'trust-debt-event': 'trustDebt',
  'ledger-entry': 'ledger',
};

export async function registerAll(registryUrl: string, prefix: string): Promise<{ subject: string; id: number }[]> {
  const registry = createRegistry(registryUrl);
  const names = topicNames(prefix);
  const out: { subject: string; id: number }[] = [];
  for (const s of AVRO_SCHEMA_FILES) {
    const subject = `${names[SCHEMA_TOPIC[s]]}-value`;
    out.push({ subject, id: await registerAvro(registry, s, subject) });
  }
  return out;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string' }, prefix: { type: 'string' } } });
  if ((positionals[0] ?? 'register') !== 'register') throw new StewardError('STEWARD_USAGE', 'usage: steward schemas register [--config FILE] [--prefix P]');
  const cfg = loadStewardConfig(values.config);
  if (!cfg.schemaRegistryUrl) throw new StewardError('STEWARD_CONFIG', 'no schema registry configured (schema_registry.url or SCHEMA_REGISTRY_URL)');
  for (const r of await registerAll(cfg.schemaRegistryUrl, values.prefix ?? cfg.topics.prefix)) process.stdout.write(`${r.subject}\tid ${r.id}\n`);
  return 0;
}
