import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nextEvent } from '../../../support/next-event.js';
import { afterEach, describe, expect, it } from 'vitest';
import { watchAgentRegistry, type AgentRegistryHolder, type RegistryReloadEvent } from '../../../../src/adapters/fs/agent-registry-watcher.js';

const dirs: string[] = [];
const holders: AgentRegistryHolder[] = [];
afterEach(() => {
  holders.splice(0).forEach((h) => h.close());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});
function agentsFile(text: string): string {
  const d = mkdtempSync(join(tmpdir(), 'steward-agents-'));
  dirs.push(d);
  const f = join(d, 'agents.yaml');
  writeFileSync(f, text);
  return f;
}
const next = (h: AgentRegistryHolder, pred: (e: RegistryReloadEvent) => boolean) => nextEvent<RegistryReloadEvent>(h, pred);
const one = (tier: string) => `agents:\n  - { id: bot, tenant: acme, tier: ${tier}, tools: [execute_trade] }\n`;

describe('watchAgentRegistry', () => {
  it('applies a valid edit through the same registry object and keeps the last good one on an invalid edit', async () => {
    const f = agentsFile(one('ACL-3'));
    const h = await watchAgentRegistry(f, { debounceMs: 20 });
    holders.push(h);
    const reg = h.registry; // what the engine holds for its lifetime
    expect(reg.lookup('bot').tier).toBe('ACL-3');
    expect(reg.lookup('new').registered).toBe(false);

    let ev = next(h, (e) => e.ok && e.agents === 2);
    writeFileSync(f, one('ACL-1') + '  - { id: new, tenant: acme, tier: ACL-4 }\n');
    await ev;
    expect(reg.lookup('bot').tier).toBe('ACL-1');
    expect(reg.lookup('new').tier).toBe('ACL-4');
    expect([...reg.agents.keys()].sort()).toEqual(['bot', 'new']);

    ev = next(h, (e) => !e.ok);
    writeFileSync(f, 'agents:\n  - { id: bot, tenant: acme, tier: ACL-3, tols: [x] }\n');
    const bad = await ev;
    expect(bad.errors.length).toBeGreaterThan(0);
    const err = bad.errors[0]!;
    expect(err.code).toBe('STEWARD_CONFIG');
    expect(err.position?.file).toBe(f);
    expect(err.position?.line).toBe(2);
    expect(reg.lookup('bot').tier).toBe('ACL-1');
    expect(reg.lookup('new').tier).toBe('ACL-4');
  });

  it('follows a replace-by-rename, as editors and config managers write files', async () => {
    const f = agentsFile(one('ACL-2'));
    const h = await watchAgentRegistry(f, { debounceMs: 20 });
    holders.push(h);
    const ev = next(h, (e) => e.ok && h.registry.lookup('bot').tier === 'ACL-5');
    const tmp = `${f}.tmp`;
    writeFileSync(tmp, one('ACL-5'));
    renameSync(tmp, f);
    await ev;
    expect(h.registry.lookup('bot').tier).toBe('ACL-5');
  });

  // Kubernetes ConfigMap layout: agents.yaml -> ..data/agents.yaml, ..data -> ..<timestamp>; kubelet updates it by
  // renaming ..data_tmp over ..data, so the watched directory only sees events named ..data* (audit #24 r4, finding 1).
  function configMap(text: string): { dir: string; file: string; swap(text: string): void } {
    const dir = mkdtempSync(join(tmpdir(), 'steward-agents-cm-'));
    dirs.push(dir);
    let n = 0;
    const version = (t: string) => {
      const v = `..2026_${n++}`;
      mkdirSync(join(dir, v));
      writeFileSync(join(dir, v, 'agents.yaml'), t);
      return v;
    };
    symlinkSync(version(text), join(dir, '..data'));
    symlinkSync('..data/agents.yaml', join(dir, 'agents.yaml'));
    return {
      dir,
      file: join(dir, 'agents.yaml'),
      swap(t) {
        symlinkSync(version(t), join(dir, '..data_tmp'));
        renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      },
    };
  }

  it('follows a ConfigMap update (the ..data symlink swap) from its events alone', async () => {
    const cm = configMap(one('ACL-2'));
    const h = await watchAgentRegistry(cm.file, { debounceMs: 20, pollMs: 600_000 });
    holders.push(h);
    const ev = next(h, (e) => e.ok && h.registry.lookup('bot').tier === 'ACL-5');
    cm.swap(one('ACL-5'));
    await ev;
    expect(h.registry.lookup('bot').tier).toBe('ACL-5');
  });

  it('polls the real file: a change no event in the directory reports is still applied', async () => {
    const cm = configMap(one('ACL-2'));
    const h = await watchAgentRegistry(cm.file, { debounceMs: 20, pollMs: 50 });
    holders.push(h);
    const ev = next(h, (e) => e.ok && h.registry.lookup('bot').tier === 'ACL-4');
    // Written inside ..2026_0: the non-recursive watch of the mount directory sees nothing.
    writeFileSync(join(cm.dir, '..2026_0', 'agents.yaml'), one('ACL-4') + '  - { id: other, tenant: acme, tier: ACL-1 }\n');
    await ev;
    expect(h.registry.lookup('other').tier).toBe('ACL-1');
  });

  it('refuses to start from an invalid file', async () => {
    const f = agentsFile('agents: 3\n');
    await expect(watchAgentRegistry(f, { watch: false })).rejects.toMatchObject({ code: 'STEWARD_CONFIG' });
  });

  it('rejects a non-UTF-8 file at the first bad byte (a Latin-1 tool name would never match)', async () => {
    const f = agentsFile(one('ACL-2'));
    const h = await watchAgentRegistry(f, { watch: false });
    holders.push(h);
    writeFileSync(f, Buffer.concat([Buffer.from('agents:\n  - { id: bot, tools: [caf'), Buffer.from([0xe9]), Buffer.from('] }\n')]));
    const ev = await h.reload();
    expect(ev.ok).toBe(false);
    expect(ev.errors.map((e) => [e.code, e.position?.line, e.position?.col])).toEqual([['STEWARD_CONFIG', 2, 27]]);
    expect(h.registry.lookup('bot').tier).toBe('ACL-2');
  });
});
