/** kafka.*, schema_registry.*, topics.*: how the process reaches Kafka and names its topics. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { StewardError } from '../../errors.js';
import type { KafkaSettings } from '../../adapters/kafka/client.js';
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';
import type { SectionContext } from './context.js';

export interface KafkaSection {
  kafka: KafkaSettings;
  /**
   * kafka.require_log_append_time: the event-time clamp (limits.max_event_time_skew_ms) trusts the broker's
   * timestamp of acgp.traces; with CreateTime the agent writes both. Refuse to start (or warn) unless LogAppendTime.
   */
  requireLogAppendTime: boolean;
  schemaRegistryUrl?: string;
  /** avroOutputs (topics.avro_outputs): the output topics the stages write in Avro (registry); the others stay JSON. */
  topics: { prefix: string; partitions: number; replicationFactor: number; replyPartitions: number; avroOutputs: ('decisions' | 'verdicts' | 'trust_debt')[] };
}

function readMaybe(base: string, f: string | undefined, setting: string): string | undefined {
  if (f === undefined) return undefined;
  const path = resolve(base, f);
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new StewardError('STEWARD_CONFIG', `${setting}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

export function kafkaSection(raw: Raw, ctx: SectionContext): KafkaSection {
  const k = (raw.kafka ?? {}) as Raw;
  let ssl: KafkaSettings['ssl'];
  if (typeof k.ssl === 'boolean') ssl = k.ssl;
  else if (k.ssl) {
    ssl = {
      ca: readMaybe(ctx.base, k.ssl.ca_file, '$.kafka.ssl.ca_file'),
      cert: readMaybe(ctx.base, k.ssl.cert_file, '$.kafka.ssl.cert_file'),
      key: readMaybe(ctx.base, k.ssl.key_file, '$.kafka.ssl.key_file'),
      rejectUnauthorized: k.ssl.reject_unauthorized ?? true,
    };
  }
  const avroOutputs = v(raw, 'topics.avro_outputs');
  const schemaRegistryUrl = v(raw, 'schema_registry.url');
  if (avroOutputs.length > 0 && !schemaRegistryUrl) {
    throw new StewardError('STEWARD_CONFIG', `topics.avro_outputs (${avroOutputs.join(', ')}) needs schema_registry.url (SCHEMA_REGISTRY_URL): the stages register the schemas there and every reader looks them up by id`);
  }
  return {
    kafka: {
      brokers: v(raw, 'kafka.brokers'),
      clientId: v(raw, 'kafka.client_id'),
      ssl,
      sasl: v(raw, 'kafka.sasl') as KafkaSettings['sasl'],
      connectionTimeoutMs: v(raw, 'kafka.connection_timeout_ms'),
      requestTimeoutMs: v(raw, 'kafka.request_timeout_ms'),
    },
    requireLogAppendTime: v(raw, 'kafka.require_log_append_time'),
    schemaRegistryUrl,
    topics: {
      prefix: v(raw, 'topics.prefix'),
      partitions: v(raw, 'topics.partitions'),
      replicationFactor: v(raw, 'topics.replication_factor'),
      replyPartitions: v(raw, 'topics.reply_partitions'),
      avroOutputs,
    },
  };
}
