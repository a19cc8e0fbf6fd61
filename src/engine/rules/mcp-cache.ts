/**
 * The MCP import cache (docs/rules.md "MCP tool schemas"): `<blueprint file without extension>.mcp.lock`
 * beside the blueprint, JSON, one entry per server with its last good `tools/list` import. The loader
 * type-checks `args.*` against it; a server that is down or answers invalid schemas leaves its entry as it
 * was (the last good import), so a load never depends on a server being up.
 */
import type { JsonSchema, ToolSchemas } from './types.js';

export const MCP_CACHE_SUFFIX = '.mcp.lock';

export interface McpServerImport {
  /** Where it was imported from (url or command line), for the reviewer. */
  source: string;
  imported_at: string;
  tools: Record<string, JsonSchema>;
}

export interface McpCache {
  version: 1;
  servers: Record<string, McpServerImport>;
}

export function mcpCachePath(blueprintFile: string): string {
  return blueprintFile.replace(/\.(ya?ml|json)$/i, '') + MCP_CACHE_SUFFIX;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** undefined when the text is not a cache (the caller warns and type-checks nothing). */
export function parseMcpCache(text: string): McpCache | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObj(v) || v.version !== 1 || !isObj(v.servers)) return undefined;
  const servers: Record<string, McpServerImport> = {};
  for (const [name, s] of Object.entries(v.servers)) {
    if (!isObj(s) || !isObj(s.tools)) continue;
    const tools: Record<string, JsonSchema> = {};
    for (const [t, schema] of Object.entries(s.tools)) if (isObj(schema)) tools[t] = schema;
    servers[name] = { source: String(s.source ?? ''), imported_at: String(s.imported_at ?? ''), tools };
  }
  return { version: 1, servers };
}

export function renderMcpCache(c: McpCache): string {
  const servers = Object.fromEntries(Object.keys(c.servers).sort().map((k) => [k, c.servers[k]]));
  return JSON.stringify({ version: 1, servers }, null, 2) + '\n';
}

/** Every server's tools in one map; a tool two servers list takes the first server's schema (by name order). */
export function toolSchemasOf(c: McpCache | undefined): ToolSchemas {
  const out = new Map<string, JsonSchema>();
  if (!c) return out;
  for (const name of Object.keys(c.servers).sort()) for (const [t, s] of Object.entries(c.servers[name]!.tools)) if (!out.has(t)) out.set(t, s);
  return out;
}
