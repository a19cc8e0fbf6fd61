/**
 * `steward replay verify` (docs/acm.md "Replay bundles"): re-checks a bundle and reports every
 * mismatch as `PATH: CODE: message`; none means the run reproduces. Besides the file, chain,
 * signature and content-address checks (verify-files.ts) it replays the run: every recorded policy
 * request is decided again under the recorded policy with the recorded state, the ACM reducers run
 * again over the traces as received, and what they produce (ACM checks, ledger entries, task-io,
 * planner files, context versions) must equal what the bundle holds.
 */
import { entryIdOf } from '../../ledger/acm-entries.js';
import type { LedgerEntry } from '../../ledger/types.js';
import { dslOptionsFromConfig } from '../../dsl/index.js';
import { defaultEngineConfig, type EngineConfig } from '../../config.js';
import { isApproved, mostSevere, type Trace } from '../../types.js';
import { canonicalJson, sha256Hex } from '../canonical.js';
import type { ContextVersion } from '../context.js';
import { AcmGovernor } from '../governor.js';
import type { PolicyRequestRecord, PolicyResponseRecord } from '../pdp.js';
import type { AcmOptions } from '../run-state.js';
import { compileVerificationSheets } from '../verification.js';
import { schemaProblems } from '../validate.js';
import { contextFiles, plannerFiles, taskIoFiles } from './artifacts.js';
import { acmSummary } from './collector.js';
import { ACM_OPTIONS, AGENTS, BLUEPRINTS_DIR, contextPath, ENGINE_CONFIG, LEDGER, MANIFEST, policyDigest, recordDigest, REQUESTS, RESPONSES, TRACES, VERIFY_DIR, type BundleFiles } from './layout.js';
import { createReevaluator } from './reevaluate.js';
import { raiseDecision } from '../stage.js';
import { checkContexts, checkLedger, checkManifest, checkVerdicts, parseJson, parseJsonl, trustedKeys, type BundleProblem } from './verify-files.js';

export { formatBundleProblem, type BundleProblem } from './verify-files.js';

export interface VerifyBundleOptions {
  /** Trusted public keys (kid → SPKI PEM); when given, only these are trusted (`--keys`). */
  keys?: Record<string, string>;
}

const stripClamp = (p: Record<string, unknown>): Record<string, unknown> => {
  const { event_ts_ms: _e, ...rest } = p;
  return rest;
};

export async function verifyReplayBundle(files: BundleFiles, o: VerifyBundleOptions = {}): Promise<BundleProblem[]> {
  const problems: BundleProblem[] = [];
  const manifest = checkManifest(files, problems);
  const keys = trustedKeys(manifest, o.keys, problems);
  const ledger = parseJsonl<LedgerEntry>(files, LEDGER, problems, 'ledger').items;
  const intact = checkLedger(ledger, keys, problems);
  const requests = parseJsonl<PolicyRequestRecord>(files, REQUESTS, problems, 'request').items;
  const responses = parseJsonl<PolicyResponseRecord>(files, RESPONSES, problems, 'response').items;
  // Line digests (layout.ts recordDigest): the sha256 of each request/response line as read.
  const lineDigest = new WeakMap<object, string>();
  for (const r of [...requests, ...responses]) lineDigest.set(r.value as object, sha256Hex(r.text));
  const dig = (r: object): string => lineDigest.get(r) ?? recordDigest(r);
  const signedResponse = new Map<string, unknown>();
  for (const e of ledger) if (e.value.type === 'POLICY_DECISION' && intact.has(e.value.entry_id)) signedResponse.set(String(e.value.payload.trace_id), e.value.payload.response_digest);
  checkVerdicts(responses, keys, (r) => signedResponse.get(r.trace_id) === dig(r), problems);
  checkContexts(files, problems);
  if (manifest) {
    // bundle.json can be recomputed by anyone; the run it names must be the one the signed entries name.
    const r = manifest.run;
    // A run may hold other agents' events (approvals); its own agent must be among the signers' subjects.
    const other = ledger.find((e) => (e.value.agent_id === r.agent_id && (e.value.tenant ?? '') !== (r.tenant ?? '')) || e.value.payload?.run_id !== r.id);
    if (ledger.length > 0 && !ledger.some((e) => e.value.agent_id === r.agent_id)) problems.push({ path: MANIFEST, code: 'STEWARD_REPLAY_MANIFEST', message: `run ${r.id}: agent ${r.agent_id} has no entry in the signed ledger` });
    else if (other) problems.push({ path: MANIFEST, code: 'STEWARD_REPLAY_MANIFEST', message: `run ${r.id} (agent ${r.agent_id}, tenant ${r.tenant ?? ''}) is not the run of the signed ledger entries (${LEDGER}:${other.line} names run ${String(other.value.payload?.run_id)}, agent ${other.value.agent_id}, tenant ${other.value.tenant})` });
    try {
      await replay(files, manifest.run.id, manifest.run.tenant ?? '', { ledger, requests, responses, dig }, problems);
    } catch (e) {
      // A crafted bundle must yield a report, not a crash.
      problems.push({ path: MANIFEST, code: 'STEWARD_REPLAY_INTERNAL', message: `the replay stopped: ${(e as Error).message}` });
    }
  }
  return problems.sort((a, b) => cmpPath(a.path, b.path) || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
}

function cmpPath(a: string, b: string): number {
  const [pa, la] = a.split(/:(?=\d+$)/);
  const [pb, lb] = b.split(/:(?=\d+$)/);
  if (pa !== pb) return pa! < pb! ? -1 : 1;
  return Number(la ?? 0) - Number(lb ?? 0);
}

interface Recorded {
  ledger: { line: number; value: LedgerEntry; text: string }[];
  requests: { line: number; value: PolicyRequestRecord; text: string }[];
  responses: { line: number; value: PolicyResponseRecord; text: string }[];
  dig: (r: object) => string;
}

async function replay(files: BundleFiles, runId: string, runTenant: string, rec: Recorded, problems: BundleProblem[]): Promise<void> {
  const add = (path: string, code: string, message: string) => problems.push({ path, code, message });
  const config = { ...defaultEngineConfig(), ...(parseJson<Partial<EngineConfig>>(files, ENGINE_CONFIG, problems) ?? {}) };
  const acmOptions = parseJson<AcmOptions>(files, ACM_OPTIONS, problems) ?? {};
  for (const p of schemaProblems('acm-options', acmOptions)) add(ACM_OPTIONS, 'STEWARD_REPLAY_POLICY_LOAD', `${p.path}: ${p.message}`);
  const blueprints = [...files].filter(([p]) => p.startsWith(BLUEPRINTS_DIR)).map(([file, text]) => ({ file, text }));
  const agents = files.has(AGENTS) ? { file: AGENTS, text: files.get(AGENTS)! } : undefined;
  const re = createReevaluator({ blueprints, agents, config });
  for (const p of re.problems) add(p.position?.file ? `${p.position.file}:${p.position.line ?? 1}` : 'policy/', 'STEWARD_REPLAY_POLICY_LOAD', `${p.code}: ${p.message}`);
  const dsl = dslOptionsFromConfig(config);
  const sheetFiles = [...files].filter(([p]) => p.startsWith(VERIFY_DIR)).map(([file, text]) => ({ file, text }));
  const sheets = compileVerificationSheets(sheetFiles, dsl);
  for (const p of sheets.problems) add(p.position?.file ?? VERIFY_DIR, 'STEWARD_REPLAY_POLICY_LOAD', `${p.code}: ${p.message}`);
  const gov = new AcmGovernor({ dsl, sheets: sheets.sheets, options: acmOptions });

  const traces = parseJsonl<Trace>(files, TRACES, problems, 'trace').items;
  const runTraceIds = new Set(traces.map((t) => t.value.trace_id));
  for (const [p] of files) {
    if (!p.startsWith('context/')) continue;
    const c = parseJson<ContextVersion & { trace_id: string | null }>(files, p, []);
    if (c && (c.trace_id === null || !runTraceIds.has(c.trace_id))) gov.seedContext(runTenant, { ...c, trace_id: c.trace_id ?? undefined });
  }

  const policy = policyDigest(files);
  // The first record of a line/seq counts; a later copy is an orphan.
  const reqByLine = new Map([...rec.requests].reverse().map((r) => [r.value.trace_line, r]));
  const respBySeq = new Map([...rec.responses].reverse().map((r) => [r.value.seq, r]));
  const entryById = new Map(rec.ledger.map((e) => [e.value.entry_id, e]));
  const produced = new Set<string>();
  let policyReported = false;
  const contexts: ContextVersion[] = [];
  const visited = new Set<number>();
  const visitedResp = new Set<number>();

  for (const { line, value: trace, text } of traces) {
    const tenant = re.reevaluator ? re.reevaluator.tenantOf(trace.agent_id) : runTenant;
    const check = gov.check(trace, tenant);
    const req = reqByLine.get(line);
    const at = `${TRACES}:${line}`;
    if (check?.rejected) {
      if (req) add(`${REQUESTS}:${req.line}`, 'STEWARD_REPLAY_ACM', `recorded as decided, but the event is invalid: ${check.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
      continue;
    }
    if (!req) {
      add(at, 'STEWARD_REPLAY_ORPHAN', `trace ${trace.trace_id} has no recorded policy request`);
      continue;
    }
    const r = req.value;
    visited.add(req.line);
    if (sha256Hex(text) !== r.trace_digest) add(at, 'STEWARD_REPLAY_TRACE_DIGEST', `trace ${trace.trace_id} differs from the trace its policy request recorded`);
    const resp = respBySeq.get(r.seq);
    if (!resp) {
      add(`${REQUESTS}:${req.line}`, 'STEWARD_REPLAY_ORPHAN', `request ${r.seq} (${trace.trace_id}) has no response`);
      continue;
    }
    const respAt = `${RESPONSES}:${resp.line}`;
    visitedResp.add(resp.line);
    // Keyed by the event id the request recorded (spec-decisions D30); bundles before it keyed by trace id.
    const pdId = entryIdOf('pd', { trace_id: trace.trace_id, event_id: r.event_id });
    const pd = entryById.get(pdId);
    produced.add(pdId);
    if (!pd) add(respAt, 'STEWARD_REPLAY_ENTRY', `no POLICY_DECISION entry records the decision of ${trace.trace_id}`);
    else {
      const p = pd.value.payload;
      if (p.request_digest !== rec.dig(r)) add(`${REQUESTS}:${req.line}`, 'STEWARD_REPLAY_REQUEST_DIGEST', `request of ${trace.trace_id} differs from the one its signed POLICY_DECISION recorded`);
      if (p.response_digest !== rec.dig(resp.value)) add(respAt, 'STEWARD_REPLAY_RESPONSE_DIGEST', `response of ${trace.trace_id} differs from the one its signed POLICY_DECISION recorded`);
      if (p.policy_digest !== undefined && p.policy_digest !== policy && !policyReported) {
        policyReported = true;
        add('policy/', 'STEWARD_REPLAY_POLICY_DIGEST', `the policy files (blueprints, registry, config, sheets, options) differ from those the decisions were taken under`);
      }
    }
    let blueprintIntervention = resp.value.blueprint.intervention;
    if (re.reevaluator) {
      try {
        const out = await re.reevaluator.decide(trace, r, check ? (d) => raiseDecision(d, mostSevere(d.intervention, check.intervention), check.violations) : undefined);
        blueprintIntervention = out.score.intervention;
        const got = {
          intervention: out.score.intervention,
          stage: out.score.stage,
          tripwires: out.decision.tripwires.map((t) => `${t.id}:${t.fired}`).join(','),
          rules: out.decision.rules.map((x) => `${x.id}:${x.passed}`).join(','),
          ctq: out.score.ctq,
          risk: out.score.risk,
        };
        const b = resp.value.blueprint;
        const want = { intervention: b.intervention, stage: b.stage, tripwires: b.tripwires.map((t) => `${t.id}:${t.fired}`).join(','), rules: b.rules.map((x) => `${x.id}:${x.passed}`).join(','), ctq: b.ctq, risk: b.risk };
        const diff = (Object.keys(want) as (keyof typeof want)[]).filter((k) => want[k] !== got[k]);
        if (diff.length > 0) add(respAt, 'STEWARD_REPLAY_DECISION', `re-evaluating ${trace.trace_id} under ${r.blueprint.id} (version ${r.blueprint.version}) does not reproduce it: ${diff.map((k) => `${k} recorded ${JSON.stringify(want[k])}, replayed ${JSON.stringify(got[k])}`).join('; ')}`);
        else if (out.unusedReads > 0) add(`${REQUESTS}:${req.line}`, 'STEWARD_REPLAY_DECISION', `request of ${trace.trace_id} records ${out.unusedReads} state read(s) the re-evaluation never made`);
      } catch (e) {
        add(respAt, 'STEWARD_REPLAY_DECISION', `re-evaluating ${trace.trace_id} failed: ${(e as Error).message}`);
      }
    }
    const acm = acmSummary(check);
    if ((acm !== undefined || resp.value.acm !== undefined) && canonicalJson(acm ?? null) !== canonicalJson(resp.value.acm ?? null)) add(respAt, 'STEWARD_REPLAY_ACM', `the run-governance checks of ${trace.trace_id} replay as ${check ? `${check.intervention} [${check.violations.map((v) => v.code).join(', ')}]` : 'none'}, recorded ${resp.value.acm ? `${resp.value.acm.intervention} [${resp.value.acm.violations.map((v) => v.code).join(', ')}]` : 'none'}`);
    const final = check ? mostSevere(blueprintIntervention, check.intervention) : blueprintIntervention;
    if (final !== resp.value.intervention || isApproved(final) !== resp.value.approved) add(respAt, 'STEWARD_REPLAY_DECISION', `the answer to ${trace.trace_id} replays as ${final}, recorded ${resp.value.intervention}`);
    const c = gov.commit(trace, check, { decision: { intervention: final, approved: isApproved(final) }, nowMs: r.now_ms, tenant, ...(r.event_id !== undefined ? { eventId: r.event_id } : {}) });
    for (const v of c.contexts) if (!contexts.some((x) => x.id === v.id && x.version === v.version)) contexts.push(v);
    for (const d of c.drafts) {
      produced.add(d.entry_id);
      const e = entryById.get(d.entry_id);
      const code = d.type === 'BRANCH_TAKEN' ? 'STEWARD_REPLAY_BRANCH' : 'STEWARD_REPLAY_ENTRY';
      if (!e) add(at, code, `the replay records ${d.type} ${d.entry_id}, which the ledger lacks`);
      else if (e.value.type !== d.type || canonicalJson(stripClamp(e.value.payload)) !== canonicalJson(d.payload)) {
        add(`${LEDGER}:${e.line}`, code, d.type === 'BRANCH_TAKEN' ? `branch ${String(d.payload.from)} → ${String(d.payload.to)}: the recorded guards give allowed=${String(d.payload.allowed)}, the ledger says allowed=${String(e.value.payload.allowed)}${e.value.payload.allowed === d.payload.allowed ? ' (other fields differ)' : ''}` : `${d.type} ${d.entry_id} differs from what the replay records`);
      }
    }
  }
  // Records no trace of the run leads to (added lines, or lines whose trace is gone).
  for (const r of rec.requests) if (!visited.has(r.line)) add(`${REQUESTS}:${r.line}`, 'STEWARD_REPLAY_ORPHAN', `request ${String(r.value.seq)} (${r.value.trace_id}) belongs to no trace of the run`);
  for (const r of rec.responses) if (!visitedResp.has(r.line)) add(`${RESPONSES}:${r.line}`, 'STEWARD_REPLAY_ORPHAN', `response ${String(r.value.seq)} (${r.value.trace_id}) answers no request of the run`);
  for (const e of rec.ledger) if (!produced.has(e.value.entry_id)) add(`${LEDGER}:${e.line}`, 'STEWARD_REPLAY_ENTRY', `${e.value.type} ${e.value.entry_id}: no event of the run produces this entry`);
  compareDerived(files, 'task-io/', taskIoFiles(gov.run(runId)), 'STEWARD_REPLAY_TASK_IO', problems);
  compareDerived(files, 'planner/', plannerFiles(traces.map((t) => ({ trace: t.value }))), 'STEWARD_REPLAY_PLANNER', problems);
  compareDerived(files, 'context/', contextFiles(contexts), 'STEWARD_REPLAY_CONTEXT', problems);
  // The digest a PLAN_SELECTED signed is the one the context file must carry (a re-hashed packet is caught here).
  for (const e of rec.ledger) {
    const ctx = e.value.type === 'PLAN_SELECTED' ? (e.value.payload.context as { id: string; version: number; digest: string } | undefined) : undefined;
    if (!ctx) continue;
    const path = contextPath(ctx);
    const file = parseJson<{ digest?: string }>(files, path, []);
    if (!file) problems.push({ path, code: 'STEWARD_REPLAY_CONTEXT', message: `missing: PLAN_SELECTED (${LEDGER}:${e.line}) bound ${ctx.id}@${ctx.version}` });
    else if (file.digest !== ctx.digest) problems.push({ path, code: 'STEWARD_REPLAY_CONTEXT_DIGEST', message: `digest ${String(file.digest)} differs from ${ctx.digest}, which PLAN_SELECTED (${LEDGER}:${e.line}) signed` });
  }
}

function compareDerived(files: BundleFiles, prefix: string, expected: BundleFiles, code: string, problems: BundleProblem[]): void {
  for (const [p, text] of expected) {
    const have = files.get(p);
    if (have === undefined) problems.push({ path: p, code, message: 'missing: the replayed run has this file' });
    else if (canonicalJson(JSON.parse(text)) !== safeCanon(have)) problems.push({ path: p, code, message: 'differs from the replayed run' });
  }
  for (const p of files.keys()) if (p.startsWith(prefix) && !expected.has(p)) problems.push({ path: p, code, message: 'the replayed run has no such file' });
}

function safeCanon(text: string): string {
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return '';
  }
}
