/**
 * Golden `steward eval` cases (test/golden/eval/cases/*.yaml) run through runEval — the same code as
 * the CLI — with an in-process judge: the judge answers the score written in the trace content as
 * `score=0.78`, fails on `LLM_FAIL`, answers prose on `LLM_PROSE`. `llm: none` configures no LLM.
 * Every verdict is verified with the golden public key; `tamper: true` also checks tampering is caught.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { StewardError } from '../../../src/errors.js';
import { runEval } from '../../../src/cli/commands/eval.js';
import { verifyVerdict } from '../../../src/engine/verdict/index.js';
import type { LlmClient } from '../../../src/engine/types.js';

const ROOT = join(import.meta.dirname, '../../golden/eval');
const PUB = readFileSync(join(ROOT, 'keys/golden-ed25519.pub.pem'), 'utf8');

interface Case {
  name: string;
  blueprints: string;
  llm?: 'none' | 'judge';
  exit?: number;
  lines?: string[];
  traces?: Record<string, unknown>[];
  expect: Record<string, unknown>[];
  tamper?: boolean;
  sources?: string;
}

const judge: LlmClient = {
  async complete(req) {
    if (req.prompt.includes('LLM_FAIL')) throw new StewardError('STEWARD_LLM_TIMEOUT', 'scripted timeout', { retryable: true });
    if (req.prompt.includes('LLM_PROSE')) return { text: 'Looks fine to me, maybe 0.8.', latencyMs: 1 };
    const m = /score=([0-9.]+)/.exec(req.prompt);
    return { text: JSON.stringify({ score: m ? Number(m[1]) : 0.9, explanation: 'golden' }), latencyMs: 1 };
  },
};

const files = readdirSync(join(ROOT, 'cases')).filter((f) => f.endsWith('.yaml')).sort();

describe('golden steward eval', () => {
  for (const f of files) {
    const c = parse(readFileSync(join(ROOT, 'cases', f), 'utf8')) as Case;
    it(`${f}: ${c.name}`, async () => {
      const base = Date.parse('2025-03-01T09:00:00Z');
      const lines = c.lines ?? (c.traces ?? []).map((t, i) => JSON.stringify({ timestamp: new Date(base + i * 60_000).toISOString(), ...t }));
      const out: string[] = [];
      const err: string[] = [];
      const code = await runEval(
        { blueprints: join(ROOT, 'blueprints', c.blueprints), sources: c.sources && join(ROOT, c.sources), signingKey: join(ROOT, 'keys/golden-ed25519.pem'), input: '-' },
        { input: Readable.from(lines.map((l) => l + '\n')), out: (l) => void out.push(l), err: (l) => void err.push(l), stderrIsTty: false, env: {}, llm: c.llm === 'none' ? null : judge },
      );
      expect(code, err.join('\n')).toBe(c.exit ?? 0);
      const got = out.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(got).toHaveLength(c.expect.length);
      got.forEach((g, i) => expect(g, `output line ${i + 1}`).toMatchObject(c.expect[i]));
      for (const g of got) {
        if (!g.verdict) continue;
        const v = g.verdict as Record<string, unknown>;
        expect(Object.keys(g)).toEqual(['trace_id', 'agent_id', 'blueprint', 'intervention', 'approved', 'stage', 'tripwires', 'rules', 'ctq', 'risk', 'metrics', 'verdict', 'trust_debt']);
        expect(verifyVerdict(v, PUB).ok).toBe(true);
        expect(v.approved).toBe(g.approved);
        if (v.approved) expect(v.policy_violations).toEqual([]);
        else expect((v.policy_violations as string[]).length).toBeGreaterThan(0);
        if (c.tamper) {
          expect(verifyVerdict({ ...v, approved: !v.approved }, PUB).ok).toBe(false);
          expect(verifyVerdict({ ...v, confidence_score: 0.5 }, PUB).ok).toBe(false);
          expect(verifyVerdict({ ...v, policy_violations: [] }, PUB).ok).toBe((v.policy_violations as string[]).length === 0);
        }
      }
    });
  }
});
