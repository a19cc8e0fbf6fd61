/**
 * The files beside a blueprint that its load reads (docs/rules.md): the rules lock (`*.rules.lock`,
 * written by `steward compile-rules`) and the MCP import cache (`*.mcp.lock`). Both are optional; a missing
 * one is normal, an unreadable or malformed one is a warning (its rules become text checks, its tools are
 * not type-checked), never a failed load.
 */
import { readFile } from 'node:fs/promises';
import { StewardError } from '../../errors.js';
import { parseRuleLock, ruleLockPath } from '../../engine/rules/lock.js';
import { mcpCachePath, parseMcpCache, toolSchemasOf } from '../../engine/rules/mcp-cache.js';
import type { JsonSchema, RuleLock, ToolSchemas } from '../../engine/rules/types.js';

export type Sidecars = Map<string, { lock?: RuleLock; tools?: ToolSchemas }>;

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

// A top-level YAML key, or the JSON key (JSON blueprints): a cheap look before any stat.
const mentions = (text: string, key: string) => new RegExp(`^${key}\\s*:|"${key}"\\s*:`, 'm').test(text);

/**
 * `registryFiles`: agent registries (agents.yaml) loaded with these blueprints; their MCP imports
 * (`agents.mcp.lock`) hold for every blueprint, under the blueprint's own imports (a tool both name: the
 * blueprint's schema).
 */
export async function readSidecars(files: readonly { file: string; text: string }[], opts: { registryFiles?: readonly string[] } = {}): Promise<{ sidecars: Sidecars; warnings: StewardError[] }> {
  const sidecars: Sidecars = new Map();
  const warnings: StewardError[] = [];
  const warn = (file: string, msg: string) => warnings.push(new StewardError('STEWARD_RULES_LOCK', msg, { position: { file, line: 1, col: 1 } }));
  const shared = new Map<string, JsonSchema>();
  for (const r of opts.registryFiles ?? []) {
    const path = mcpCachePath(r);
    const text = await readOptional(path).catch((e: Error) => void warn(path, `cannot read the MCP import cache: ${e.message}`));
    if (text === undefined) continue;
    const c = parseMcpCache(text);
    if (!c) warn(path, 'the MCP import cache is not {"version": 1, "servers": {...}}: tool args are not type-checked');
    else for (const [t, s] of toolSchemasOf(c)) if (!shared.has(t)) shared.set(t, s);
  }
  for (const f of files) {
    // Only blueprints that use rules or MCP servers look for their files: no stat per blueprint otherwise.
    const wantsLock = mentions(f.text, 'rules');
    const wantsMcp = mentions(f.text, 'mcp_servers');
    if (!wantsLock && !wantsMcp) {
      if (shared.size) sidecars.set(f.file, { tools: shared });
      continue;
    }
    const entry: { lock?: RuleLock; tools?: ToolSchemas } = shared.size ? { tools: shared } : {};
    if (wantsLock) {
      const path = ruleLockPath(f.file);
      try {
        const text = await readOptional(path);
        if (text !== undefined) {
          const p = parseRuleLock(text, path);
          if (p.problem) warnings.push(p.problem);
          if (p.lock) entry.lock = p.lock;
        }
      } catch (e) {
        warn(path, `cannot read the rules lock: ${(e as Error).message}`);
      }
    }
    if (wantsMcp) {
      const path = mcpCachePath(f.file);
      try {
        const text = await readOptional(path);
        if (text !== undefined) {
          const c = parseMcpCache(text);
          if (!c) warn(path, 'the MCP import cache is not {"version": 1, "servers": {...}}: tool args are not type-checked');
          else entry.tools = new Map([...shared, ...toolSchemasOf(c)]);
        }
      } catch (e) {
        warn(path, `cannot read the MCP import cache: ${(e as Error).message}`);
      }
    }
    sidecars.set(f.file, entry);
  }
  return { sidecars, warnings };
}
