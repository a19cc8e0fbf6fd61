/**
 * `steward compile-rules PATH...` (gate spec §7, §8, §10; docs/rules.md): the one command that asks the LLM.
 * Refreshes the MCP import caches of blueprints that name `mcp_servers`, then runs the compile loop for
 * every rule whose lock entry is missing or stale, or is mechanical but fails re-verification (its DSL no longer
 * compiles, its recorded tests do not hold, it was edited by hand), or all with --force, and writes `<blueprint>.rules.lock`.
 * The LLM is the configured one (STEWARD_LLM_BASE_URL, _API_KEY, _MODEL, _PROVIDER).
 * Exit 0: every tier-1 rule is mechanical; 1: a tier-1 rule stayed text (the blueprint will not load);
 * 2: usage, or no LLM configured.
 */
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { StewardError } from '../../errors.js';
import { loadBlueprintFiles } from '../../adapters/fs/blueprint-files.js';
import { readSidecars } from '../../adapters/fs/rule-sidecars.js';
import { refreshMcpImports } from '../../adapters/mcp/import-cache.js';
import { dslOptions } from '../../engine/blueprint/conditions.js';
import { parseAgentRegistry } from '../../engine/blueprint/index.js';
import { defaultEngineConfig } from '../../engine/config.js';
import { compileWhen } from '../../engine/dsl/index.js';
import { compileRule, verifyLockedEntry } from '../../engine/rules/compile-loop.js';
import { authoredRules } from '../../engine/rules/load.js';
import { renderRuleLock, ruleLockPath, ruleTextHash } from '../../engine/rules/lock.js';
import type { AuthoredRule, RuleLockEntry, RuleTest } from '../../engine/rules/types.js';
import type { LlmClient, Trace } from '../../engine/types.js';
import { llmClientFromEnv } from '../../config/llm.js';
import { parseTestFile } from '../eval-blueprint-tests.js';

export const USAGE = `usage: steward compile-rules [--force] [--model MODEL] [--mcp-timeout-ms N] PATH...
  PATH: blueprint files or directories; writes <blueprint>.rules.lock beside each blueprint with rules:
  and <blueprint>.mcp.lock beside each blueprint (agents.mcp.lock beside each agents.yaml) with mcp_servers: (docs/rules.md)
  --force           recompile every rule, not only missing or stale entries
  --model MODEL     the model to ask (default: STEWARD_LLM_MODEL)
  --mcp-timeout-ms  per MCP server (default 10000)`;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

async function filesNamed(paths: string[], re: RegExp): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (re.test(e.name)) out.push(p);
    }
  };
  for (const p of paths) if ((await stat(p)).isDirectory()) await walk(p);
  else if (re.test(basename(p))) out.push(p);
  return out.sort();
}

/**
 * The author's examples for a rule from the `*.test.yaml` files of the blueprint's directory: a test whose
 * `expect.failed_rules` is given says whether the rule fails on its (last) trace; a workflow rule's example is
 * the sequence of tool calls of its traces, failing when `gate:workflow:rule.<id>` is listed.
 */
export function authorExamples(rule: AuthoredRule, when: unknown, tests: { name: string; traces: Obj[]; expect: Obj; useBlueprint?: string }[], blueprintId: string): RuleTest[] {
  const matches = isObj(when) ? compileWhen(when) : () => true;
  const out: RuleTest[] = [];
  for (const t of tests) {
    if (t.useBlueprint !== undefined && t.useBlueprint !== blueprintId) continue;
    const failed = t.expect.failed_rules;
    if (!Array.isArray(failed)) continue;
    if (rule.tier === 2) {
      const calls = t.traces.filter((x) => x.hook === 'tool_call' && typeof x.tool === 'string').map((x) => x.tool as string);
      out.push({ source: 'author', name: t.name, calls, expect: failed.includes(`gate:workflow:rule.${rule.id}`) ? 'fail' : 'pass' });
      continue;
    }
    const trace = t.traces[t.traces.length - 1]!;
    if (!matches(trace as Trace)) continue;
    out.push({ source: 'author', name: t.name, trace, expect: failed.includes(rule.id) ? 'fail' : 'pass' });
  }
  return out;
}

export async function run(argv: string[], deps: { llm?: LlmClient; out?: NodeJS.WritableStream; err?: NodeJS.WritableStream } = {}): Promise<number> {
  const out = deps.out ?? process.stdout;
  const err = deps.err ?? process.stderr;
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { force: { type: 'boolean' }, model: { type: 'string' }, 'mcp-timeout-ms': { type: 'string' } } });
  if (positionals.length === 0) throw new StewardError('STEWARD_USAGE', `no PATH given\n${USAGE}`);
  const llm = deps.llm ?? llmClientFromEnv();
  if (!llm) {
    err.write('steward compile-rules: no LLM configured (STEWARD_LLM_BASE_URL); nothing compiled\n');
    return 2;
  }
  const model = values.model ?? process.env.STEWARD_LLM_MODEL?.trim() ?? undefined;
  const mcpTimeoutMs = Number(values['mcp-timeout-ms'] ?? 10_000);
  if (!Number.isInteger(mcpTimeoutMs) || mcpTimeoutMs <= 0) throw new StewardError('STEWARD_USAGE', '--mcp-timeout-ms must be a positive integer');

  const loaded = await loadBlueprintFiles(positionals);
  for (const e of loaded.errors) err.write(`${e.format()}\n`);
  const files = loaded.files;
  // Agent registries (agents.yaml) may name MCP servers for every blueprint loaded with them.
  const registryFiles = await filesNamed(positionals, /^agents\.ya?ml$/);
  const registries = await Promise.all(registryFiles.map(async (file) => ({ file, text: await readFile(file, 'utf8') })));
  const refreshed = await refreshMcpImports([...registries, ...files], { timeoutMs: mcpTimeoutMs });
  for (const w of refreshed.warnings) err.write(`warning: ${w.format()}\n`);
  for (const f of refreshed.written) out.write(`${f}: MCP import updated\n`);
  const { sidecars, warnings } = await readSidecars(files, { registryFiles });
  for (const w of warnings) err.write(`warning: ${w.format()}\n`);

  const agentTools = new Set<string>();
  for (const { file: r, text } of registries) {
    const parsed = parseAgentRegistry(text, r);
    for (const a of parsed.registry?.agents.values() ?? []) for (const t of a.tools) agentTools.add(t);
  }
  const testFiles = await filesNamed(positionals, /\.test\.ya?ml$/);
  const config = defaultEngineConfig();
  let tier1Text = 0;
  for (const f of files) {
    let v: unknown;
    try {
      v = parseYaml(f.text);
    } catch {
      continue; // `steward validate` reports it
    }
    if (!isObj(v) || !Array.isArray(v.rules) || v.rules.length === 0) continue;
    const blueprintId = String(v.id ?? '');
    const side = sidecars.get(f.file);
    const tools = side?.tools;
    const known = new Set([...agentTools, ...(tools?.keys() ?? []), ...(Array.isArray(v.tools) ? v.tools.filter(isObj).map((t) => String(t.id)) : [])]);
    const tests = [];
    for (const tf of testFiles.filter((t) => dirname(t) === dirname(f.file))) {
      try {
        tests.push(...parseTestFile(await readFile(tf, 'utf8'), tf).tests);
      } catch (e) {
        err.write(`warning: ${tf}: ${(e as Error).message} (its examples are not used)\n`);
      }
    }
    const dsl = dslOptions(config, { ...config.lists, ...((isObj(v.lists) ? v.lists : {}) as Record<string, string[]>) });
    const prev = new Map((side?.lock?.rules ?? []).map((e) => [e.id, e]));
    const entries: RuleLockEntry[] = [];
    for (const rule of authoredRules(v)) {
      const old = prev.get(rule.id);
      const current = old && old.text_sha256 === ruleTextHash(rule.text) && old.kind === (rule.tier === 2 ? 'workflow' : 'condition');
      const raw = (v.rules as unknown[]).find((r) => isObj(r) && r.id === rule.id) as Obj;
      // An unchanged mechanical entry is re-verified as the loader does (compile + its recorded tests, and the
      // dsl_sha256 it was written with): a hand-edited or no longer holding entry is compiled again, not kept.
      const check = current && !values.force && old.outcome === 'mechanical' ? verifyLockedEntry(old, rule, { dsl, ...(tools && { tools }) }) : undefined;
      const recheck = check?.problem ?? (check?.edited ? 'the locked form is not what compile-rules wrote (dsl_sha256 differs)' : undefined);
      const keep = current && !values.force && recheck === undefined;
      const entry = keep ? old : await compileRule(rule, { llm, ...(model && { model }), dsl, ...(tools && { tools }), agentTools: [...known].sort(), examples: authorExamples(rule, raw.when, tests, blueprintId) });
      entries.push(entry);
      if (rule.tier === 1 && entry.outcome !== 'mechanical') tier1Text++;
      const what = entry.outcome === 'mechanical' ? (entry.dsl ?? entry.workflow?.steps.join(' → ')) : entry.reason;
      const note = keep ? ' (unchanged)' : recheck ? ` (the lock entry failed re-verification: ${recheck}; compiled again)` : '';
      out.write(`${f.file}: rule ${rule.id}: ${entry.outcome}${note}: ${what}\n`);
    }
    const lockPath = ruleLockPath(f.file);
    await writeFile(lockPath, renderRuleLock({ version: 1, blueprint: blueprintId, rules: entries }));
    out.write(`${lockPath}: written (${entries.length} rule(s))\n`);
  }
  if (tier1Text) err.write(`steward compile-rules: ${tier1Text} tier-1 rule(s) did not compile to a tested condition; those blueprints will not load\n`);
  return tier1Text ? 1 : 0;
}
