/** Registers schemas/avro/*.avsc in the schema registry under TopicNameStrategy subjects (`<topic>-value`). */
import { AVRO_SCHEMA_FILES, createRegistry, registerAvro, type AvroSchemaName } from './serde.js';
import { topicNames, type TopicKey } from './topics.js';

/**
 * The topic whose values each schema describes. ledger-entry.avsc has none: it is the signed, chained entry the
 * sink stores (ClickHouse `ledger`), while acgp.ledger carries unsigned drafts and run-record halves in JSON
 * (docs/pipeline.md "Serde"), so registering it as acgp.ledger-value would tell registry-aware consumers a
 * wrong shape.
 */
export const SCHEMA_TOPIC: Partial<Record<AvroSchemaName, TopicKey>> = {
  trace: 'traces',
  decision: 'decisions',
  verdict: 'verdicts',
  'trust-debt-event': 'trustDebt',
};

export async function registerAll(registryUrl: string, prefix: string): Promise<{ subject: string; id: number }[]> {
  const registry = createRegistry(registryUrl);
  const names = topicNames(prefix);
  const out: { subject: string; id: number }[] = [];
  for (const s of AVRO_SCHEMA_FILES) {
    const topic = SCHEMA_TOPIC[s];
    if (!topic) continue;
    const subject = `${names[topic]}-value`;
    out.push({ subject, id: await registerAvro(registry, s, subject) });
  }
  return out;
}
