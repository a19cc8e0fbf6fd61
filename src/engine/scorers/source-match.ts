/**
 * source-match scorer (ACGP-1004 §7.2.3) plus the blueprint `evidence` block (§8).
 * Definitions (docs/scoring.md): a *claim* is a sentence of `content` that contains a digit or a
 * capitalised word after its first word (a named entity); a *citation* is a `[id]` / `[n]` marker or a
 * literal mention of a cited source id. Only sources found in the registry, not stale, count as
 * certified; their trust is the registry's. The score is the mean of the requirement components
 * present, each in 0..1, so a partially grounded answer gets partial credit.
 */
import type { ScorerResult, SourceRef, Trace } from '../types.js';
import { clamp01, num, skipped, strList, type CertifiedSource, type Scorer, type ScorerContext } from './types.js';

const DAY_MS = 86_400_000;

export function splitClaims(content: string): string[] {
  return content
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .filter((s) => /\d/.test(s) || /\s[A-Z][a-zA-Z]+/.test(s.replace(/\[[^\]]*\]/g, '')));
}

export function isCited(sentence: string, sources: SourceRef[]): boolean {
  for (const m of sentence.matchAll(/\[([^\]\s]+)\]/g)) {
    const key = m[1];
    if (/^\d+$/.test(key)) {
      const n = Number(key);
      if (n >= 1 && n <= sources.length) return true;
    } else if (sources.some((s) => s.id === key)) return true;
  }
  return sources.some((s) => s.id.length >= 3 && sentence.includes(s.id));
}

function isFresh(src: CertifiedSource, nowMs: number): boolean {
  if (src.maxAgeDays === undefined || !src.updatedAt) return true;
  const at = Date.parse(src.updatedAt);
  return Number.isFinite(at) && nowMs - at <= src.maxAgeDays * DAY_MS;
}

export class SourceMatchScorer implements Scorer {
  readonly scorerType = 'source-match';
  readonly evalTier = 1 as const;
  readonly latencyBudgetMs = 200;

  async evaluate(trace: Trace, parameters: Record<string, unknown>, ctx: ScorerContext): Promise<ScorerResult> {
    const t0 = performance.now();
    const reg = ctx.sourceRegistry;
    if (!reg) throw skipped('source-match: no certified source registry configured');
    const ev = ctx.blueprint.evidence ?? {};
    const cited: SourceRef[] = Array.isArray(trace.sources) ? trace.sources.filter((s) => s && typeof s.id === 'string') : [];
    const minTrust = Math.max(num(parameters.min_source_trust, 0), ev.minTrustScore ?? 0);
    const certified = cited
      .map((s) => reg.get(s.id))
      .filter((s): s is CertifiedSource => s !== undefined && isFresh(s, ctx.nowMs));
    const trusted = certified.filter((s) => s.trust >= minTrust);
    const components: Record<string, number> = {};

    const content = typeof trace.content === 'string' ? trace.content : '';
    const claims = splitClaims(content);
    const citedClaims = claims.filter((c) => isCited(c, cited)).length;
    const ratio = claims.length === 0 ? 1 : citedClaims / claims.length;
    const minRatio = num(parameters.min_citation_ratio, 0);
    components.citation = minRatio > 0 ? clamp01(ratio / minRatio) : ratio;

    const categories = [...new Set([...strList(parameters.required_sources), ...(ev.sourceCategories ?? [])])];
    if (categories.length > 0) {
      const have = new Set(trusted.map((s) => s.category));
      components.categories = categories.filter((c) => have.has(c)).length / categories.length;
    }
    if (minTrust > 0) components.trust = cited.length === 0 ? 0 : trusted.length / cited.length;
    if (ev.minCertifiedSources !== undefined && ev.minCertifiedSources > 0) {
      components.certified = clamp01(new Set(trusted.map((s) => s.id)).size / ev.minCertifiedSources);
    }
    const values = Object.values(components);
    const score = values.reduce((a, b) => a + b, 0) / values.length;
    return {
      score,
      confidence: 0.8,
      explanation: `claims ${citedClaims}/${claims.length} cited; ${trusted.length} trusted certified source(s) of ${cited.length} cited`,
      evidence: { components, claims: claims.length, cited_claims: citedClaims, certified: certified.map((s) => s.id), min_trust: minTrust },
      latencyMs: performance.now() - t0,
    };
  }
}
