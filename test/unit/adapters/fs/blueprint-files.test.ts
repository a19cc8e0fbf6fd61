import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findBlueprintFiles, loadBlueprintFiles, readBlueprintFiles } from '../../../../src/adapters/fs/blueprint-files.js';
import { watchBlueprints, mayAffectBlueprints, type BlueprintHolder, type ReloadEvent } from '../../../../src/adapters/fs/blueprint-watcher.js';
import { decodeUtf8, firstInvalidUtf8 } from '../../../../src/adapters/fs/text.js';
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { nextEvent } from '../../../support/next-event.js';
import { useTempDirs } from './temp-dirs.js';

const { tmp, holders } = useTempDirs('steward-bpfiles-');
const bp = (name: string, desc = 'd') => `id: k/${name}@1.0\nversion: "1.0.0"\ndescription: ${desc}\n`;

/** The layout kubelet writes for a ConfigMap volume: timestamped dir, `..data` link to it, one link per key. */
function configMapMount(keys: Record<string, string>, stamp = '..2024_01_01_00_00_00.1'): string {
  const d = tmp();
  mkdirSync(join(d, stamp));
  for (const [k, v] of Object.entries(keys)) writeFileSync(join(d, stamp, k), v);
  symlinkSync(stamp, join(d, '..data'));
  for (const k of Object.keys(keys)) symlinkSync(join('..data', k), join(d, k));
  return d;
}

describe('blueprint files: symlinks', () => {
  it('loads a ConfigMap-shaped mount (every file a symlink) once per key, not again through ..data', async () => {
    const d = configMapMount({ 'a.yaml': bp('a'), 'b.json': JSON.stringify({ id: 'k/b@1.0', version: '1.0.0', description: 'd' }) });
    const { files, errors } = await findBlueprintFiles([d]);
    expect(errors).toEqual([]);
    expect(files.map((f) => f.slice(d.length + 1))).toEqual(['a.yaml', 'b.json']);
    const loaded = await readBlueprintFiles([d], { base: d });
    const res = compileBlueprintSet(loaded, { config: defaultEngineConfig() });
    expect(res.errors).toEqual([]);
    expect(res.set!.get('k/a')).toBeDefined();
    expect(res.set!.get('k/b')).toBeDefined();
  });

  it('follows symlinked directories and files outside the tree', async () => {
    const real = tmp();
    mkdirSync(join(real, 'sub'));
    writeFileSync(join(real, 'sub', 'x.yaml'), bp('x'));
    writeFileSync(join(real, 'y.yaml'), bp('y'));
    const d = tmp();
    symlinkSync(join(real, 'sub'), join(d, 'linked'));
    symlinkSync(join(real, 'y.yaml'), join(d, 'y.yaml'));
    const { files, errors } = await findBlueprintFiles([d]);
    expect(errors).toEqual([]);
    expect(files.map((f) => f.slice(d.length + 1))).toEqual(['linked/x.yaml', 'y.yaml']);
  });

  it('a file reachable as itself and through a symlink is listed once (no false DUPLICATE)', async () => {
    const d = tmp();
    writeFileSync(join(d, 'a.yaml'), bp('a'));
    symlinkSync('a.yaml', join(d, 'b.yaml'));
    mkdirSync(join(d, 'sub'));
    symlinkSync('..', join(d, 'sub', 'up')); // loop: sub/up/sub/up/...
    symlinkSync(d, join(d, 'again')); // alias of the root
    const { files, errors } = await findBlueprintFiles([d, join(d, 'b.yaml')]);
    expect(errors).toEqual([]);
    expect(files.map((f) => f.slice(d.length + 1))).toEqual(['a.yaml']);
    const res = compileBlueprintSet(await readBlueprintFiles([d]), { config: defaultEngineConfig() });
    expect(res.errors).toEqual([]);
  });

  it('reports a dangling or self-looping symlink with its path instead of skipping it', async () => {
    const d = tmp();
    writeFileSync(join(d, 'ok.yaml'), bp('ok'));
    symlinkSync('gone.yaml', join(d, 'policy.yaml'));
    symlinkSync('self.yaml', join(d, 'self.yaml'));
    symlinkSync('nowhere', join(d, 'dir'));
    const { files, errors } = await loadBlueprintFiles([d], { base: d });
    expect(files.map((f) => f.file)).toEqual(['ok.yaml']);
    expect(errors.map((e) => e.format())).toEqual([
      'dir:1:1: STEWARD_BLUEPRINT_SYNTAX: cannot read: dangling symlink (its target does not exist)',
      'policy.yaml:1:1: STEWARD_BLUEPRINT_SYNTAX: cannot read: dangling symlink (its target does not exist)',
      'self.yaml:1:1: STEWARD_BLUEPRINT_SYNTAX: cannot read: symlink loop',
    ]);
    await expect(readBlueprintFiles([d])).rejects.toMatchObject({ code: 'STEWARD_BLUEPRINT_INVALID', errors: [{}, {}, {}] });
  });

  it('still skips dot-names, node_modules, tests and agents.yaml when they are symlinks', async () => {
    const real = tmp();
    writeFileSync(join(real, 'r.yaml'), bp('r'));
    const d = tmp();
    for (const n of ['.hidden.yaml', 'agents.yaml', 'x.test.yaml']) symlinkSync(join(real, 'r.yaml'), join(d, n));
    symlinkSync(real, join(d, 'node_modules'));
    expect((await findBlueprintFiles([d])).files).toEqual([]);
  });
});

describe('blueprint files: strict UTF-8', () => {
  it('finds the first ill-formed sequence', () => {
    const b = (...x: number[]) => Uint8Array.from(x);
    expect(firstInvalidUtf8(new TextEncoder().encode('aé€😀'))).toBe(-1);
    expect(firstInvalidUtf8(b(0x61, 0xe9, 0x22))).toBe(1); // Latin-1 é
    expect(firstInvalidUtf8(b(0xc0, 0xaf))).toBe(0); // overlong
    expect(firstInvalidUtf8(b(0xed, 0xa0, 0x80))).toBe(0); // surrogate
    expect(firstInvalidUtf8(b(0xf4, 0x90, 0x80, 0x80))).toBe(0); // > U+10FFFF
    expect(firstInvalidUtf8(b(0x61, 0xe2, 0x82))).toBe(1); // truncated at end
  });

  it('reports invalid UTF-8 at line:col of the first bad byte; strips a BOM', () => {
    const latin1 = Buffer.concat([Buffer.from('id: y/latin1\nversion: "1.0.0"\ndescription: "caf'), Buffer.from([0xe9]), Buffer.from('"\n')]);
    const r = decodeUtf8(latin1, 'latin1.yaml');
    expect('error' in r && r.error.format()).toBe(
      'latin1.yaml:3:18: STEWARD_BLUEPRINT_SYNTAX: invalid UTF-8: byte 0xE9 at offset 47 (files must be UTF-8; re-encode, e.g. iconv -f latin1 -t utf-8)',
    );
    // columns count characters (UTF-16 units, like the YAML positions), not bytes; the BOM is not a column
    const after = Buffer.concat([Buffer.from('\uFEFFa: "é'), Buffer.from([0xff])]);
    const r2 = decodeUtf8(after, 'f.yaml');
    expect('error' in r2 && r2.error.position).toEqual({ file: 'f.yaml', line: 1, col: 6 });
    expect(decodeUtf8(Buffer.from('\uFEFFid: x\n'), 'bom.yaml')).toEqual({ text: 'id: x\n' });
  });

  it('loadBlueprintFiles reports a non-UTF-8 file and still returns the others', async () => {
    const d = tmp();
    writeFileSync(join(d, 'ok.yaml'), bp('ok'));
    writeFileSync(join(d, 'bad.yaml'), Buffer.concat([Buffer.from(`id: k/bad@1.0\nversion: "1.0.0"\ndescription: "caf`), Buffer.from([0xe9, 0x22, 0x0a])]));
    const { files, errors } = await loadBlueprintFiles([d], { base: d });
    expect(files.map((f) => f.file)).toEqual(['ok.yaml']);
    expect(errors.map((e) => [e.code, e.position?.file, e.position?.line, e.position?.col])).toEqual([['STEWARD_BLUEPRINT_SYNTAX', 'bad.yaml', 3, 18]]);
  });
});

describe('watchBlueprints over symlinks', () => {
  const next = (h: BlueprintHolder, pred: (e: ReloadEvent) => boolean) => nextEvent<ReloadEvent>(h, pred);

  it('loads a ConfigMap mount and picks up an update (new timestamped dir + atomic ..data swap)', async () => {
    const d = configMapMount({ 'x.yaml': bp('x', 'one') });
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), debounceMs: 30 });
    holders.push(h);
    expect(h.current().get('k/x')!.description).toBe('one');
    const ev = next(h, (e) => e.ok && e.set.get('k/x')?.description === 'two');
    // kubelet: write the new dir, point ..data_tmp at it, rename over ..data
    mkdirSync(join(d, '..2024_01_02_00_00_00.2'));
    writeFileSync(join(d, '..2024_01_02_00_00_00.2', 'x.yaml'), bp('x', 'two'));
    symlinkSync('..2024_01_02_00_00_00.2', join(d, '..data_tmp'));
    renameSync(join(d, '..data_tmp'), join(d, '..data'));
    await ev;
    expect(h.current().get('k/x')!.description).toBe('two');
  });

  it('refuses to start on a dangling symlink, and a reload that finds one keeps the last good set', async () => {
    const d = tmp();
    symlinkSync('gone.yaml', join(d, 'p.yaml'));
    await expect(watchBlueprints(d, { config: defaultEngineConfig(), watch: false })).rejects.toMatchObject({ code: 'STEWARD_BLUEPRINT_INVALID' });
    rmSync(join(d, 'p.yaml'));
    writeFileSync(join(d, 'x.yaml'), bp('x'));
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), watch: false });
    holders.push(h);
    const good = h.current();
    symlinkSync('gone.yaml', join(d, 'p.yaml'));
    const ev = await h.reload();
    expect(ev.ok).toBe(false);
    expect(ev.errors.map((e) => e.format())).toEqual(['p.yaml:1:1: STEWARD_BLUEPRINT_SYNTAX: cannot read: dangling symlink (its target does not exist)']);
    expect(h.current()).toBe(good);
  });

  it('sees edits to a symlink target outside the watched directory', async () => {
    const real = tmp();
    writeFileSync(join(real, 'x.yaml'), bp('x', 'one'));
    const d = tmp();
    symlinkSync(join(real, 'x.yaml'), join(d, 'x.yaml'));
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), debounceMs: 30 });
    holders.push(h);
    expect(h.current().get('k/x')!.description).toBe('one');
    const ev = next(h, (e) => e.ok && e.set.get('k/x')?.description === 'two');
    writeFileSync(join(real, 'x.yaml'), bp('x', 'two'));
    await ev;
  });

  it('sees a file added in a symlinked directory outside the watched directory', async () => {
    const real = tmp();
    writeFileSync(join(real, 'x.yaml'), bp('x'));
    const d = tmp();
    symlinkSync(real, join(d, 'linked'));
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), debounceMs: 30 });
    holders.push(h);
    const ev = next(h, (e) => e.ok && e.set.get('k/y') !== undefined);
    writeFileSync(join(real, 'y.yaml'), bp('y'));
    await ev;
  });

  it('reacts to ..data and directory events, not to unrelated files', () => {
    expect(mayAffectBlueprints('..data')).toBe(true);
    expect(mayAffectBlueprints('..2024_01_02_00_00_00.2/x.yaml')).toBe(true);
    expect(mayAffectBlueprints('sub')).toBe(true);
    expect(mayAffectBlueprints('x.yaml')).toBe(true);
    expect(mayAffectBlueprints('README.md')).toBe(false);
    expect(mayAffectBlueprints('x.yaml.swp')).toBe(false);
  });
});
