/** blueprints.*, sources, engine.*, llm.*: what decides — the blueprints and agent registry, the source registry, tiers and lists, the LLM. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultEngineConfig, DEFAULT_TIERS, normalizeTier, type EngineConfig, type TierSettings } from '../../engine/config.js';
import type { AclTier, FallbackOnTimeout } from '../../engine/types.js';
import { DEFAULT_GATE_LOAD_LIMITS } from '../../engine/gate/types.js';
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';
import { settingPath, type SectionContext } from './context.js';

export interface PolicySection {
  blueprints: { dir: string; agents?: string; watch: boolean };
  /** Certified Source Registry file for source-match metrics (ACGP-1004 §7.2.3, §8); the file `steward eval --sources` reads. */
  sources?: string;
  engine: EngineConfig;
  llm?: { provider: 'openai' | 'anthropic'; baseUrl: string; apiKey?: string; model?: string; timeoutMs: number; maxInFlight: number; thread: boolean };
}

function engineFrom(raw: Raw): EngineConfig {
  const tiers: Record<AclTier, TierSettings> = { ...DEFAULT_TIERS };
  for (const [k, t] of Object.entries(v(raw, 'engine.tiers') as Record<string, Raw>)) {
    const tier = normalizeTier(k)!;
    const base = tiers[tier];
    tiers[tier] = {
      thresholds: { ...base.thresholds, ...(t.thresholds ?? {}) },
      latencyBudgetMs: { ...base.latencyBudgetMs, ...(t.latency_budget_ms ?? {}) },
    };
  }
  return defaultEngineConfig({
    defaultTier: normalizeTier(v(raw, 'engine.default_tier'))!,
    tiers,
    restrictedModeTightening: v(raw, 'engine.restricted_mode_tightening'),
    lists: v(raw, 'engine.lists'),
    internalDomains: v(raw, 'engine.internal_domains'),
    internalCidrs: v(raw, 'engine.internal_cidrs'),
    namedPatterns: v(raw, 'engine.named_patterns'),
    fallbackOnTimeout: v(raw, 'engine.fallback_on_timeout') as FallbackOnTimeout | undefined,
    humanReviewConfidence: v(raw, 'engine.human_review_confidence'),
    gateLimits: gateLimitsFrom(raw),
  });
}

/**
 * blueprints.workflow_limits as EngineConfig.gateLimits — left out at the defaults, which compile applies anyway:
 * the engine config is recorded in replay bundles, and a default configuration must record the same bytes as
 * before the setting existed and as an `eval --bundles` without a config file (docs/acm.md "Replay bundles").
 */
function gateLimitsFrom(raw: Raw): EngineConfig['gateLimits'] {
  const limits = { maxWorkflowSteps: v(raw, 'blueprints.workflow_limits.max_steps'), maxWorkflows: v(raw, 'blueprints.workflow_limits.max_workflows') };
  const d = DEFAULT_GATE_LOAD_LIMITS;
  return limits.maxWorkflowSteps === d.maxWorkflowSteps && limits.maxWorkflows === d.maxWorkflows ? undefined : limits;
}

export function policySection(raw: Raw, ctx: SectionContext): PolicySection {
  const bpDir = resolve(ctx.base, v(raw, 'blueprints.dir'));
  const agents = v(raw, 'blueprints.agents');
  return {
    blueprints: {
      dir: bpDir,
      agents: agents ? resolve(ctx.base, agents) : existsSync(join(bpDir, 'agents.yaml')) ? join(bpDir, 'agents.yaml') : undefined,
      watch: v(raw, 'blueprints.watch'),
    },
    sources: typeof raw.sources === 'string' ? settingPath(ctx, 'STEWARD_SOURCES', raw.sources) : undefined,
    engine: engineFrom(raw),
    llm: v(raw, 'llm.base_url')
      ? {
          provider: v(raw, 'llm.provider') as 'openai' | 'anthropic',
          baseUrl: v(raw, 'llm.base_url')!,
          apiKey: v(raw, 'llm.api_key'),
          model: v(raw, 'llm.model'),
          timeoutMs: v(raw, 'llm.timeout_ms'),
          maxInFlight: v(raw, 'llm.max_in_flight'),
          thread: v(raw, 'llm.thread'),
        }
      : undefined,
  };
}
