/** Registers schemas/avro/*.avsc in the schema registry under TopicNameStrategy subjects (`<topic>-value`). */
import { AVRO_SCHEMA_FILES, createRegistry, registerAvro, type AvroSchemaName } from './serde.js';
import { topicNames, type TopicKey } from './topics.js';

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
