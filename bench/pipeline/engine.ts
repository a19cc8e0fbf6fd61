// The real engine for the pipeline bench: repository blueprints + agents.yaml, Redis state and trust
// debt under a throwaway key prefix (deleted afterwards).
import { fileURLToPath } from 'node:url';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** 30 registered agents: 10 clones of each demo agent (a deployment governs many agents, not three). */
export const BENCH_AGENTS: { id: string; type: 'trader-1' | 'coder-1' | 'support-1' }[] = [];
const AGENT_YAML: string[] = ['agents:'];
for (let k = 0; k < 10; k++) {
  for (const [type, tier, tools, dom] of [
    ['trader-1', 'ACL-3', '[execute_trade, market_data_api]', '[production]'],
    ['coder-1', 'ACL-2', '[database_query, shell]', '[staging]'],
    ['support-1', 'ACL-2', '[issue_refund, send_email]', '[production]'],
  ] as const) {
    const id = `${type.split('-')[0]}-b${k}`;
    BENCH_AGENTS.push({ id, type });
    AGENT_YAML.push(`  - { id: ${id}, tenant: bench, tier: ${tier}, tools: ${tools}, domains: ${dom} }`);
  }
}
import type { StewardConfig } from '../../src/config/steward-config.js';
import type { PipelineDeps } from '../../src/process/pipeline.js';
import { bootstrapEngine } from '../../src/process/engine-runtime.js';
import { createLogger } from '../../src/logger.js';

export async function benchEngineDeps(cfg0: StewardConfig): Promise<{ deps: PipelineDeps; engineName: string; close(): Promise<void> }> {
  const dir = fileURLToPath(new URL('../../blueprints', import.meta.url));
  const prefix = `bench-${Date.now().toString(36)}:`;
  const agentsFile = join(mkdtempSync(join(tmpdir(), 'steward-bench-')), 'agents.yaml');
  writeFileSync(agentsFile, AGENT_YAML.join('\n') + '\n');
  const cfg: StewardConfig = { ...cfg0, blueprints: { dir, agents: agentsFile, watch: false }, redis: { ...cfg0.redis, keyPrefix: prefix } };
  const rt = await bootstrapEngine(cfg, ['tripwire', 'scorer'], createLogger({ level: 'silent' }));
  return {
    deps: rt.deps,
    engineName: 'steward(blueprints/, redis)',
    async close() {
      const r = rt.redis!;
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length) await r.unlink(...keys);
      } while (cursor !== '0');
      await rt.close();
    },
  };
}
