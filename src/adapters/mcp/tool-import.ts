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
 * An input schema is usable when it is an object schema whose properties are schemas: the MCP spec requires
 * `type: "object"`. Anything else is refused as a whole import (a server answering nonsense for one tool may
 * answer nonsense for all), so the last good import stays in force.
 */
export function inputSchemaProblem(tool: string, s: unknown): string | undefined {
  if (!isObj(s)) return `tool '${tool}': inputSchema is not an object`;
  if (s.type !== 'object') return `tool '${tool}': inputSchema.type must be "object" (is ${JSON.stringify(s.type)})`;
  if (s.properties !== undefined && (!isObj(s.properties) || !Object.values(s.properties).every(isObj))) return `tool '${tool}': inputSchema.properties must map names to schemas`;
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
