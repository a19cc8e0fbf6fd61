/**
 * Security contracts: blueprint text is never executed as JavaScript (no eval / new Function / vm in src/),
 * and blueprint regexes run on RE2 (linear time): a catastrophic-backtracking pattern over a 50k-character
 * input completes and is evaluated (not failed closed), both in a DSL tripwire and in a regex metric.
 * One spawn of `steward eval`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONTRACTS, lines, ROOT, steward, type Run } from './cli.js';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sourceFiles(p) : /\.(ts|js|mjs|cjs)$/.test(n) ? [p] : [];
  });
}

/** Source text with comments and string/template literal contents blanked (a mention is not a call). */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:\\])\/\/.*$/gm, '$1')
    .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, '""');
}

describe('no dynamic code execution in src/', () => {
  const files = sourceFiles(join(ROOT, 'src'));
  it('finds the sources', () => {
    expect(files.length).toBeGreaterThan(20);
  });
  it.each([
    ['eval(', /(^|[^\w$.])eval\s*\(/],
    ['new Function', /\bnew\s+Function\s*\(/],
    ['Function( constructor call', /(^|[^\w$.])Function\s*\(/],
    ['node:vm', /\bfrom\s*["']?(node:)?vm["']?|require\(\s*["'](node:)?vm["']\s*\)/],
  ])('no %s', (_name, re) => {
    const hits: string[] = [];
    for (const f of files) {
      const raw = readFileSync(f, 'utf8');
      // imports keep their module string: check the vm pattern on the raw text, the others on stripped code
      const text = _name === 'node:vm' ? raw : code(raw);
      text.split('\n').forEach((l, i) => {
        if (re.test(l)) hits.push(`${relative(ROOT, f)}:${i + 1}: ${l.trim()}`);
      });
    }
    expect(hits).toEqual([]);
  });
});

describe('blueprint regexes run on RE2 (steward eval, one spawn)', () => {
  const evil = 'a'.repeat(50_000) + '!';
  const D = '2025-01-01T00:00:00Z';
  const input = [
    { trace_id: 'redos-miss', agent_id: 'r1', timestamp: D, hook: 'tool_call', tool: 'regex_probe', args: { text: evil } },
    { trace_id: 'redos-hit', agent_id: 'r2', timestamp: D, hook: 'tool_call', tool: 'regex_probe', args: { text: 'xaaaa' } },
    { trace_id: 'redos-metric', agent_id: 'r3', timestamp: D, hook: 'redos_probe', content: evil },
    { trace_id: 'redos-metric-hit', agent_id: 'r4', timestamp: D, hook: 'redos_probe', content: 'xaaaa' },
  ];
  let run: Run;
  let out: Record<string, { tripwires: { id: string; fired: boolean; error?: string }[]; intervention: string; metrics: { name: string; status: string; score: number | null }[] }>;

  beforeAll(() => {
    run = steward(['eval', '--blueprints', join(CONTRACTS, 'probe-blueprints'), '-'], input.map((t) => JSON.stringify(t)).join('\n') + '\n');
    out = Object.fromEntries(lines(run.stdout).map((l) => JSON.parse(l) as { trace_id: string }).map((o) => [o.trace_id, o])) as unknown as typeof out;
  }, 180_000);

  it('matches_regex(args.text, "(a+)+$") over 50,000 a + "!" completes, is evaluated and does not fire', () => {
    expect(run.status, run.stderr).toBe(0);
    const t = out['redos-miss'].tripwires.find((x) => x.id === 'redos_guard');
    expect(t).toEqual({ id: 'redos_guard', fired: false }); // no `error`: evaluated, not failed closed
    expect(out['redos-miss'].intervention).toBe('ok');
  });

  it('the same tripwire fires on a matching input (the regex is really applied)', () => {
    expect(out['redos-hit'].tripwires.find((x) => x.id === 'redos_guard')).toMatchObject({ fired: true });
    expect(out['redos-hit'].intervention).toBe('block');
  });

  it('a regex metric with pattern "(a+)+$" over the same 50k-character output is scored (miss → 1, match → 0)', () => {
    const m = (id: string) => out[id].metrics.find((x) => x.name === 'm_redos');
    expect(m('redos-metric')).toMatchObject({ status: 'ok', score: 1 });
    expect(m('redos-metric-hit')).toMatchObject({ status: 'ok', score: 0 });
  });
});
