/**
 * Certified Source Registry (ACGP-1004 §8) parsed from YAML/JSON text:
 *   sources: [{id, category, trust, updated_at?, max_age_days?}]
 * The caller reads the file; trust always comes from here, never from the trace.
 */
import { parse } from 'yaml';
import { StewardError } from '../../errors.js';
import type { CertifiedSource, SourceRegistry } from './types.js';

export class MapSourceRegistry implements SourceRegistry {
  private readonly byId: Map<string, CertifiedSource>;
  constructor(sources: CertifiedSource[]) {
    this.byId = new Map(sources.map((s) => [s.id, s]));
  }
  get(id: string): CertifiedSource | undefined {
    return this.byId.get(id);
  }
  size(): number {
    return this.byId.size;
  }
}

export function parseSourceRegistry(text: string, file = '<sources>'): MapSourceRegistry {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new StewardError('STEWARD_CONFIG', `${file}: cannot parse source registry: ${(e as Error).message}`, { cause: e });
  }
  const list = Array.isArray(doc) ? doc : (doc as { sources?: unknown } | null)?.sources;
  if (!Array.isArray(list)) throw new StewardError('STEWARD_CONFIG', `${file}: expected a 'sources' list`);
  const out: CertifiedSource[] = list.map((raw, i) => {
    const s = raw as Record<string, unknown>;
    const trust = s.trust ?? s.trust_score;
    if (typeof s.id !== 'string' || typeof s.category !== 'string' || typeof trust !== 'number' || trust < 0 || trust > 1) {
      throw new StewardError('STEWARD_CONFIG', `${file}: sources[${i}] needs id (string), category (string) and trust (0..1)`);
    }
    const updated = s.updated_at ?? s.freshness;
    return {
      id: s.id,
      category: s.category,
      trust,
      updatedAt: typeof updated === 'string' ? updated : updated instanceof Date ? updated.toISOString() : undefined,
      maxAgeDays: typeof s.max_age_days === 'number' ? s.max_age_days : undefined,
    };
  });
  return new MapSourceRegistry(out);
}
