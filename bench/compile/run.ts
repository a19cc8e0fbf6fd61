/**
 * bench:compile — load + compile 1,000 generated blueprint files (parse with positions, schema, semver,
 * inheritance, DSL compilation, selection index) against the baseline of a plain YAML parse of the same
 * files read the same way. Prints timings and, last, `compile_vs_yaml_parse=<ratio>`.
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { listBlueprintFiles, readBlueprintFiles } from '../../src/adapters/fs/blueprint-files.js';
import { compileBlueprintSet, createAgentRegistry } from '../../src/engine/blueprint/index.js';
import type { AclTier, Trace } from '../../src/engine/types.js';
import { defaultEngineConfig } from '../../src/engine/config.js';

const N = 1000;
const RUNS = 5;

function blueprint(i: number): string {
  const domain = `dom${i % 20}`;
  // Every 4th blueprint inherits from the first blueprint of its domain: chains of depth 2-3.
  const inherits = i % 4 === 0 || i < 20 ? 'clarity.baseline@1.0' : `${domain}/agent${i % 20}@1`;
  return `# yaml-language-server: $schema=../../schemas/blueprint.schema.json
id: ${domain}/agent${i}@1.${i % 3}
version: "1.${i % 3}.0"
description: "Generated blueprint ${i}"
inherits: ${inherits}
scope:
  agent_tier: [ACL-${i % 6}]
  tools: ["tool_${i % 50}", "tool_${(i + 7) % 50}"]
lists:
  allowed_${i}: ["a.example.com", "b.example.com"]
tripwires:
  - id: cap_${i}
    severity: critical
    when: { hook: tool_call, tool: "tool_${i % 50}" }
    condition: "args.amount <= ${1000 + i}"
    on_fail: { decision: halt, reason: "cap" }
  - id: exfil_${i}
    condition:
      NOT:
        all:
          - response_size > 10MB
          - is_external(destination)
          - NOT in_allowlist(destination, "allowed_${i}")
    on_fail: { decision: block, reason: "exfiltration" }
checks:
  - id: rule_${i}
    when: { hook: tool_call }
    rule:
      condition: NOT matches_regex(args.command, "rm\\\\s+-rf")
      on_fail: { decision: escalate, reason: "dangerous" }
  - id: metric_${i}
    when: { hook: output }
    metric:
      name: quality_${i}
      weight: 0.5
      check: { type: llm, args: { prompt_template: "Evaluate ${i}" } }
ctq:
  metrics:
    grounding_${i}: { weight: 0.3, scorer: source-match, parameters: { min_citation_ratio: 0.5 } }
  thresholds: { ok: 0.85, nudge: 0.7, flag: 0.5, block: 0.3 }
scoring:
  thresholds: { ok: 0.25, nudge: 0.40, escalate: 0.55, block: 0.70 }
`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'steward-bench-compile-'));
  try {
    for (let i = 0; i < N; i++) {
      const d = join(dir, `dom${i % 20}`);
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, `agent${i}.yaml`), blueprint(i));
    }
    const config = defaultEngineConfig();
    const yamlOnly = async (): Promise<number> => {
      const files = await listBlueprintFiles([dir]);
      let n = 0;
      for (const f of files) if (parse(await readFile(f, 'utf8'))) n++;
      return n;
    };
    const full = async (): Promise<number> => {
      const res = compileBlueprintSet(await readBlueprintFiles([dir], { base: dir }), { config });
      if (!res.set) throw new Error(`bench blueprints invalid: ${res.errors.slice(0, 3).map((e) => e.format()).join('; ')}`);
      return res.set.blueprints.length;
    };
    // Warm-up (JIT, ajv schema compilation happens once per process, like a long-running steward).
    if ((await yamlOnly()) !== N) throw new Error('yaml baseline parsed the wrong number of files');
    if ((await full()) !== N + 1) throw new Error('compile produced the wrong number of blueprints');
    const tYaml: number[] = [];
    const tFull: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      // Interleaved so machine load affects both sides alike.
      let t = performance.now();
      await yamlOnly();
      tYaml.push(performance.now() - t);
      t = performance.now();
      await full();
      tFull.push(performance.now() - t);
    }
    // Per-event selection over the 1,000-blueprint set vs a plain Map lookup of the same agents.
    const set = compileBlueprintSet(await readBlueprintFiles([dir], { base: dir }), { config }).set!;
    const agents = Array.from({ length: 500 }, (_, i) => ({ id: `a${i}`, tenant: 't', tier: `ACL-${i % 6}` as AclTier, tools: [`tool_${i % 50}`], domains: [], registered: i % 10 !== 0 }));
    const registry = createAgentRegistry(agents.filter((a) => a.registered));
    const trace: Trace = { trace_id: 't', agent_id: 'a0', timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call' };
    const ids = agents.map((a) => a.id);
    const plain = new Map(agents.map((a) => [a.id, a]));
    const LOOKUPS = 200_000;
    let sink = 0;
    let t0 = performance.now();
    for (let i = 0; i < LOOKUPS; i++) sink += plain.get(ids[i % ids.length])!.tools.length;
    const tMap = performance.now() - t0;
    t0 = performance.now();
    for (let i = 0; i < LOOKUPS; i++) sink += set.select(registry.lookup(ids[i % ids.length]), trace).chain.length;
    const tSel = performance.now() - t0;
    if (sink === 0) throw new Error('unreachable');
    console.log(`select_ns=${((tSel / LOOKUPS) * 1e6).toFixed(0)} (registry lookup + select, cached per agent)`);
    console.log(`select_vs_map_get=${(tSel / tMap).toFixed(2)}`);
    const y = median(tYaml);
    const f = median(tFull);
    console.log(`files=${N} runs=${RUNS}`);
    console.log(`yaml_parse_ms=${y.toFixed(1)} (median; read + yaml.parse)`);
    console.log(`load_compile_ms=${f.toFixed(1)} (median; read + parse with positions + schema + inheritance + DSL compile + index)`);
    console.log(`per_blueprint_ms=${(f / N).toFixed(3)}`);
    console.log(`compile_vs_yaml_parse=${(f / y).toFixed(2)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
