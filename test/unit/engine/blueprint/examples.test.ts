/**
 * Every shipped blueprint resolves, selection over the sample registry picks the intended one, and the
 * resolved form of each is snapshot-tested (test/golden/blueprint/resolved/*.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBlueprintFiles } from '../../../../src/adapters/fs/blueprint-files.js';
import { compileBlueprintSet, parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import type { CompiledBlueprint, EvalContext, Trace } from '../../../../src/engine/types.js';

const root = join(import.meta.dirname, '../../../..');
const dir = join(root, 'blueprints');
const files = await readBlueprintFiles([dir], { base: root });
const res = compileBlueprintSet(files, { config: defaultEngineConfig() });
const registry = parseAgentRegistry(readFileSync(join(dir, 'agents.yaml'), 'utf8'), 'blueprints/agents.yaml').registry!;

function summary(bp: CompiledBlueprint): unknown {
  return {
    id: bp.id,
    version: bp.version,
    chain: bp.chain,
    file: bp.file,
    scope: bp.scope,
    tripwires: bp.tripwires.map((t) => ({ id: t.id, evalTier: t.evalTier, latencyBudgetMs: t.latencyBudgetMs, requiresState: t.requiresState, severity: t.severity, onFail: t.onFail, source: t.condition.source })),
    rules: bp.rules.map((r) => ({ id: r.id, onFail: r.onFail, source: r.condition.source })),
    metrics: bp.metrics.map((m) => ({ id: m.id, name: m.name, weight: m.weight, scorer: m.scorer, parameters: m.parameters })),
    ctq: bp.ctq,
    evidence: bp.evidence,
    scoring: bp.scoring,
    trustDebt: bp.trustDebt,
    lists: bp.lists,
    fallbackOnTimeout: bp.fallbackOnTimeout,
    resolved: bp.resolved,
  };
}

const trace = (t: Partial<Trace>): Trace => ({ trace_id: 't', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', ...t });
const ctx = (t: Trace): EvalContext => ({ trace: t, agent: registry.lookup(t.agent_id), trustDebt: 0, nowMs: 0, stateNamespace: 'acme:a' });

describe('example blueprints', () => {
  it('all compile without errors or warnings', () => {
    expect(res.errors.map((e) => e.format())).toEqual([]);
    expect(res.warnings.map((e) => e.format())).toEqual([]);
    expect(res.set!.blueprints.map((b) => b.id).sort()).toEqual([
      'clarity.baseline@1.0',
      'code/assistant@1.0',
      'finance/trading_bot@1.0',
      'finance/trading_bot@2.0',
      'security/data_guard@1.0',
      'support/refund_agent@1.0',
    ]);
  });

  it('selection over blueprints/agents.yaml', () => {
    const sel = (id: string) => res.set!.select(registry.lookup(id), trace({ agent_id: id })).id;
    expect(sel('trader-1')).toBe('finance/trading_bot@2.0');
    expect(sel('coder-1')).toBe('code/assistant@1.0');
    expect(sel('support-1')).toBe('support/refund_agent@1.0');
    expect(sel('unregistered')).toBe('security/data_guard@1.0');
  });

  it('the corrected §9.4.5 conditions hold for benign traces and fail for violations', async () => {
    const code = res.set!.get('code/assistant@1.0')!;
    const db = code.tripwires.find((t) => t.id === 'dangerous_db_ops')!;
    const q = (query: string, table: string) => ctx(trace({ agent_id: 'coder-1', tool: 'database_query', action: { query, table } }));
    expect(await db.condition.evaluate(q('DROP TABLE users', 'users'))).toBe(false);
    expect(await db.condition.evaluate(q('DROP TABLE scratch', 'scratch'))).toBe(true);
    expect(await db.condition.evaluate(q('SELECT * FROM users', 'users'))).toBe(true);
    const sh = code.tripwires.find((t) => t.id === 'destructive_shell')!;
    expect(await sh.condition.evaluate(ctx(trace({ agent_id: 'coder-1', tool: 'shell', args: { command: 'rm -rf /' } })))).toBe(false);
    expect(await sh.condition.evaluate(ctx(trace({ agent_id: 'coder-1', tool: 'shell', args: { command: 'ls -la' } })))).toBe(true);
    const guard = res.set!.get('security/data_guard')!;
    const pii = guard.tripwires.find((t) => t.id === 'pii_exposure')!;
    expect(await pii.condition.evaluate(ctx(trace({ hook: 'output', content: 'SSN 123-45-6789' })))).toBe(false);
    expect(await pii.condition.evaluate(ctx(trace({ hook: 'output', content: 'all good' })))).toBe(true);
    const trading = res.set!.get('finance/trading_bot@1')!;
    const cap = trading.rules.find((r) => r.id === 'single_trade_volume_cap')!;
    expect(cap.when(trace({ tool: 'execute_trade' }))).toBe(true);
    expect(cap.when(trace({ tool: 'market_data_api' }))).toBe(false);
    expect(await cap.condition.evaluate(ctx(trace({ agent_id: 'trader-1', tool: 'execute_trade', args: { trade_value: 60000 } })))).toBe(false);
  });

  for (const bp of res.set?.blueprints ?? []) {
    it(`resolved form of ${bp.id}`, async () => {
      const name = bp.id.replace(/[/@]/g, '_');
      await expect(JSON.stringify(summary(bp), null, 2) + '\n').toMatchFileSnapshot(join(root, 'test/golden/blueprint/resolved', `${name}.json`));
    });
  }
});
