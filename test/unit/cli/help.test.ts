/**
 * `steward <cmd> --help` and `steward <cmd> <sub> --help` print the usage and exit 0 for every command of
 * main.ts's COMMANDS table and every subcommand its USAGE names (`usage: steward topics create|list ...`,
 * one `steward review retier resolve AGENT ...` line per form). Enumerated, not listed here, so a new
 * command or subcommand is covered the day it is added. In-process through main() (no service is touched:
 * --help returns before the command parses anything), plus a few spawned as a user runs them.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMMANDS, main, wantsHelp, type CommandModule } from '../../../src/cli/main.js';

const ROOT = join(import.meta.dirname, '../../..');

async function load(cmd: string): Promise<CommandModule> {
  return (await import(`../../../src/cli/commands/${cmd}.ts`)) as CommandModule;
}

/** Subcommand paths named by a USAGE text: lower-case words after `steward <cmd>`, `a|b` alternatives expanded. */
function subcommands(cmd: string, usage: string): string[][] {
  const paths = new Map<string, string[]>();
  const escaped = cmd.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
  for (const line of usage.split('\n')) {
    const m = new RegExp(`^\\s*(?:usage:\\s*)?steward ${escaped}((?: [a-z][a-z0-9-]*(?:\\|[a-z][a-z0-9-]*)*)*)(?=\\s|$)`).exec(line);
    if (!m) continue;
    let forms: string[][] = [[]];
    for (const word of m[1].trim().split(' ').filter(Boolean)) forms = forms.flatMap((f) => word.split('|').map((alt) => [...f, alt]));
    for (const f of forms) for (let i = 1; i <= f.length; i++) paths.set(f.slice(0, i).join(' '), f.slice(0, i));
  }
  return [...paths.values()];
}

async function help(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    return { code: await main(args), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

const commands = Object.keys(COMMANDS);

describe('steward --help on every command and subcommand', () => {
  it('the table is not empty and the parser finds subcommands', () => {
    expect(commands.length).toBeGreaterThanOrEqual(16);
    expect(subcommands('review', 'usage: steward review approve|deny --trace ID\n       steward review retier resolve AGENT --by NAME')).toEqual([
      ['approve'],
      ['deny'],
      ['retier'],
      ['retier', 'resolve'],
    ]);
    expect(subcommands('eval', 'usage: steward eval --blueprints DIR TRACES.jsonl|-')).toEqual([]);
  });

  it('finds the subcommands of the real usages (ledger verify, topics create|list, review retier resolve, ...)', async () => {
    const found = new Map<string, string[]>();
    for (const cmd of commands) found.set(cmd, subcommands(cmd, (await load(cmd)).USAGE ?? '').map((p) => p.join(' ')));
    expect(found.get('ledger')).toContain('verify');
    expect(found.get('topics')).toEqual(expect.arrayContaining(['create', 'list']));
    expect(found.get('review')).toEqual(expect.arrayContaining(['approve', 'deny', 'request', 'pending', 'retier list', 'retier resolve']));
    expect([...found.values()].filter((s) => s.length > 0).length).toBeGreaterThanOrEqual(6);
  });

  it.each(commands)('%s exports a USAGE that starts with "usage: steward" and its name', async (cmd) => {
    const mod = await load(cmd);
    expect(typeof mod.run).toBe('function');
    expect(mod.USAGE).toMatch(new RegExp(`^usage: steward ${cmd}(\\s|$)`));
  });

  it.each(commands)('%s --help, -h and each subcommand --help print the usage and exit 0', async (cmd) => {
    const mod = await load(cmd);
    const forms = [[], ...subcommands(cmd, mod.USAGE ?? '')];
    for (const sub of forms) {
      for (const flag of ['--help', '-h']) {
        const args = [cmd, ...sub, flag];
        const r = await help(args);
        expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
        expect(r.stdout.split('\n')).toContain(mod.USAGE!.split('\n')[0]);
        expect(r.stdout).toMatch(/^usage: /m);
      }
    }
  });

  it('--help after other options or operands still wins; after -- it is an operand', () => {
    expect(wantsHelp(['verify', '--agent', 'a-1', '--help'])).toBe(true);
    expect(wantsHelp(['show', 'AGENT', '-h', '--json'])).toBe(true);
    expect(wantsHelp(['--', '--help'])).toBe(false);
    expect(wantsHelp(['verify', '--agent', 'a-1'])).toBe(false);
  });

  it('steward --help prints the command list (exit 0); no command is a usage error (exit 2)', async () => {
    const r = await help(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of commands) expect(r.stdout).toMatch(new RegExp(`^  ${cmd} `, 'm'));
    expect((await help([])).code).toBe(2);
  });
});

describe('spawned as a user runs it', () => {
  const run = (argv: string[]) => spawnSync(process.execPath, argv, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });

  it('tsx src/cli/main.ts ledger verify --help exits 0 with the usage (it was a usage error)', () => {
    const r = run(['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'ledger', 'verify', '--help']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: steward ledger verify /);
  });

  it('bin/steward.js review retier resolve -h exits 0 with the usage', () => {
    const r = run([join(ROOT, 'bin/steward.js'), 'review', 'retier', 'resolve', '-h']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: steward review /);
  });
});
