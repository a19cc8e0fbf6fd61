/**
 * Process configuration: steward.yaml (snake_case, schemas/steward-config.schema.json) + environment
 * overrides → a typed StewardConfig. Problems surface as STEWARD_CONFIG errors naming the file, line,
 * column and JSON path, all of them at once. The text and schema live in config-text.ts, the environment in
 * env-overrides.ts, and each group of settings in its section builder under sections/.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { StewardError } from '../errors.js';
import { SETTINGS, settingValue as v } from './settings.js';
import { parseConfigText, type Raw } from './config-text.js';
import { envOverrides, validateWithEnv } from './env-overrides.js';
import type { SectionContext } from './sections/context.js';
import { kafkaSection, type KafkaSection } from './sections/kafka.js';
import { storesSection, type StoresSection } from './sections/stores.js';
import { policySection, type PolicySection } from './sections/policy.js';
import { streamSection, type StreamSection } from './sections/stream.js';
import { serversSection, type ServersSection } from './sections/servers.js';
import { identitySection, type IdentitySection } from './sections/identity.js';
import { rolloutSection, type RolloutSection } from './sections/rollout.js';

export { parseConfigText } from './config-text.js';
export { defaultGroupPrefix } from './sections/stream.js';

export interface StewardConfig extends KafkaSection, StoresSection, PolicySection, StreamSection, ServersSection, IdentitySection, RolloutSection {
  logLevel: string;
  /** The file it came from (undefined for defaults + env only). */
  file?: string;
  /** Settings that were given but take no effect (logged by `steward run` at startup). */
  warnings?: string[];
}

/** Default limits.max_trace_bytes: leaves ~100 KB of the output limit for the decision record the scoring message adds. */
export const DEFAULT_MAX_TRACE_BYTES = SETTINGS['limits.max_trace_bytes'].default;
/** Default limits.max_message_bytes: below the broker's default max.message.bytes (1 048 588). */
export const DEFAULT_MAX_MESSAGE_BYTES = SETTINGS['limits.max_message_bytes'].default;
/** Default trust_debt.dedup_ttl_seconds: 7 days (docs/trust-debt.md: keep input retention below it). */
export const DEFAULT_DEDUP_TTL_SECONDS = SETTINGS['trust_debt.dedup_ttl_seconds'].default;

/** Builds the typed config from an already validated raw object (after env overrides). */
export function buildConfig(raw0: Raw, env: NodeJS.ProcessEnv = process.env, file?: string): StewardConfig {
  const { raw, sources } = envOverrides(raw0, env);
  // Env values must obey the same schema as the file.
  validateWithEnv(raw0, raw, sources, file);
  const ctx: SectionContext = { base: file ? dirname(resolve(file)) : process.cwd(), fromEnv: (name) => sources.some((s) => s.name === name) };
  // Sections in this order: it is the order of the config's keys, and of the errors a file with several problems meets.
  return {
    ...kafkaSection(raw, ctx),
    ...storesSection(raw),
    ...policySection(raw, ctx),
    ...streamSection(raw),
    ...serversSection(raw, ctx),
    ...identitySection(raw, ctx),
    ...rolloutSection(raw, ctx),
    logLevel: v(raw, 'log_level'),
    file,
    warnings: ignoredSettings(raw),
  };
}

/** Values the operator set that this configuration ignores: said out loud rather than silently dropped. */
function ignoredSettings(raw: Raw): string[] {
  const out: string[] = [];
  if (!raw.llm?.base_url && (raw.llm?.api_key !== undefined || raw.llm?.model !== undefined)) {
    out.push('llm.api_key / llm.model (or STEWARD_LLM_API_KEY / STEWARD_LLM_MODEL) set without llm.base_url (STEWARD_LLM_BASE_URL): no LLM is configured, llm metrics are skipped');
  }
  if (raw.observability?.enabled === false && (raw.observability?.port !== undefined || raw.observability?.host !== undefined)) {
    out.push('observability.port / host (or STEWARD_METRICS_PORT / STEWARD_METRICS_HOST) set while observability.enabled is false: /metrics is not served (--metrics-port serves it anyway)');
  }
  return out;
}

/**
 * Loads `file` (or ./steward.yaml when present, else defaults), applies the environment and validates.
 * Throws STEWARD_CONFIG (a StewardAggregateError listing every problem) on invalid input.
 */
export function loadStewardConfig(file?: string, env: NodeJS.ProcessEnv = process.env): StewardConfig {
  const path = file ?? (existsSync('steward.yaml') ? 'steward.yaml' : undefined);
  if (path === undefined) return buildConfig({}, env);
  if (!existsSync(path)) throw new StewardError('STEWARD_CONFIG', `config file not found: ${path}`);
  return buildConfig(parseConfigText(readFileSync(path, 'utf8'), path), env, path);
}

/** Consumer group id of a stage: `${group_prefix}-${stage}` (all instances of a stage share it). */
export function groupId(cfg: StewardConfig, stage: string): string {
  return `${cfg.consumer.groupPrefix}-${stage}`;
}
