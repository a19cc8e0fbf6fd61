/**
 * Tool schemas from real MCP servers (official SDK; stdio and Streamable HTTP): imported into the cache beside
 * the blueprint, `args.*` type-checked at load with positions, and a server that is down or answers invalid
 * schemas leaves the last good import in force with a warning (gate spec §10; docs/rules.md).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSidecars } from '../../../src/adapters/fs/rule-sidecars.js';
import { refreshMcpImports } from '../../../src/adapters/mcp/import-cache.js';
import { listToolSchemas } from '../../../src/adapters/mcp/tool-import.js';
import { compileBlueprintSet, parseAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../src/engine/config.js';
import { mcpCachePath, parseMcpCache } from '../../../src/engine/rules/mcp-cache.js';
import { REFUND_TOOLS, startHttpMcpServer, startRawToolsServer, type HttpMcpServer } from './fixtures/mcp-server.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/mcp-server.ts', import.meta.url));
const blueprint = (server: string) => `id: support/refunds@1.0
version: "1.0.0"
description: refunds
mcp_servers:
${server}
checks:
  - id: refund_cap
    when: { tool: process_refund }
    rule: { condition: "args.amout <= 500", on_fail: { decision: block, reason: cap } }
`;

async function load(file: string, text: string) {
  const files = [{ file, text }];
  const side = await readSidecars(files);
  return { side, res: compileBlueprintSet(files, { config: defaultEngineConfig(), sidecars: side.sidecars }) };
}

describe('MCP tool schema import', () => {
  let dir: string;
  let http: HttpMcpServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'steward-mcp-'));
    http = await startHttpMcpServer(REFUND_TOOLS);
  });
  afterAll(async () => {
    await http?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('Streamable HTTP: imports every page of tools/list; a typo in args is a load error at its position; down or invalid → last good import + warning', async () => {
    const file = join(dir, 'refunds@1.0.yaml');
    const text = blueprint(`  - { name: payments, url: "${http.url}" }`);
    await writeFile(file, text);

    const first = await refreshMcpImports([{ file, text }], { timeoutMs: 10_000 });
    expect(first.warnings).toEqual([]);
    expect(first.written).toEqual([mcpCachePath(file)]);
    const cache = parseMcpCache(await readFile(mcpCachePath(file), 'utf8'))!;
    expect(Object.keys(cache.servers.payments!.tools)).toEqual(['lookup_order', 'process_refund', 'verify_identity']);
    expect(cache.servers.payments!.source).toBe(http.url);

    const { res } = await load(file, text);
    expect(res.errors.map((e) => e.format())).toEqual([expect.stringMatching(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:9:25: STEWARD_DSL_TYPE: args\\.amout: tool 'process_refund' has no input 'amout' \\(its inputs: amount, currency, order_id\\)`))]);
    const fixed = text.replace('args.amout <= 500', "args.amount <= 500 AND args.currency == 'USD'");
    expect((await load(file, fixed)).res.errors).toEqual([]);
    expect((await load(file, text.replace('args.amout <= 500', 'args.order_id > 5'))).res.errors[0]!.message).toMatch(/args\.order_id \(string in tool 'process_refund''s schema\) is compared with a number by >/);

    // invalid schemas: refused as a whole, the last good import stays
    const before = await readFile(mcpCachePath(file), 'utf8');
    http.setTools([{ name: 'process_refund', inputSchema: { type: 'string' } }]);
    const invalid = await refreshMcpImports([{ file, text }], { timeoutMs: 10_000 });
    expect(invalid.written).toEqual([]);
    expect(invalid.warnings.map((w) => w.code)).toEqual(['STEWARD_MCP_IMPORT']);
    expect(invalid.warnings[0]!.message).toMatch(/using the last good import of .* \(3 tools\)/);
    expect(await readFile(mcpCachePath(file), 'utf8')).toBe(before);

    // a schema over the depth cap (review finding 8): STEWARD_MCP_SCHEMA inside, the last good import stays
    let deep: Record<string, unknown> = { type: 'number' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { amount: deep } };
    http.setTools([{ name: 'process_refund', inputSchema: deep }]);
    const tooDeep = await refreshMcpImports([{ file, text }], { timeoutMs: 10_000 });
    expect(tooDeep.written).toEqual([]);
    expect(tooDeep.warnings.map((w) => w.message)).toEqual([expect.stringMatching(/tool 'process_refund': inputSchema nested deeper than 32 levels; using the last good import of .* \(3 tools\)/)]);
    expect(await readFile(mcpCachePath(file), 'utf8')).toBe(before);

    // server down: same, and the load still type-checks against the cache
    http.setTools(REFUND_TOOLS);
    await http.close();
    const down = await refreshMcpImports([{ file, text }], { timeoutMs: 3_000 });
    expect(down.warnings.map((w) => w.code)).toEqual(['STEWARD_MCP_IMPORT']);
    expect(down.warnings[0]!.message).toMatch(/payments.*last good import/);
    expect((await load(file, text)).res.errors.map((e) => e.code)).toEqual(['STEWARD_DSL_TYPE']);
  });

  it('a 20 000-deep input schema on the first import: STEWARD_MCP_SCHEMA as a warning, no cache written, no crash (review finding 8)', async () => {
    let deep = '{"type":"number"}';
    for (let i = 0; i < 20_000; i++) deep = `{"type":"object","properties":{"amount":${deep}}}`;
    const raw = await startRawToolsServer(`[{"name":"process_refund","inputSchema":${deep}}]`);
    try {
      const file = join(dir, 'deep@1.0.yaml');
      const text = blueprint(`  - { name: deep, url: "${raw.url}" }`).replace('support/refunds', 'support/deep');
      await writeFile(file, text);
      const r = await refreshMcpImports([{ file, text }], { timeoutMs: 10_000 });
      expect(r.written).toEqual([]);
      expect(r.warnings.map((w) => w.format())).toEqual([expect.stringMatching(/STEWARD_MCP_IMPORT: MCP server 'deep': tool 'process_refund': inputSchema nested deeper than 32 levels; no earlier import/)]);
      await expect(readFile(mcpCachePath(file), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(listToolSchemas({ name: 'deep', url: raw.url }, 10_000)).rejects.toMatchObject({ code: 'STEWARD_MCP_SCHEMA' });
    } finally {
      await raw.close();
    }
  });

  it('a server never imported that is down: a warning, no type check, the blueprint loads', async () => {
    const file = join(dir, 'never@1.0.yaml');
    const text = blueprint('  - { name: gone, url: "http://127.0.0.1:9/mcp" }').replace('support/refunds', 'support/never');
    await writeFile(file, text);
    const r = await refreshMcpImports([{ file, text }], { timeoutMs: 3_000 });
    expect(r.warnings[0]!.message).toMatch(/no earlier import: its tools' args are not type-checked/);
    const { res } = await load(file, text);
    expect(res.errors).toEqual([]);
    expect(res.set).toBeDefined();
  });

  it('an agents.yaml naming an MCP server: its import holds for every blueprint loaded with it (validate path)', async () => {
    const sub = join(dir, 'registry');
    await mkdir(sub);
    const reg = join(sub, 'agents.yaml');
    const regText = `mcp_servers:\n  - { name: payments, command: ${JSON.stringify(process.execPath)}, args: ["--import", "tsx", ${JSON.stringify(FIXTURE)}] }\nagents:\n  - { id: s1, tenant: acme, tier: ACL-2, tools: [process_refund] }\n`;
    await writeFile(reg, regText);
    expect(parseAgentRegistry(regText, reg).errors).toEqual([]);
    const r = await refreshMcpImports([{ file: reg, text: regText }], { timeoutMs: 20_000 });
    expect(r.warnings).toEqual([]);
    expect(r.written).toEqual([join(sub, 'agents.mcp.lock')]);
    const file = join(sub, 'plain@1.0.yaml');
    const text = blueprint('  []').replace('support/refunds', 'support/plain').replace('mcp_servers:\n  []\n', '');
    const files = [{ file, text }];
    const side = await readSidecars(files, { registryFiles: [reg] });
    const res = compileBlueprintSet(files, { config: defaultEngineConfig(), sidecars: side.sidecars });
    expect(res.errors.map((e) => e.format())).toEqual([expect.stringMatching(/plain@1\.0\.yaml:7:25: STEWARD_DSL_TYPE: args\.amout: tool 'process_refund' has no input 'amout'/)]);
  });

  it('stdio: the same import from a server started as a child process', async () => {
    const tools = await listToolSchemas({ name: 'local', command: process.execPath, args: ['--import', 'tsx', FIXTURE] }, 20_000);
    expect([...tools.keys()].sort()).toEqual(['lookup_order', 'process_refund', 'verify_identity']);
    expect(tools.get('process_refund')).toMatchObject({ type: 'object', properties: { amount: { type: 'number' } } });
    await expect(listToolSchemas({ name: 'broken', command: process.execPath, args: ['-e', 'process.exit(3)'] }, 5_000)).rejects.toMatchObject({ code: 'STEWARD_MCP_UNAVAILABLE' });
  });
});
