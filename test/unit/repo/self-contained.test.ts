/**
 * The repository stands on its own: no tracked text file cites the design notes that lived outside it
 * (their contracts are docs/contracts.md, their decisions docs/spec-decisions.md), every
 * `contracts C<n>` / `spec-decisions D<n>` citation names a section that exists, and the paths the docs
 * name are still there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

// Spelled in pieces so that this file does not match itself. The design notes' name as an upper-case word
// also counts (as in "<name> decision 16"): cite `spec-decisions D16` / `contracts C5` instead.
const NAME = ['DES', 'IGN'].join('');
const FORBIDDEN = [`${NAME} §`, `${NAME}.md`, ['..', '/shared/'].join('')];
const DESIGN_WORD = new RegExp(`\\b${NAME}\\b`);

function trackedTextFiles(): Map<string, string> {
  const r = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ls-files failed: ${r.stderr}`);
  const out = new Map<string, string>();
  for (const path of r.stdout.split('\0').filter(Boolean)) {
    const abs = join(ROOT, path);
    if (!existsSync(abs)) continue; // deleted in the working tree, not yet committed
    const bytes = readFileSync(abs);
    if (bytes.subarray(0, 8192).includes(0)) continue; // binary
    out.set(path, bytes.toString('utf8'));
  }
  return out;
}

const anchors = (doc: string, letter: string): Set<number> =>
  new Set([...readFileSync(join(ROOT, 'docs', doc), 'utf8').matchAll(new RegExp(`<a id="${letter}(\\d+)"></a>`, 'g'))].map((m) => Number(m[1])));

describe.skipIf(!existsSync(join(ROOT, '.git')))('the repository is self-contained', () => {
  const files = trackedTextFiles();

  it('reads the tracked files', () => {
    expect(files.size).toBeGreaterThan(100);
    expect(files.has('docs/contracts.md') && files.has('docs/spec-decisions.md')).toBe(true);
  });

  it('no tracked text file refers to a file outside the repository', () => {
    const hits: string[] = [];
    for (const [path, text] of files) {
      text.split('\n').forEach((line, i) => {
        for (const f of FORBIDDEN) if (line.includes(f)) hits.push(`${path}:${i + 1}: ${f}: ${line.trim().slice(0, 120)}`);
        if (DESIGN_WORD.test(line) && !FORBIDDEN.some((f) => line.includes(f))) hits.push(`${path}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(hits).toEqual([]);
  });

  it('every repository path the docs and the README name exists (a .js import specifier stands for its .ts; "being built" lines aside)', () => {
    const missing: string[] = [];
    for (const [path, text] of files) {
      if (!(path === 'README.md' || /^docs\/[^/]+\.md$/.test(path))) continue;
      // A line saying "being built" names what work in progress is adding (docs/architecture.md).
      const settled = text.split('\n').filter((l) => !l.includes('being built')).join('\n');
      for (const m of settled.matchAll(/\b(?:src|test|scripts|schemas|blueprints|bench)\/[A-Za-z0-9_./@-]+/g)) {
        const p = m[0].replace(/[.,]+$/, '');
        if (!existsSync(join(ROOT, p)) && !(p.endsWith('.js') && existsSync(join(ROOT, p.replace(/\.js$/, '.ts'))))) missing.push(`${path}: ${p}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every contracts C<n> and spec-decisions D<n> citation names an existing section', () => {
    const known = { C: anchors('contracts.md', 'c'), D: anchors('spec-decisions.md', 'd') };
    // C1–C7 settled together; later ones are numbered as assigned (C10 …), like D.
    expect(Array.from({ length: 7 }, (_, i) => i + 1).filter((n) => !known.C.has(n))).toEqual([]);
    // D1–D23 settled together; later ones are numbered as assigned (D31 …), so gaps above 23 are allowed.
    expect(Array.from({ length: 23 }, (_, i) => i + 1).filter((n) => !known.D.has(n))).toEqual([]);
    const bad: string[] = [];
    const check = (path: string, letter: 'C' | 'D', n: number, what: string) => {
      if (!known[letter].has(n)) bad.push(`${path}: ${what}`);
    };
    for (const [path, text] of files) {
      // `contracts C3`, `spec-decisions D7/D15`, `D2–D6, D13`: each number after the prefix, through a list.
      for (const m of text.matchAll(/\b(contracts|spec-decisions) ([CD]\d+(?:\s*(?:[/,–-]|and)\s*[CD]\d+)*)/g)) {
        const letter = m[1] === 'contracts' ? 'C' : 'D';
        for (const ref of m[2].matchAll(/([CD])(\d+)/g)) {
          if (ref[1] !== letter) bad.push(`${path}: ${m[0]} (mixes C and D)`);
          else check(path, letter, Number(ref[2]), m[0]);
        }
      }
      for (const m of text.matchAll(/(contracts|spec-decisions)\.md#([cd])(\d+)\b/g)) check(path, m[2].toUpperCase() as 'C' | 'D', Number(m[3]), m[0]);
    }
    expect(bad).toEqual([]);
  });
});
