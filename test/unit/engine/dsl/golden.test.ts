/**
 * Data-driven DSL tests: every YAML file under test/golden/dsl holds cases of
 * {condition, checks: [{trace, expect}]} or {condition, error: {code, path?, offset?}}.
 * Checks of one case run in order against one in-memory state store (for exceeds_rate).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compileCondition, type DslCompileOptions } from '../../../../src/engine/dsl/index.js';
import { MemoryStateStore } from '../../../../src/engine/state/memory-state-store.js';
import type { EvalContext, Trace } from '../../../../src/engine/types.js';

interface Check {
  trace?: Record<string, unknown>;
  trust_debt?: number;
  now?: number;
  /** `cannot_evaluate`: the condition throws the DSL's evaluation error (the stage fails closed). */
  expect: boolean | 'cannot_evaluate';
}
interface Case {
  name: string;
  condition: unknown;
  state?: Record<string, unknown>;
  checks?: Check[];
  error?: { code: string; path?: string; offset?: number };
}
interface GoldenFile {
  options?: Partial<DslCompileOptions>;
  cases: Case[];
}

const DIR = join(__dirname, '../../../golden/dsl');

export const BASE_OPTIONS: DslCompileOptions = {
  lists: {
    approved_tools: ['search', 'calculator', 'execute_trade'],
    deletable_tables: ['tmp_scratch', 'staging_events'],
    approved_endpoints: ['api.partner.com', '*.trusted.io'],
    trusted_endpoints: ['https://backup.partner.com/upload'],
    blocked_domains: ['evil.example', 'paste.bin'],
  },
  internalDomains: ['corp.example.com'],
  internalCidrs: ['100.64.0.0/10'],
  namedPatterns: { TICKET_PATTERN: '\\bTKT-\\d{6}\\b' },
};

function ctxFor(check: Check, i: number, state: MemoryStateStore): EvalContext {
  const trace: Trace = { trace_id: `t-${i}`, agent_id: 'agent-1', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call', ...(check.trace ?? {}) };
  return {
    trace,
    agent: { id: trace.agent_id, tenant: 'acme', tier: 'ACL-3', tools: ['execute_trade'], domains: ['production'], registered: true },
    trustDebt: check.trust_debt ?? 0.1,
    nowMs: check.now ?? 1_000_000 + i,
    stateNamespace: `acme:${trace.agent_id}`,
    state,
  };
}

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'));

describe('DSL golden cases', () => {
  it('has golden files', () => expect(files.length).toBeGreaterThan(3));
  for (const file of files) {
    const doc = parse(readFileSync(join(DIR, file), 'utf8')) as GoldenFile;
    const opts: DslCompileOptions = { ...BASE_OPTIONS, ...(doc.options ?? {}), lists: { ...BASE_OPTIONS.lists, ...(doc.options?.lists ?? {}) } };
    describe(file, () => {
      for (const c of doc.cases) {
        it(c.name, async () => {
          const { condition, problems } = compileCondition(c.condition, opts);
          if (c.error) {
            expect(condition).toBeUndefined();
            const match = problems.find((p) => p.code === c.error!.code);
            expect(match, JSON.stringify(problems)).toBeDefined();
            if (c.error.path !== undefined) expect(match!.path).toBe(c.error.path);
            if (c.error.offset !== undefined) expect(match!.offset).toBe(c.error.offset);
            return;
          }
          expect(problems).toEqual([]);
          const state = new MemoryStateStore({ 'acme:agent-1': c.state ?? {} });
          const checks = c.checks ?? [];
          expect(checks.length).toBeGreaterThan(0);
          for (let i = 0; i < checks.length; i++) {
            if (checks[i]!.expect === 'cannot_evaluate') {
              const err = await Promise.resolve()
                .then(() => condition!.evaluate(ctxFor(checks[i]!, i, state)))
                .then(() => undefined, (e: unknown) => e);
              expect((err as { code?: string } | undefined)?.code, `check ${i}: ${JSON.stringify(checks[i]!.trace)}`).toBe('STEWARD_DSL_EVAL');
              continue;
            }
            const got = await condition!.evaluate(ctxFor(checks[i]!, i, state));
            expect(got, `check ${i}: ${JSON.stringify(checks[i]!.trace)}`).toBe(checks[i]!.expect);
          }
        });
      }
    });
  }
});
