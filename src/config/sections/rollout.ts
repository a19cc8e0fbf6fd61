/** rollout.*: triggers, shadow evaluation and the review queue (docs/rollout.md). */
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';
import { settingPath, type SectionContext } from './context.js';

export interface RolloutSection {
  rollout: { windowMs: number; minSamples: number; refreshMs: number; shadowBlueprints?: string; shadowId?: string; reviewQueue: boolean; reviewSlaMs: number };
}

export function rolloutSection(raw: Raw, ctx: SectionContext): RolloutSection {
  const shadow = v(raw, 'rollout.shadow_blueprints');
  const shadowDir = shadow ? settingPath(ctx, 'STEWARD_SHADOW_BLUEPRINTS', shadow) : undefined;
  return {
    rollout: {
      windowMs: v(raw, 'rollout.window_ms'),
      minSamples: v(raw, 'rollout.min_samples'),
      refreshMs: v(raw, 'rollout.refresh_ms'),
      shadowBlueprints: shadowDir,
      // The shadow's id defaults to its directory's name.
      shadowId: v(raw, 'rollout.shadow_id') ?? (shadowDir ? shadowDir.split(/[\\/]/).filter(Boolean).pop() : undefined),
      reviewQueue: v(raw, 'rollout.review_queue'),
      reviewSlaMs: v(raw, 'rollout.review_sla_ms'),
    },
  };
}
