/**
 * Refreshing the MCP import cache beside each blueprint that names `mcp_servers` (docs/rules.md "MCP tool
 * schemas"). A server that answers valid schemas replaces its entry; one that is down, times out or answers
 * invalid schemas keeps the last good entry and yields a warning — never an error, never a crashed load.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { StewardError } from '../../errors.js';
import { mcpCachePath, parseMcpCache, renderMcpCache, type McpCache } from '../../engine/rules/mcp-cache.js';
import { listToolSchemas, type McpServerSpec } from './tool-import.js';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function mcpServersOf(text: string): McpServerSpec[] {
  let v: unknown;
  try {
    v = parse(text);
  } catch {
    return []; // the blueprint's own load reports the syntax error
  }
  if (!isObj(v) || !Array.isArray(v.mcp_servers)) return [];
  return v.mcp_servers
    .filter((s): s is Record<string, unknown> => isObj(s) && typeof s.name === 'string')
    .map((s) => ({
      name: s.name as string,
      ...(typeof s.url === 'string' && { url: s.url }),
      ...(typeof s.command === 'string' && { command: s.command }),
      ...(Array.isArray(s.args) && { args: s.args.map(String) }),
    }));
}

async function readCache(path: string): Promise<McpCache | undefined> {
  try {
    return parseMcpCache(await readFile(path, 'utf8'));
  } catch {
    return undefined;
  }
}

export interface RefreshResult {
  warnings: StewardError[];
  /** Cache files written (a server's import changed or was new). */
  written: string[];
}

/**
 * `files`: blueprint files with their text (as the loader read them). `timeoutMs` bounds each server.
 * `now` stamps new imports (ISO text in the cache, for the reviewer).
 */
export async function refreshMcpImports(files: readonly { file: string; text: string }[], opts: { timeoutMs: number; now?: () => Date }): Promise<RefreshResult> {
  const out: RefreshResult = { warnings: [], written: [] };
  for (const f of files) {
    const servers = mcpServersOf(f.text);
    if (servers.length === 0) continue;
    const path = mcpCachePath(f.file);
    const prev = await readCache(path);
    const next: McpCache = { version: 1, servers: { ...(prev?.servers ?? {}) } };
    let changed = false;
    for (const s of servers) {
      try {
        const tools = await listToolSchemas(s, opts.timeoutMs);
        const entry = { source: s.url ?? [s.command, ...(s.args ?? [])].join(' '), imported_at: (opts.now?.() ?? new Date()).toISOString(), tools: Object.fromEntries([...tools].sort(([a], [b]) => a.localeCompare(b))) };
        const old = prev?.servers[s.name];
        if (!old || JSON.stringify(old.tools) !== JSON.stringify(entry.tools) || old.source !== entry.source) {
          next.servers[s.name] = entry;
          changed = true;
        }
      } catch (e) {
        const old = prev?.servers[s.name];
        const keep = old ? `using the last good import of ${old.imported_at} (${Object.keys(old.tools).length} tools)` : "no earlier import: its tools' args are not type-checked";
        out.warnings.push(new StewardError('STEWARD_MCP_IMPORT', `${(e as Error).message}; ${keep}`, { position: { file: f.file, line: 1, col: 1, path: '$.mcp_servers' } }));
      }
    }
    if (changed) {
      await writeFile(path, renderMcpCache(next));
      out.written.push(path);
    }
  }
  return out;
}
