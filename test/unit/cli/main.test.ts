import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsx = join(root, 'node_modules/.bin/tsx');
const steward = (args: string[]) => spawnSync(tsx, [join(root, 'src/cli/main.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });

describe('steward command line', () => {
  it.each(['run', 'topics', 'schemas', 'migrate', 'demo', 'dlq'])('%s --help prints its usage and exits 0 without touching services', (cmd) => {
    const r = steward([cmd, '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^usage: steward ${cmd} `));
  });

  it('an unknown option is a usage error (exit 2) with the usage line, not a stack trace', () => {
    const r = steward(['topics', 'create', '--frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Unknown option '--frobnicate'");
    expect(r.stderr).toContain('usage: steward topics create|list');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
