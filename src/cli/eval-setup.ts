/**
 * Shared setup of the offline commands (eval, test, calibrate): read blueprints, agents, config,
 * sources, signing key and LLM settings, and build a StewardEngine with in-memory state.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sortProblems, StewardError } from '../errors.js';
import { loadBlueprintFiles } from '../adapters/fs/blueprint-files.js';
import { llmClientFor, llmClientFromEnv } from '../config/llm.js';
import { compileBlueprintSet, createAgentRegistry, parseAgentRegistry, type AgentRegistry, type BlueprintSet } from '../engine/blueprint/index.js';
import { defaultEngineConfig, type EngineConfig } from '../engine/config.js';
import { createDefaultScorerRegistry, parseSourceRegistry, type SourceRegistry } from '../engine/scorers/index.js';
import { MemoryStateStore } from '../engine/state/memory-state-store.js';
import { StewardEngine } from '../engine/steward-engine.js';
import { FinalizationGate, MemoryGateJobStore } from '../engine/gate/index.js';
import { MemoryTrustDebtStore, type TrustDebtStore } from '../engine/trust-debt/index.js';
import type { LlmClient, StateStore } from '../engine/types.js';
import { Ed25519Signer, type VerdictSigner } from '../engine/verdict/index.js';
import { readUtf8FileSync } from '../adapters/fs/text.js';
import { readSidecars } from '../adapters/fs/rule-sidecars.js';

export interface OfflineOptions {
  blueprints: string;
  agents?: string;
  config?: string;
  sources?: string;
  signingKey?: string;
  /** Injected in tests (in-process LLM); otherwise from env/config. */
  llm?: LlmClient | null;
  /** Commands that never publish verdicts (test, calibrate) sign with an ephemeral key silently. */
  ephemeralKeyOk?: boolean;
  env?: NodeJS.ProcessEnv;
  warn: (msg: string) => void;
}

export interface OfflineSetup {
  engine: StewardEngine;
  set: BlueprintSet;
  registry: AgentRegistry;
  config: EngineConfig;
  signer: VerdictSigner;
  llm?: LlmClient;
  /** A fresh engine (new in-memory state and trust debt) over the same compiled blueprints. */
  /** The run's finalization gate (in-memory job state), shared by `engine` (docs/gate.md "steward eval"). */
  gate: FinalizationGate;
  /** `gate`: the engine's finalization gate; a fresh one (own job state) when not given, none when null. */
  makeEngine(opts?: { llm?: LlmClient | null; onWarning?: (m: string) => void; blueprints?: () => BlueprintSet; state?: StateStore; gate?: FinalizationGate | null; trustDebt?: TrustDebtStore }): StewardEngine;
}

/** Bad input to an offline command (exit 2); `problems` are already formatted lines. */
export class SetupError extends Error {
  constructor(message: string, readonly problems: string[] = []) {
    super(message);
  }
}

export function engineVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) return String((JSON.parse(readFileSync(p, 'utf8')) as { version?: string }).version ?? '0.0.0');
    dir = dirname(dir);
  }
  return '0.0.0';
}

function readText(file: string, what: string): string {
  try {
    return readUtf8FileSync(file);
  } catch (e) {
    // Invalid UTF-8 comes with its position (file:line:col); an I/O error names the file.
    if (e instanceof StewardError) throw new SetupError(e.format());
    throw new SetupError(`cannot read ${what} ${file}: ${(e as Error).message}`);
  }
}

export async function setupOffline(o: OfflineOptions): Promise<OfflineSetup> {
  const env = o.env ?? process.env;
  if (!existsSync(o.blueprints)) throw new SetupError(`no such blueprint directory: ${o.blueprints}`);
  let config = defaultEngineConfig();
  let cfgLlm: { baseUrl: string; apiKey?: string; model?: string; maxInFlight?: number; timeoutMs?: number } | undefined;
  let cfgSigning: string | undefined;
  let cfgSources: string | undefined;
  if (o.config) {
    try {
      const { loadStewardConfig } = await import('../config/steward-config.js');
      const c = loadStewardConfig(o.config, env);
      config = c.engine;
      cfgLlm = c.llm;
      cfgSigning = c.signing?.key;
      cfgSources = c.sources;
    } catch (e) {
      throw new SetupError(e instanceof StewardError ? e.format() : `bad config ${o.config}: ${(e as Error).message}`);
    }
  }

  const agentsFile = o.agents ?? (statSync(o.blueprints).isDirectory() && existsSync(join(o.blueprints, 'agents.yaml')) ? join(o.blueprints, 'agents.yaml') : undefined);
  let registry: AgentRegistry = createAgentRegistry([], config.defaultTier);
  if (agentsFile) {
    const r = parseAgentRegistry(readText(agentsFile, 'agent registry'), agentsFile, { defaultTier: config.defaultTier });
    if (!r.registry || r.errors.length) throw new SetupError(`invalid agent registry ${agentsFile}`, r.errors.map((e) => e.format()));
    registry = r.registry;
  }

  // An unreadable file (dangling symlink, invalid UTF-8) is an invalid blueprint like any other (exit 2).
  const loaded = await loadBlueprintFiles([o.blueprints]);
  // Verification sheets and acm.yaml (run governance, docs/acm.md) sit next to the blueprints but are not blueprints.
  const files = loaded.files.filter((f) => !/^(?:agents|acm)\.ya?ml$/.test(basename(f.file)) && !/\.(?:test|verify)\.ya?ml$/.test(f.file));
  const side = await readSidecars(files, { registryFiles: agentsFile ? [agentsFile] : [] });
  for (const w of side.warnings) o.warn(`warning: ${w.format()}`);
  const res = compileBlueprintSet(files, { config, sidecars: side.sidecars });
  if (!res.set || loaded.errors.length) throw new SetupError(`invalid blueprints in ${o.blueprints}`, sortProblems([...loaded.errors, ...res.errors]).map((e) => e.format()));
  for (const w of res.warnings) o.warn(`warning: ${w.format()}`);
  const set = res.set;

  let sourceRegistry: SourceRegistry | undefined;
  // Same precedence as `steward run`: flag, then STEWARD_SOURCES (STEWARD_SOURCE_REGISTRY is the older name), then steward.yaml `sources:`.
  const sourcesFile = o.sources ?? env.STEWARD_SOURCES ?? env.STEWARD_SOURCE_REGISTRY ?? cfgSources;
  if (sourcesFile) {
    try {
      sourceRegistry = parseSourceRegistry(readText(sourcesFile, 'source registry'), sourcesFile);
    } catch (e) {
      throw new SetupError(e instanceof StewardError ? e.message : String(e));
    }
  }

  const keyFile = o.signingKey ?? env.STEWARD_SIGNING_KEY ?? cfgSigning;
  let signer: VerdictSigner;
  if (keyFile) {
    try {
      signer = Ed25519Signer.fromPem(readText(keyFile, 'signing key'));
    } catch (e) {
      throw new SetupError(`bad signing key ${keyFile}: ${(e as Error).message}`);
    }
  } else {
    signer = Ed25519Signer.ephemeral();
    if (!o.ephemeralKeyOk)
      o.warn(`warning: STEWARD_SIGNING_KEY not set: verdicts are signed with an ephemeral key (kid ${signer.kid}); they cannot be verified later`);
  }

  let llm: LlmClient | undefined;
  if (o.llm !== undefined) llm = o.llm ?? undefined;
  else {
    try {
      llm = llmClientFromEnv(env) ?? llmClientFor(cfgLlm);
    } catch (e) {
      throw new SetupError((e as Error).message);
    }
  }
  const version = engineVersion();
  // The finalization gate (contracts C5): the same engine path as the stream — a job's tool calls are gated and
  // recorded in decide(), its final answers judged by finalize() — over an in-memory job store.
  const newGate = (gateLlm: LlmClient | undefined): FinalizationGate =>
    new FinalizationGate({
      llm: gateLlm,
      jobStore: new MemoryGateJobStore(),
      limits: { ...(cfgLlm?.maxInFlight && { maxJudgeInFlight: cfgLlm.maxInFlight }), ...(cfgLlm?.timeoutMs && { judgeTimeoutMs: cfgLlm.timeoutMs }) },
      onWarning: (m) => o.warn(`warning: ${m}`),
    });
  type MakeOpts = { llm?: LlmClient | null; onWarning?: (m: string) => void; blueprints?: () => BlueprintSet; state?: StateStore; gate?: FinalizationGate | null; trustDebt?: TrustDebtStore };
  const makeEngine = (mo: MakeOpts = {}): StewardEngine =>
    new StewardEngine({
      blueprints: mo.blueprints ?? (() => set),
      registry,
      config,
      state: mo.state ?? new MemoryStateStore(),
      trustDebt: mo.trustDebt ?? new MemoryTrustDebtStore(),
      llm: mo.llm === undefined ? llm : (mo.llm ?? undefined),
      signer,
      scorers: createDefaultScorerRegistry({ maxInFlight: cfgLlm?.maxInFlight, timeoutMs: cfgLlm?.timeoutMs, backoffMs: 50 }),
      sourceRegistry,
      engineVersion: version,
      onWarning: mo.onWarning ?? ((m) => o.warn(`warning: ${m}${m.includes('no LLM') ? ' (set STEWARD_LLM_BASE_URL)' : ''}`)),
      gate: mo.gate === undefined ? newGate(mo.llm === undefined ? llm : (mo.llm ?? undefined)) : (mo.gate ?? undefined),
    });
  const gate = newGate(llm);
  const engine = makeEngine({ gate });
  return { engine, set, registry, config, signer, llm, gate, makeEngine };

}
