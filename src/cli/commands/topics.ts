/**
 * `steward topics create|list [--config FILE] [--prefix P] [--partitions N] [--replication N]`
 * Creates the stage topics of docs/architecture.md (plus the replies topic) idempotently.
 */
import { parseArgs } from 'node:util';
import { KafkaAdapter } from '../../adapters/kafka/client.js';
import { createTopics, topicNames, topicSpecs } from '../../adapters/kafka/topics.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { StewardError } from '../../errors.js';
import { createLogger } from '../../logger.js';

export const USAGE = 'usage: steward topics create|list [--config FILE] [--prefix P] [--partitions N] [--replication N]';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string' }, prefix: { type: 'string' }, partitions: { type: 'string' }, replication: { type: 'string' } },
  });
  const sub = positionals[0] ?? 'create';
  if (sub !== 'create' && sub !== 'list') throw new StewardError('STEWARD_USAGE', `usage: steward topics create|list [--config FILE] [--prefix P] [--partitions N] [--replication N]`);
  const cfg = loadStewardConfig(values.config);
  const prefix = values.prefix ?? cfg.topics.prefix;
  const names = topicNames(prefix);
  const layout = {
    partitions: values.partitions ? Number(values.partitions) : cfg.topics.partitions,
    replicationFactor: values.replication ? Number(values.replication) : cfg.topics.replicationFactor,
    replyPartitions: cfg.topics.replyPartitions,
    replyRetentionMs: 3_600_000,
  };
  if (!Number.isInteger(layout.partitions) || layout.partitions < 1 || !Number.isInteger(layout.replicationFactor) || layout.replicationFactor < 1) {
    throw new StewardError('STEWARD_USAGE', '--partitions and --replication must be positive integers');
  }
  const admin = await new KafkaAdapter(cfg.kafka, createLogger({ level: cfg.logLevel })).admin();
  try {
    if (sub === 'list') {
      const existing = new Set(await admin.listTopics());
      for (const s of topicSpecs(names, layout)) process.stdout.write(`${s.topic}\t${existing.has(s.topic) ? 'present' : 'missing'}\n`);
      return 0;
    }
    const created = new Set(await createTopics(admin, names, layout));
    for (const s of topicSpecs(names, layout)) {
      process.stdout.write(`${s.topic}\t${created.has(s.topic) ? `created (${s.numPartitions} partitions, rf ${s.replicationFactor})` : 'exists'}\n`);
    }
    return 0;
  } finally {
    await admin.disconnect();
  }
}
