/**
 * Tool input schemas from MCP servers (gate spec §10; docs/rules.md "MCP tool schemas"), through the
 * official client (@modelcontextprotocol/sdk): stdio (`command` + `args`) or Streamable HTTP (`url`).
 * `tools/list` is paged (nextCursor); every page is read within one timeout.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StewardError } from '../../errors.js';
import type { JsonSchema } from '../../engine/rules/types.js';

export interface McpServerSpec {
  name: string;
  url?: string;
  command?: string;
  args?: string[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_PAGES = 50;

/**
 * Size caps of one imported input schema. The schema is stored in the cache, parsed by every load and (the
 * rule's own tool's) sent in the compile prompt; a server is not trusted to keep it small. A 20 000-deep schema
 * made JSON.stringify throw RangeError outside any handler. Real tool schemas are a few KB and a handful of
 * levels deep; these bounds leave room for generated ones.
 */
export const MAX_SCHEMA_DEPTH = 32;
/** Object keys plus array items, over the whole schema. */
export const MAX_SCHEMA_KEYS = 5_000;
/** UTF-8 bytes of the schema as JSON. */
export const MAX_SCHEMA_BYTES = 256 * 1024;

/** Depth and key count, walked with an explicit stack (no recursion: the input is the deep thing). */
function schemaShapeProblem(s: Record<string, unknown>): string | undefined {
  const stack: [unknown, number][] = [[s, 1]];
  let keys = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_SCHEMA_DEPTH) return `nested deeper than ${MAX_SCHEMA_DEPTH} levels`;
    const children = Array.isArray(v) ? v : Object.values(v);
    keys += children.length;
    if (keys > MAX_SCHEMA_KEYS) return `has more than ${MAX_SCHEMA_KEYS} keys and items`;
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push([c, depth + 1]);
  }
  return undefined;
}

/**
 * An input schema is usable when it is an object schema whose properties are schemas (the MCP spec requires
 * `type: "object"`), within the size caps above. Anything else is refused as a whole import (a server answering
 * nonsense for one tool may answer nonsense for all), so the last good import stays in force.
 */
export function inputSchemaProblem(tool: string, s: unknown): string | undefined {
  if (!isObj(s)) return `tool '${tool}': inputSchema is not an object`;
  if (s.type !== 'object') return `tool '${tool}': inputSchema.type must be "object" (is ${JSON.stringify(s.type)})`;
  if (s.properties !== undefined && (!isObj(s.properties) || !Object.values(s.properties).every(isObj))) return `tool '${tool}': inputSchema.properties must map names to schemas`;
  const shape = schemaShapeProblem(s);
  if (shape) return `tool '${tool}': inputSchema ${shape}`;
  // Safe to serialise now: depth and key count are bounded.
  const bytes = Buffer.byteLength(JSON.stringify(s), 'utf8');
  if (bytes > MAX_SCHEMA_BYTES) return `tool '${tool}': inputSchema is ${bytes} bytes as JSON (at most ${MAX_SCHEMA_BYTES})`;
  return undefined;
}

export async function listToolSchemas(server: McpServerSpec, timeoutMs: number): Promise<Map<string, JsonSchema>> {
  if (!server.url === !server.command) throw new StewardError('STEWARD_MCP_CONFIG', `MCP server '${server.name}' needs exactly one of url (Streamable HTTP) or command (stdio)`);
  const transport = server.url
    ? new StreamableHTTPClientTransport(new URL(server.url))
    : new StdioClientTransport({ command: server.command!, args: server.args ?? [], stderr: 'ignore' });
  const client = new Client({ name: 'acgp-steward', version: '1' });
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    await client.connect(transport, { signal, timeout: timeoutMs });
    const out = new Map<string, JsonSchema>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout: timeoutMs });
      for (const t of res.tools) {
        const problem = inputSchemaProblem(t.name, t.inputSchema);
        if (problem) throw new StewardError('STEWARD_MCP_SCHEMA', `MCP server '${server.name}': ${problem}`);
        out.set(t.name, t.inputSchema as JsonSchema);
      }
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    return out;
  } catch (e) {
    if (e instanceof StewardError) throw e;
    throw new StewardError('STEWARD_MCP_UNAVAILABLE', `MCP server '${server.name}' (${server.url ?? server.command}): ${(e as Error).message}`, { retryable: true, cause: e });
  } finally {
    await client.close().catch(() => undefined);
  }
}
