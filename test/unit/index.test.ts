import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as steward from '../../src/index.js';

// The package surface an embedding application uses: compile blueprints, run the engine in-process with
// the embedded stores, sign and verify a verdict, and reach the agent SDK.
describe('public package surface', () => {
  it('embeds the engine end to end from the package entry point alone', async () => {
    const config = steward.defaultEngineConfig();
    const bp = `id: demo/guard@1.0
version: "1.0.0"
description: cap trades
scope: { agent_tier: [ACL-2] }
tripwires:
  - id: cap
    severity: critical
    when: { hook: tool_call }
    condition: "args.n <= 100"
    on_fail: { decision: halt, reason: too big }
scoring: { thresholds: { ok: 0.3, nudge: 0.45, escalate: 0.6, block: 0.75 } }
`;
    const res = steward.compileBlueprintSet([{ file: 'guard.yaml', text: bp }], { config });
    expect(res.errors).toEqual([]);
    const parsed = steward.parseAgentRegistry('agents:\n  - { id: a1, tenant: t, tier: ACL-2 }\n', 'agents.yaml');
    expect(parsed.errors).toEqual([]);
    const registry = parsed.registry!;
    const signer = steward.Ed25519Signer.ephemeral();
    const engine = new steward.StewardEngine({
      blueprints: () => res.set!,
      registry,
      config,
      state: new steward.MemoryStateStore(),
      trustDebt: new steward.MemoryTrustDebtStore(),
      signer,
      engineVersion: 'test',
    });
    const at = Date.UTC(2026, 0, 1);
    const trace = { trace_id: 't1', agent_id: 'a1', timestamp: new Date(at).toISOString(), hook: 'tool_call', tool: 'x', args: { n: 500 } };
    const d = await engine.decide(trace, at);
    expect(d.intervention).toBe('halt');
    expect(d.halted).toBe(true);
    const ok = await engine.decide({ ...trace, trace_id: 't2', args: { n: 5 } }, at);
    expect(ok.halted).toBe(false);
    const scored = await engine.score({ ...trace, trace_id: 't2', args: { n: 5 } }, ok, at);
    expect(steward.verifyVerdict(scored.verdict, signer.publicKeyPem()).ok).toBe(true);
    const forged = { ...scored.verdict, metadata: { ...(scored.verdict as { metadata: object }).metadata, agent_id: 'someone-else' } };
    expect(steward.verifyVerdict(forged, signer.publicKeyPem()).ok).toBe(false);
    expect(typeof (await import('../../src/client/index.js')).StewardClient).toBe('function');
    expect(typeof steward.verifyVerdict).toBe('function');
  });
});

/** Bare packages reached from `entry` through runtime imports (type-only imports are erased by the compiler). */
function packagesReached(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) {
      if (m[1]) continue;
      const spec = m[2];
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  };
  visit(resolve(entry));
  return packages;
}

describe('package entry points', () => {
  it('the engine entry pulls in no Kafka, Avro, Redis or ClickHouse client', () => {
    const reached = packagesReached('src/index.ts');
    expect([...reached].filter((p) => ['kafkajs', 'avsc', '@kafkajs/confluent-schema-registry', 'ioredis', '@clickhouse/client'].includes(p))).toEqual([]);
    expect(reached.has('yaml')).toBe(true); // the walk does reach the engine's own dependencies
  });

  it('the client entry is the Kafka SDK without Redis or ClickHouse', () => {
    const reached = packagesReached('src/client/index.ts');
    expect(reached.has('kafkajs')).toBe(true);
    expect([...reached].filter((p) => ['ioredis', '@clickhouse/client'].includes(p))).toEqual([]);
  });

  it('both entries export names only (no `export *`), and package.json maps them', () => {
    for (const f of ['src/index.ts', 'src/client/index.ts']) expect(readFileSync(f, 'utf8')).not.toMatch(/export \*/);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { exports: Record<string, { default: string }> };
    expect(pkg.exports['.'].default).toBe('./dist/index.js');
    expect(pkg.exports['./client'].default).toBe('./dist/client/index.js');
  });
});
