/**
 * `steward eval --bundles DIR` (docs/acm.md): run governance on top of the blueprint decision, and one
 * replay bundle per run seen, written to DIR/<run id>/ at the end. Verification sheets (`*.verify.yaml`)
 * and the run-governance options (`acm.yaml`: on, allowReplan, approvers) sit next to the blueprints.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { StewardError, type StewardErrorCode } from '../errors.js';
import { findBlueprintFiles, isPolicyFile } from '../adapters/fs/blueprint-files.js';
import { readUtf8FileSync } from '../adapters/fs/text.js';
import { AcmGovernor, buildReplayBundle, raiseDecision, sha256Hex, compileVerificationSheets, formatAcmProblem, policyDigest, policyFileMap, RecordingStateStore, RunCollector, runIdOf, schemaProblems, type AcmCheck, type AcmOptions, type PolicyFiles } from '../engine/acm/index.js';
import type { EngineConfig } from '../engine/config.js';
import { dslOptionsFromConfig } from '../engine/dsl/index.js';
import { traceEventId } from '../engine/event-id.js';
import { ed25519Signer } from '../engine/ledger/crypto.js';
import { MemoryStateStore } from '../engine/state/memory-state-store.js';
import { MemoryTrustDebtStore } from '../engine/trust-debt/index.js';
import type { EvalRecord, StewardEngine } from '../engine/steward-engine.js';
import { isApproved, mostSevere, type Trace } from '../engine/types.js';
import type { Ed25519Signer } from '../engine/verdict/sign.js';
import { engineVersion, SetupError, type OfflineSetup } from './eval-setup.js';

export const SHEET_FILE = /\.verify\.ya?ml$/i;
export const ACM_OPTIONS_FILE = /(^|[\\/])acm\.ya?ml$/i;

export interface EvalBundles {
  /** The engine (own trust debt) that answers the run's lines: gate hooks go to its finalize() (eval-gate.ts). */
  engine: StewardEngine;
  evaluate(raw: string, trace: Trace, nowMs: number, eventId?: string): Promise<EvalRecord>;
  /** The output line with the run-governance answer folded in (intervention, approved, `acm`). */
  line(rec: EvalRecord, line: Record<string, unknown>): Record<string, unknown>;
  /** Writes one bundle per run; returns how many. */
  write(): Promise<number>;
}

const nsPart = (s: string): string => (s.includes('%') || s.includes(':') ? s.replace(/%/g, '%25').replace(/:/g, '%3A') : s);

/** The policy files of a blueprint directory as a bundle holds them (also `steward replay export`'s). */
export async function loadPolicyFiles(config: EngineConfig, blueprintsDir: string, agentsFile: string | undefined): Promise<PolicyFiles> {
  const root = resolve(blueprintsDir);
  const list = await findBlueprintFiles([root], isPolicyFile);
  const name = (f: string) => relative(root, f).split(sep).join('/');
  const all = list.files.map((f) => ({ name: name(f), text: readUtf8FileSync(f) }));
  // Sheets and acm.yaml are .yaml files the blueprint walk lists too; they are not blueprints.
  const sheets = all.filter((f) => SHEET_FILE.test(f.name));
  const acmFile = all.find((f) => ACM_OPTIONS_FILE.test(f.name));
  let acm: AcmOptions = {};
  if (acmFile) {
    const file = join(blueprintsDir, acmFile.name);
    try {
      acm = (parseYaml(acmFile.text) ?? {}) as AcmOptions;
    } catch (e) {
      throw new SetupError(`invalid ${file}: ${(e as Error).message}`);
    }
    const problems = schemaProblems('acm-options', acm);
    // A mistyped option would silently fall back to the defaults.
    if (problems.length > 0) throw new SetupError(`invalid ${file}`, problems.map((p) => `${file}: ${p.path}: ${p.code}: ${p.message}`));
  }
  return {
    blueprints: all.filter((f) => !SHEET_FILE.test(f.name) && !ACM_OPTIONS_FILE.test(f.name)),
    ...(agentsFile ? { agents: readUtf8FileSync(agentsFile) } : {}),
    config,
    sheets,
    acm,
  };
}

export async function createEvalBundles(setup: OfflineSetup, o: { dir: string; blueprints: string; agents?: string }): Promise<EvalBundles> {
  const agentsFile = o.agents ?? (() => {
    const p = join(o.blueprints, 'agents.yaml');
    try {
      readUtf8FileSync(p);
      return p;
    } catch {
      return undefined;
    }
  })();
  const policy = await loadPolicyFiles(setup.config, o.blueprints, agentsFile);
  const dsl = dslOptionsFromConfig(setup.config);
  const sheets = compileVerificationSheets(policy.sheets.map((s) => ({ file: join(o.blueprints, s.name), text: s.text })), dsl);
  if (sheets.problems.length > 0) throw new SetupError('invalid verification sheets', sheets.problems.map(formatAcmProblem));
  const recorder = new RecordingStateStore(new MemoryStateStore());
  // The run's finalization gate: tool calls recorded here are the evidence of the final answers eval judges.
  // Our own trust-debt store, so debt moves by the combined answer (spec-decisions D15, docs/acm.md).
  const trustDebt = new MemoryTrustDebtStore();
  const engine = setup.makeEngine({ state: recorder, gate: setup.gate, trustDebt });
  const gov = new AcmGovernor({ dsl, sheets: sheets.sheets, options: policy.acm });
  const signer = setup.signer as Ed25519Signer;
  const ledgerSigner = ed25519Signer(signer.privateKeyPem());
  const digest = policyDigest(policyFileMap(policy));
  const version = engineVersion();
  const collector = new RunCollector({ signer: ledgerSigner, policyDigest: digest, engineVersion: version });
  const answered = new Map<string, EvalRecord>();
  const outcomes = new WeakMap<EvalRecord, { final: ReturnType<typeof mostSevere>; check?: AcmCheck }>();

  return {
    engine,
    async evaluate(raw, trace, nowMs, eventId) {
      if (!gov.governs(trace)) return engine.evaluate(trace, nowMs, eventId);
      const agent = setup.registry.lookup(trace.agent_id);
      const tenant = agent.tenant;
      const runId = runIdOf(trace);
      const line = raw.trim();
      // The same line again is a redelivery (as eval treats it): the same answer, governed and recorded once.
      const key = `${trace.trace_id}\u0000${sha256Hex(line)}`;
      const seen = answered.get(key);
      if (seen) return seen;
      // A run's ledger entries are keyed by event id (trace id + digest of its bytes, spec-decisions D30), as
      // in the stream: a reused trace id with other bytes is a second event with its own entries.
      eventId ??= traceEventId(trace.trace_id, Buffer.from(line));
      const check = gov.check(trace, tenant);
      if (check?.rejected) {
        if (runId) collector.add({ runId, line, trace, nowMs, tenant, check });
        const first = check.problems[0]!;
        // The ACM codes are not (yet) StewardErrorCodes; the error line carries them as they are.
        throw new StewardError(first.code as StewardErrorCode, check.problems.map((p) => `${p.path}${p.offset !== undefined ? `@${p.offset}` : ''}: ${p.code}: ${p.message}`).join('; '));
      }
      // The run checks' answer is folded into the decision before scoring, as in the stream (raiseDecision).
      const decided = await engine.decide(trace, nowMs, eventId);
      const decision = check ? raiseDecision(decided, mostSevere(decided.intervention, check.intervention), check.violations) : decided;
      const score = await engine.score(trace, decision, nowMs);
      const reads = recorder.take(`${nsPart(tenant)}:${nsPart(agent.id)}`);
      const final = check ? mostSevere(score.intervention, check.intervention) : score.intervention;
      const bp = setup.set.blueprints.find((b) => b.id === decision.blueprint && b.version === decision.blueprintVersion) ?? setup.set.select(agent, trace);
      const change = await trustDebt.apply({ eventId: eventId ?? trace.trace_id, tenant, agentId: agent.id, atMs: nowMs, kind: 'intervention', intervention: final, severity: score.severity }, bp.trustDebt);
      const rec: EvalRecord = { decision, score, trustDebt: { before: change.before, after: change.after, level: change.level } };
      const c = gov.commit(trace, check, { decision: { intervention: final, approved: isApproved(final) }, nowMs, tenant, eventId });
      if (runId) collector.add({ runId, line, trace, nowMs, eventId, tenant, check, rec, reads, drafts: c.drafts, contexts: c.contexts });
      // The answer is the combined one: the output line and the summary count it (the verdict stays the blueprint's).
      const out: EvalRecord = final === rec.score.intervention ? rec : { ...rec, score: { ...rec.score, intervention: final, approved: isApproved(final) } };
      outcomes.set(out, { final, check });
      answered.set(key, out);
      return out;
    },
    line(rec, line) {
      const o = outcomes.get(rec);
      if (!o?.check) return line;
      line.intervention = o.final;
      line.approved = isApproved(o.final);
      line.acm = {
        intervention: o.check.intervention,
        violations: o.check.violations.map((v) => ({ code: v.code, intervention: v.intervention, message: v.message })),
        ...(o.check.verification ? { verification: o.check.verification.map((v) => ({ capability: v.capability, results: v.results, claims: v.claims, disagreements: v.disagreements })) } : {}),
      };
      return line;
    },
    async write() {
      const keys = [{ kid: signer.kid, public_key: signer.publicKeyPem(), signs: ['ledger', 'verdicts'] as ('ledger' | 'verdicts')[] }];
      let n = 0;
      for (const record of collector.records()) {
        const files = buildReplayBundle({ record, state: gov.run(record.run_id), policy, keys, engine: { name: 'steward', version } });
        const dir = join(o.dir, record.run_id.replace(/[^A-Za-z0-9@._-]/g, '_'));
        for (const [path, text] of files) {
          const target = join(dir, path);
          await mkdir(dirname(target), { recursive: true });
          await writeFile(target, text);
        }
        n++;
      }
      return n;
    },
  };
}


