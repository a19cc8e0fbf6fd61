// setupFile of the integration project: every test process sees the service URLs in its environment,
// so code under test that reads KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL or CLICKHOUSE_URL finds them.
import { inject } from 'vitest';
import { toEnv } from './services.js';

Object.assign(process.env, toEnv(inject('services')));
// kafkajs 2.x warns about its default partitioner on every producer.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
