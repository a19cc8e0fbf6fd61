/**
 * `steward schemas register [--config FILE] [--prefix P]`: registers schemas/avro/*.avsc in the schema
 * registry under TopicNameStrategy subjects (`<topic>-value`), e.g. acgp.traces-value.
 */
import { parseArgs } from 'node:util';
import { registerAll } from '../../adapters/kafka/schema-registration.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';

export const USAGE = 'usage: steward schemas register [--config FILE] [--prefix P]';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { config: { type: 'string' }, prefix: { type: 'string' } } });
  if ((positionals[0] ?? 'register') !== 'register') throw new StewardError('STEWARD_USAGE', 'usage: steward schemas register [--config FILE] [--prefix P]');
  const cfg = loadStewardConfig(values.config);
  if (!cfg.schemaRegistryUrl) throw new StewardError('STEWARD_CONFIG', 'no schema registry configured (schema_registry.url or SCHEMA_REGISTRY_URL)');
  for (const r of await registerAll(cfg.schemaRegistryUrl, values.prefix ?? cfg.topics.prefix)) process.stdout.write(`${r.subject}\tid ${r.id}\n`);
  return 0;
}
