/**
 * Compiling a blueprint set: parse → schema → file checks → resolve inheritance → compile → index.
 * Pure: file contents come in as strings (src/adapters/fs reads directories).
 */
import { sortProblems, StewardError } from '../../errors.js';
import type { EngineConfig } from '../config.js';
import type { FunctionRegistry } from '../dsl/functions.js';
import type { ApprovalPolicy, CompiledBlueprint } from '../types.js';
import { dslOptions } from './conditions.js';
import { assemble, compileOwnItems, fileChecks, trustDebtProblems, type OwnItems } from './compile.js';
import { BASELINE_FILE, BASELINE_YAML } from './embedded.js';
import { mergeAuthored } from './merge.js';
import { assembleGate, compileOwnGuardrails, duplicateGuardrailProblems, gateFileChecks, workflowLimitProblems } from '../gate/config.js';
import type { GateLoadLimits, Guardrail } from '../gate/types.js';
import { BASELINE_NAME, createBlueprintSet, type BlueprintSet } from './select.js';
import { checkSchema } from './schema-check.js';
import { compileOwnApprovals } from '../approvals/policy.js';
import { argTypeProblems, compileOwnRules } from '../rules/load.js';
import type { RuleLock, ToolSchemas } from '../rules/types.js';
import { parseSource, type SourceDoc } from './source.js';
import { compatibilityProblems, STEWARD_ENGINE_VERSION } from '../rollout/compat.js';
import { isSemver, keyOf, parseRef, resolveVersion, splitId, type VersionRef } from './versions.js';



export const BUILTIN_BASELINE_FILE = `<builtin>/${BASELINE_FILE}`;
export const BASELINE_REF = 'clarity.baseline@1.0';

export interface CompileOptions {
  config: EngineConfig;
  /** Add the built-in clarity.baseline@1.0 unless a file provides the same id+version (default true). */
  includeBuiltinBaseline?: boolean;
  /**
   * Custom DSL functions (ACGP-1004 §9.4.6) that conditions may call next to the standard ones. Calls are
   * checked at load (name, arity, literal argument types) like standard ones; docs/dsl.md "Custom functions".
   */
  functions?: FunctionRegistry;
  /** Workflow complexity limits of the finalization gate (gate spec §11); default `config.gateLimits`, else 5 steps, 3 workflows. */
  gateLimits?: GateLoadLimits;
  /**
   * Per blueprint file (its path as in `files`): the rules lock `steward compile-rules` wrote beside it and the
   * tool input schemas imported from its MCP servers (docs/rules.md); read by the fs adapter (rule-sidecars.ts).
   */
  sidecars?: ReadonlyMap<string, { lock?: RuleLock; tools?: ToolSchemas }>;
  /** Steward's version for the compatibility matrix (ACGP-1004 §13.6, docs/rollout.md); default STEWARD_ENGINE_VERSION. */
  engineVersion?: string;
}

export interface CompileResult {
  set?: BlueprintSet;
  errors: StewardError[];
  warnings: StewardError[];
}

type Obj = Record<string, unknown>;

interface Authored {
  file: string;
  doc: SourceDoc;
  value: Obj;
  name: string;
  version: string;
  key: string;
  /** false when the file has its own errors: it still resolves as a parent, but produces no output. */
  valid: boolean;
  /** The name in the file's id when `name` is a placeholder (invalid version): a root check needs it. */
  idName?: string;
  builtin: boolean;
}

interface Resolved {
  resolved: Obj;
  items: OwnItems;
  chain: string[];
  ctqMetricDocs: Map<string, SourceDoc>;
  checkOrigin: Map<string, string>;
  tripwireOrigin: Map<string, string>;
  /** Gate guardrails, parent first (compiled with the file that wrote them, like tripwires). */
  guardrails: Guardrail[];
  /** Approval policies of `tools:`, parent first (docs/approvals.md). */
  approvals: ApprovalPolicy[];
  ok: boolean;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export function compileBlueprintSet(files: { file: string; text: string }[], opts: CompileOptions): CompileResult {
  const errors: StewardError[] = [];
  const warnings: StewardError[] = [];
  const authored: Authored[] = [];

  const load = (file: string, text: string, builtin: boolean): void => {
    const { doc, errors: syn } = parseSource(file, text);
    errors.push(...syn);
    if (!doc) return;
    if (!isObj(doc.value)) {
      errors.push(new StewardError('STEWARD_BLUEPRINT_SCHEMA', 'a blueprint must be a mapping (object) at the top level', { position: doc.pos([]) }));
      return;
    }
    const before = errors.length;
    errors.push(...checkSchema(doc));
    const v = doc.value;
    if (typeof v.id === 'string' && typeof v.version === 'string') {
      fileChecks(doc, v, errors, warnings);
      gateFileChecks(doc, v, errors);
      compatibilityProblems(doc, v, { engineVersion: opts.engineVersion ?? STEWARD_ENGINE_VERSION }, errors);
    }
    if (typeof v.id !== 'string' || typeof v.version !== 'string' || !isSemver(v.version)) {
      // Still resolved and compiled (never served: valid false) so its DSL and inheritance problems are
      // reported with the bad id/version, not one fix later. The NUL name cannot be referenced or collide.
      const name = `\u0000${file}`;
      const idName = typeof v.id === 'string' ? splitId(v.id).name : undefined;
      authored.push({ file, doc, value: v, name, idName, version: '0.0.0', key: keyOf(name, '0.0.0'), valid: false, builtin });
      return;
    }
    const name = splitId(v.id).name;
    authored.push({ file, doc, value: v, name, version: v.version, key: keyOf(name, v.version), valid: errors.length === before, builtin });
  };

  for (const f of [...files].sort((a, b) => a.file.localeCompare(b.file))) load(f.file, f.text, false);
  if (opts.includeBuiltinBaseline !== false && !authored.some((a) => a.name === BASELINE_NAME && a.version === '1.0.0')) load(BUILTIN_BASELINE_FILE, BASELINE_YAML, true);

  // Duplicate id@version: the first file (sorted by path) wins; later ones are errors.
  const byKey = new Map<string, Authored>();
  const versionsByName = new Map<string, string[]>();
  for (const a of authored) {
    const prev = byKey.get(a.key);
    if (prev) {
      errors.push(new StewardError('STEWARD_BLUEPRINT_DUPLICATE', `blueprint ${a.key} is already defined in ${prev.file}`, { position: a.doc.pos(['id']) }));
      continue;
    }
    byKey.set(a.key, a);
    versionsByName.set(a.name, [...(versionsByName.get(a.name) ?? []), a.version]);
  }

  const parentOf = (a: Authored): { ref?: VersionRef; key?: string; failed?: boolean } => {
    const raw = a.value.inherits;
    // A baseline file (even one whose version is invalid) is a root, never the baseline's child.
    if (raw === undefined && (a.idName ?? a.name) === BASELINE_NAME) return {};
    const refText = typeof raw === 'string' ? raw : BASELINE_REF;
    const ref = parseRef(refText);
    const pos = a.doc.pos(raw === undefined ? ['id'] : ['inherits']);
    if (!ref) {
      errors.push(new StewardError('STEWARD_BLUEPRINT_SEMVER', `invalid parent reference '${refText}'`, { position: pos }));
      return { failed: true };
    }
    if (ref.kind === 'latest') warnings.push(new StewardError('STEWARD_BLUEPRINT_SEMVER', `inherits '${refText}': @latest is not recommended for production; pin a version (ACGP-1004 §13.4)`, { position: pos }));
    const v = resolveVersion(ref, versionsByName.get(ref.name) ?? []);
    if (v === undefined) {
      const have = versionsByName.get(ref.name);
      errors.push(
        new StewardError('STEWARD_BLUEPRINT_MISSING_PARENT', `parent '${refText}' not found${have ? ` (available versions of ${ref.name}: ${have.join(', ')})` : ''}`, { position: pos }),
      );
      return { ref, failed: true };
    }
    return { ref, key: keyOf(ref.name, v) };
  };

  const resolvedByKey = new Map<string, Resolved | null>();
  const visiting: string[] = [];
  const resolve = (a: Authored): Resolved | null => {
    if (resolvedByKey.has(a.key)) return resolvedByKey.get(a.key)!;
    const cycleAt = visiting.indexOf(a.key);
    if (cycleAt >= 0) {
      const loop = [...visiting.slice(cycleAt), a.key];
      errors.push(new StewardError('STEWARD_BLUEPRINT_CYCLE', `inheritance cycle: ${loop.join(' -> ')}`, { position: a.doc.pos(['inherits']) }));
      return null;
    }
    visiting.push(a.key);
    const p = parentOf(a);
    let parent: Resolved | null | undefined;
    if (p.key) parent = resolve(byKey.get(p.key)!);
    visiting.pop();
    if (resolvedByKey.has(a.key)) return resolvedByKey.get(a.key)!; // closed a cycle below us
    if (p.failed || parent === null) {
      resolvedByKey.set(a.key, null);
      return null;
    }
    const resolved = mergeAuthored(parent?.resolved, a.value, p.key);
    const lists = { ...opts.config.lists, ...((isObj(resolved.lists) ? resolved.lists : {}) as Record<string, string[]>) };
    const dsl = dslOptions(opts.config, lists, opts.functions);
    const own = compileOwnItems(a.doc, a.value, dsl, errors);
    const ownGuardrails = compileOwnGuardrails(a.doc, a.value, dsl, errors);
    const side = opts.sidecars?.get(a.file);
    const ownRules = compileOwnRules({ doc: a.doc, value: a.value, dsl, lock: side?.lock, tools: side?.tools }, errors, warnings);
    argTypeProblems(a.doc, a.value, side?.tools, errors);
    const ownApprovals = compileOwnApprovals(a.doc, a.value, dsl, errors);
    const checkOrigin = new Map(parent?.checkOrigin);
    const tripwireOrigin = new Map(parent?.tripwireOrigin);
    const dupCheck = (kind: 'checks' | 'tripwires', origin: Map<string, string>): void => {
      const list = Array.isArray(a.value[kind]) ? (a.value[kind] as unknown[]) : [];
      list.forEach((c, i) => {
        if (!isObj(c) || typeof c.id !== 'string') return;
        const prev = origin.get(c.id);
        if (prev !== undefined)
          errors.push(
            new StewardError('STEWARD_BLUEPRINT_DUPLICATE', `${kind === 'checks' ? 'check' : 'tripwire'} id '${c.id}' is already defined ${prev === a.key ? 'in this blueprint' : `by ${prev}`}`, {
              position: a.doc.pos([kind, i, 'id']),
            }),
          );
        else origin.set(c.id, a.key);
      });
    };
    dupCheck('checks', checkOrigin);
    dupCheck('tripwires', tripwireOrigin);
    const ctqMetricDocs = new Map(parent?.ctqMetricDocs);
    if (isObj(a.value.ctq) && isObj(a.value.ctq.metrics)) for (const n of Object.keys(a.value.ctq.metrics)) ctqMetricDocs.set(n, a.doc);
    const r: Resolved = {
      resolved,
      items: {
        tripwires: [...(parent?.items.tripwires ?? []), ...own.tripwires],
        rules: [...(parent?.items.rules ?? []), ...own.rules, ...ownRules.rules],
        metrics: [...(parent?.items.metrics ?? []), ...own.metrics, ...ownRules.metrics],
      },
      chain: [...(parent?.chain ?? []), a.key],
      ctqMetricDocs,
      checkOrigin,
      tripwireOrigin,
      guardrails: [...(parent?.guardrails ?? []), ...ownGuardrails, ...ownRules.workflows],
      approvals: [...(parent?.approvals ?? []), ...ownApprovals],
      ok: a.valid && (parent?.ok ?? true),
    };
    resolvedByKey.set(a.key, r);
    return r;
  };

  const compiled: CompiledBlueprint[] = [];
  // A parent's trust_debt problem is found again for each child that inherits it: report it once.
  const trustDebtReported = new Set<string>();
  for (const a of byKey.values()) {
    const r = resolve(a);
    if (!r) continue;
    for (const e of trustDebtProblems(r.resolved.trust_debt, r.chain.map((k) => byKey.get(k)!.doc))) {
      // value/type problems of a file with schema errors were reported by the schema check already
      if (e.code === 'STEWARD_BLUEPRINT_INVALID' && !r.ok) continue;
      const k = `${e.code}|${e.position?.file}|${e.position?.line}|${e.position?.col}`;
      if (trustDebtReported.has(k)) continue;
      trustDebtReported.add(k);
      errors.push(e);
    }
    // spec-decisions D8: checks and scoring are required on the resolved blueprint (a child may inherit them).
    for (const field of ['checks', 'scoring'] as const)
      if (r.resolved[field] === undefined || (field === 'checks' && (r.resolved.checks as unknown[]).length === 0))
        errors.push(new StewardError('STEWARD_BLUEPRINT_SCHEMA', `missing required field '${field}' (neither this blueprint nor any ancestor defines it)`, { position: a.doc.pos(['id']) }));
    for (const [i, t] of ((Array.isArray(a.value.tripwires) ? a.value.tripwires : []) as unknown[]).entries()) {
      const sev = isObj(t) ? t.severity : undefined;
      const weights = isObj(r.resolved.trust_debt) && isObj(r.resolved.trust_debt.severity_weights) ? r.resolved.trust_debt.severity_weights : {};
      // own keys only: `'constructor' in weights` is true for every object (Object.prototype)
      if (typeof sev === 'string' && !['standard', 'critical', 'severe'].includes(sev) && !Object.hasOwn(weights, sev))
        warnings.push(new StewardError('STEWARD_BLUEPRINT_INVALID', `tripwire severity '${sev}' has no trust_debt.severity_weights entry; weight 1.0 applies`, { position: a.doc.pos(['tripwires', i, 'severity']) }));
    }
    // Gate (docs/gate.md): guardrail ids are unique along the chain; workflow limits count inherited ones.
    const chainDocs = r.chain.map((k) => byKey.get(k)!);
    errors.push(...duplicateGuardrailProblems(chainDocs.map((c) => ({ doc: c.doc, value: c.value, key: c.key }))), ...workflowLimitProblems(r.guardrails, opts.gateLimits ?? opts.config.gateLimits));
    if (!r.ok) continue;
    const bp = assemble({ resolved: r.resolved, items: r.items, chain: r.chain, file: a.builtin ? undefined : a.file, config: opts.config, ctqMetricDocs: r.ctqMetricDocs });
    bp.gate = assembleGate(r.resolved.finalization_gate, r.guardrails);
    if (r.approvals.length) bp.approvals = r.approvals;
    compiled.push(bp);
  }

  const errs = sortProblems(errors);
  const warns = sortProblems(warnings);
  if (errs.length) return { errors: errs, warnings: warns };
  return { set: createBlueprintSet(compiled), errors: [], warnings: warns };
}
