import avro from 'avsc';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';

/**
 * A stand-in for the registry's `getSchema(id)` (unit level; the integration tests use the real registry): ids
 * map to schema texts; an unknown id answers as the registry does (HTTP 404 with its error body), `down` as a
 * refused connection. Counts lookups.
 */
export function stubRegistry(schemas: Record<number, string>, state: { down?: boolean; lookups?: number } = {}): SchemaRegistry {
  return {
    async getSchema(id: number) {
      state.lookups = (state.lookups ?? 0) + 1;
      if (state.down) throw new Error('connect ECONNREFUSED 127.0.0.1:1');
      const text = schemas[id];
      if (!text) throw Object.assign(new Error(`Schema ${id} not found`), { name: 'ResponseError', status: 404 });
      return avro.Type.forSchema(JSON.parse(text) as avro.Schema);
    },
  } as unknown as SchemaRegistry;
}
