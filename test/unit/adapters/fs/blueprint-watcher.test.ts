import { writeFileSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { nextEvent } from '../../../support/next-event.js';
import { describe, expect, it } from 'vitest';
import { watchBlueprints, type BlueprintHolder, type ReloadEvent } from '../../../../src/adapters/fs/blueprint-watcher.js';
import { listBlueprintFiles } from '../../../../src/adapters/fs/blueprint-files.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import { buildConfig } from '../../../../src/config/steward-config.js';
import { useTempDirs } from './temp-dirs.js';

const bp = (desc: string) => `id: w/x@1.0\nversion: "1.0.0"\ndescription: ${desc}\n`;
const { tmp, holders } = useTempDirs('steward-watch-');
const next = (h: BlueprintHolder, pred: (e: ReloadEvent) => boolean) => nextEvent<ReloadEvent>(h, pred);

describe('blueprint files', () => {
  it('recurses, keeps yaml/yml/json, skips *.test.yaml and agents.yaml', async () => {
    const d = tmp();
    mkdirSync(join(d, 'a'));
    for (const f of ['x.yaml', 'a/y.yml', 'a/z.json', 'a/t.test.yaml', 'agents.yaml', 'notes.md']) writeFileSync(join(d, f), '');
    expect((await listBlueprintFiles([d])).map((f) => f.slice(d.length + 1))).toEqual(['a/y.yml', 'a/z.json', 'x.yaml']);
  });
});

describe('watchBlueprints', () => {
  it('the poll alone (no fs events) picks up edits, including a file replaced by rename twice in a row (sed -i, editors)', async () => {
    const d = tmp();
    writeFileSync(join(d, 'x.yaml'), bp('one'));
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), fsEvents: false, pollMs: 40 });
    holders.push(h);
    const replace = (desc: string) => {
      writeFileSync(join(d, '.x.tmp'), bp(desc));
      renameSync(join(d, '.x.tmp'), join(d, 'x.yaml'));
    };
    let got = next(h, (e) => e.ok && e.set.get('w/x')!.description === 'two');
    replace('two');
    await got;
    got = next(h, (e) => e.ok && e.set.get('w/x')!.description === 'three');
    replace('three');
    await got;
    expect(h.current().get('w/x')!.description).toBe('three');
  });

  it('swaps in a valid change, keeps the last good set on an invalid one', async () => {
    const d = tmp();
    writeFileSync(join(d, 'x.yaml'), bp('one'));
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), debounceMs: 30 });
    holders.push(h);
    expect(h.current().get('w/x')!.description).toBe('one');

    let ev = next(h, (e) => e.ok && e.set.get('w/x')?.description === 'two');
    writeFileSync(join(d, 'x.yaml'), bp('two'));
    await ev;
    expect(h.current().get('w/x')!.description).toBe('two');

    const good = h.current();
    ev = next(h, (e) => !e.ok);
    writeFileSync(join(d, 'x.yaml'), bp('three') + 'scorng: {}\n');
    const bad = await ev;
    expect(bad.errors.map((e) => e.code)).toContain('STEWARD_BLUEPRINT_UNKNOWN_KEY');
    expect(h.current()).toBe(good);
    expect(h.current().get('w/x')!.description).toBe('two');
  });

  it('reload() recompiles on demand and refuses to start on an invalid directory', async () => {
    const d = tmp();
    writeFileSync(join(d, 'x.yaml'), bp('one'));
    const h = await watchBlueprints(d, { config: defaultEngineConfig(), debounceMs: 10_000 });
    holders.push(h);
    writeFileSync(join(d, 'y.yaml'), 'id: w/y@1.0\nversion: "1.0.0"\ndescription: y\n');
    const ev = await h.reload();
    expect(ev.ok).toBe(true);
    expect(h.current().get('w/y')).toBeDefined();
    const bad = tmp();
    writeFileSync(join(bad, 'x.yaml'), 'id: [');
    await expect(watchBlueprints(bad, { config: defaultEngineConfig() })).rejects.toMatchObject({ code: 'STEWARD_BLUEPRINT_INVALID' });
  });
});

describe("steward run's loader: blueprints.workflow_limits (gate spec §11)", () => {
  it('a 4-workflow chain the default limits reject loads with blueprints.workflow_limits.max_workflows 4', async () => {
    const d = tmp();
    const wf = (id: string) => `  - id: ${id}\n    tier: 2\n    workflow: { steps: [read_file, run_tests] }\n`;
    writeFileSync(join(d, 'p.yaml'), `id: w/p@1.0\nversion: "1.0.0"\ndescription: p\nguardrails:\n${wf('w1')}${wf('w2')}`);
    writeFileSync(join(d, 'k.yaml'), `id: w/k@1.0\nversion: "1.0.0"\ndescription: k\ninherits: w/p@1.0\nguardrails:\n${wf('w3')}${wf('w4')}`);
    await expect(watchBlueprints(d, { config: buildConfig({}, {}).engine, watch: false })).rejects.toMatchObject({ errors: [expect.objectContaining({ code: 'STEWARD_GATE_WORKFLOW_LIMIT' })] });
    const cfg = buildConfig({ blueprints: { workflow_limits: { max_workflows: 4 } } }, {});
    expect(cfg.engine.gateLimits).toEqual({ maxWorkflowSteps: 5, maxWorkflows: 4 });
    const h = await watchBlueprints(d, { config: cfg.engine, watch: false });
    holders.push(h);
    expect(h.current().blueprints.map((b) => b.id).sort()).toContain('w/k@1.0');
  });
});
