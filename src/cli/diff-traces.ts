/**
 * `steward diff --traces FILE OLD NEW` (docs/rollout.md "Offline diff"): the offline twin of shadow
 * evaluation. Two blueprint sets (directories or files) decide every recorded trace (JSONL, one trace per
 * line) at its own timestamp, each with its own in-memory state and trust debt, and the decisions go through
 * the same diff function the live shadow uses (engine/rollout/diff.ts). Prints one diff per line with
 * --json, then the summary `steward shadow report` prints.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { readBlueprintFiles } from '../adapters/fs/blueprint-files.js';
import { readUtf8FileSync } from '../adapters/fs/text.js';
import { loadStewardConfig } from '../config/steward-config.js';
import { compileBlueprintSet, createAgentRegistry, parseAgentRegistry, type AgentRegistry, type BlueprintSet } from '../engine/blueprint/index.js';
import type { EngineConfig } from '../engine/config.js';
import { diffDecisions, summarizeDiffs, type ShadowDiff } from '../engine/rollout/diff.js';
import { MemoryStateStore } from '../engine/state/memory-state-store.js';
import { StewardEngine } from '../engine/steward-engine.js';
import { parseTimestamp } from '../engine/time.js';
import { MemoryTrustDebtStore } from '../engine/trust-debt/index.js';
import type { Trace } from '../engine/types.js';
import { StewardAggregateError, StewardError } from '../errors.js';

async function setOf(path: string, config: EngineConfig): Promise<BlueprintSet> {
  const res = compileBlueprintSet(await readBlueprintFiles([path]), { config });
  if (!res.set) throw new StewardAggregateError('STEWARD_BLUEPRINT_INVALID', res.errors);
  return res.set;
}

function registryOf(file: string | undefined, config: EngineConfig): AgentRegistry {
  if (!file || !existsSync(file)) return createAgentRegistry([], config.defaultTier);
  const r = parseAgentRegistry(readUtf8FileSync(file), file, { defaultTier: config.defaultTier });
  if (!r.registry) throw new StewardAggregateError('STEWARD_CONFIG', r.errors);
  return r.registry;
}

export interface OfflineDiffOptions {
  traces: string;
  active: string;
  candidate: string;
  agents?: string;
  config?: string;
  shadowId?: string;
}

/** The diffs of every trace of the file, in file order. */
export async function offlineDiffs(o: OfflineDiffOptions): Promise<ShadowDiff[]> {
  const cfg = loadStewardConfig(o.config);
  const registry = registryOf(o.agents ?? cfg.blueprints.agents, cfg.engine);
  const engineOn = (set: BlueprintSet) =>
    new StewardEngine({ blueprints: () => set, registry, config: cfg.engine, state: new MemoryStateStore(), trustDebt: new MemoryTrustDebtStore(), engineVersion: 'diff' });
  const active = engineOn(await setOf(o.active, cfg.engine));
  const candidate = engineOn(await setOf(o.candidate, cfg.engine));
  const out: ShadowDiff[] = [];
  const lines = (await readFile(o.traces, 'utf8')).split('\n');
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let trace: Trace;
    try {
      trace = JSON.parse(line) as Trace;
    } catch (e) {
      throw new StewardError('STEWARD_TRACE_JSON', `${o.traces}:${i + 1}: not JSON: ${(e as Error).message}`);
    }
    const at = parseTimestamp(String(trace.timestamp));
    const a = await active.decide(trace, at);
    const b = await candidate.decide(trace, at);
    out.push(diffDecisions(a, b, { shadowId: o.shadowId ?? 'offline', traceId: trace.trace_id, agentId: trace.agent_id, tenant: a.tenant, eventTimeMs: at, evaluatedAtMs: 0 }));
  }
  return out;
}

export { summarizeDiffs };
