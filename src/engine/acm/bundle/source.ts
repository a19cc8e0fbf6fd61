/**
 * Where `steward replay export` reads a run from. The ClickHouse adapter implements ReplaySource (runs
 * table, ledger, policy requests/responses, context store, blueprint versions, keys); the export itself
 * is this pure function, so an export from any source is laid out exactly like `steward eval --bundles`.
 */
import { dslOptionsFromConfig } from '../../dsl/index.js';
import { isApproved } from '../../types.js';
import { AcmGovernor } from '../governor.js';
import type { RunState } from '../run-state.js';
import { compileVerificationSheets } from '../verification.js';
import { buildReplayBundle } from './build.js';
import type { BundleFiles, BundleKey, PolicyFiles, RunRecord } from './layout.js';

export interface ReplayRun {
  record: RunRecord;
  policy: PolicyFiles;
  keys: BundleKey[];
  /** The run's final state when the source keeps it; else task-io/ is rebuilt by replaying the record. */
  state?: RunState;
  engine?: { name: string; version: string };
}

export interface ReplaySource {
  /** Everything recorded about one run, in arrival order; undefined when the run is unknown. */
  run(runId: string): Promise<ReplayRun | undefined>;
}

export async function exportReplayBundle(source: ReplaySource, runId: string): Promise<BundleFiles | undefined> {
  const r = await source.run(runId);
  if (!r) return undefined;
  return buildReplayBundle({ record: r.record, state: r.state ?? replayRunState(r),  policy: r.policy, keys: r.keys, engine: r.engine ?? { name: 'steward', version: '0.0.0' } });
}

/** The run's final state from its records: the reducers over its traces with the recorded answers. */
export function replayRunState(r: Pick<ReplayRun, 'record' | 'policy'>): RunState | undefined {
  const dsl = dslOptionsFromConfig(r.policy.config);
  const sheets = compileVerificationSheets(r.policy.sheets.map((s) => ({ file: s.name, text: s.text })), dsl).sheets;
  const gov = new AcmGovernor({ dsl, sheets, options: r.policy.acm });
  for (const v of r.record.contexts) if (!r.record.traces.some((t) => t.trace.trace_id === v.trace_id)) gov.seedContext(r.record.tenant, v);
  const answers = new Map(r.record.requests.map((q) => [q.trace_line, r.record.responses.find((x) => x.seq === q.seq)]));
  r.record.traces.forEach((t, i) => {
    const check = gov.check(t.trace, r.record.tenant);
    const resp = answers.get(i + 1);
    if (check?.rejected || !resp) return;
    gov.commit(t.trace, check, { decision: { intervention: resp.intervention, approved: isApproved(resp.intervention) }, nowMs: t.now_ms, tenant: r.record.tenant });
  });
  return gov.run(r.record.run_id);
}
