/**
 * A stage's chunk of final answers (and user_feedback traces) decided in job-state rounds (docs/gate.md "Job
 * state", docs/pipeline.md "Gate stage"): the states of every job the chunk names are read together, the answers
 * are decided (judge calls concurrent, bounded), and each decision is recorded as soon as it is made — instead of
 * a read and a write per answer, each waiting for its own round. The Redis job store sends the operations issued
 * in one event-loop turn as one script call per hash slot, so the reads are one round and the writes of answers
 * decided together share one.
 *
 * Answers of the same job are decided in order, each against the state the one before it recorded: the chunk
 * runs in waves, wave k holding the k-th item of every job (a chunk rarely holds two answers of one job: an
 * agent waits for the gate's reply before it answers again; redeliveries and feedback do).
 */
import type { AgentInfo, CompiledBlueprint, Trace } from '../types.js';
import { syncRewriteIndex } from './agent-index.js';
import { feedbackAgainst, feedbackKey, prepareAnswer, type DecidedAnswer, type FinalizationGate, type PreparedAnswer } from './finalization-gate.js';
import type { FinalizationOutcomeEvent, GateJobKey, GateJobState, GateOutcome } from './types.js';

export type GateChunkItem =
  | { hook: 'final_answer'; trace: Trace; agent: AgentInfo; blueprint: CompiledBlueprint; nowMs: number; eventId: string; trustDebt?: number }
  | { hook: 'user_feedback'; trace: Trace; agent: AgentInfo; nowMs: number }
  /** Failed before the gate (e.g. the agent's trust debt could not be read): undone, and so are its job's later items. */
  | { hook: 'failed'; trace: Trace; agent: AgentInfo; error: unknown };

/**
 * Per item: its answer, its feedback event (null: no ended job), or `undone` — not decided here (its own failure,
 * or an earlier item of its job failed, so deciding it would skip that one); the caller processes undone items one
 * by one, in order, after the chunk (the stage: process()). An undone item recorded nothing that it needs.
 */
export type GateChunkResult = { outcome: GateOutcome } | { feedback: FinalizationOutcomeEvent | null } | { undone: true; error?: unknown };

export interface DecideChunkOptions<T = GateChunkResult> {
  /**
   * Turns each result into what the caller keeps (the stage: its output records), as soon as the result is known:
   * the expanded answers then do not all stay alive until the chunk ends (fewer objects surviving into the old
   * generation). Default: the result itself.
   */
  map?: (r: GateChunkResult, index: number) => T;
  /**
   * Answers decided at once; default the judge's in-flight bound (llm.max_in_flight): more would only queue for
   * a judge slot (a wait that counts against the judge's deadline) while holding their prompts in memory.
   */
  concurrency?: number;
}

const jobText = (k: GateJobKey) => `${k.tenant}\u0000${k.agentId}\u0000${k.jobId}`;

export async function decideChunk<T = GateChunkResult>(gate: FinalizationGate, items: readonly GateChunkItem[], o: DecideChunkOptions<T> = {}): Promise<T[]> {
  const store = gate.jobStore;
  const results: T[] = new Array(items.length);
  const map = o.map ?? ((r: GateChunkResult) => r as T);
  const put = (i: number, r: GateChunkResult) => void (results[i] = map(r, i));
  const keys: GateJobKey[] = new Array(items.length);
  const prepared: (PreparedAnswer | undefined)[] = new Array(items.length);
  const jobs = new Map<string, number[]>();
  items.forEach((it, i) => {
    try {
      if (it.hook === 'failed') keys[i] = { tenant: it.agent.tenant, agentId: it.agent.id, jobId: typeof it.trace.job_id === 'string' ? it.trace.job_id : '' };
      else if (it.hook === 'user_feedback') keys[i] = feedbackKey(it.trace, it.agent);
      else keys[i] = (prepared[i] = prepareAnswer(it.trace, it.agent)).key;
    } catch (error) {
      // Malformed (dead-lettered one by one): it touches no state, so its job's other items go on.
      put(i, { undone: true, error });
      return;
    }
    const k = jobText(keys[i]!);
    const list = jobs.get(k);
    if (list) list.push(i);
    else jobs.set(k, [i]);
  });
  const undoFrom = (list: number[], pos: number, error: unknown) => {
    put(list[pos]!, { undone: true, error });
    for (let p = pos + 1; p < list.length; p++) put(list[p]!, { undone: true });
  };

  let wave = [...jobs.values()].map((list) => ({ list, pos: 0 }));
  while (wave.length > 0) {
    const idx = wave.map((j) => j.list[j.pos]!);
    const failed = new Set<number>();
    const fail = (w: number, e: unknown) => {
      failed.add(w);
      undoFrom(wave[w]!.list, wave[w]!.pos, e);
    };
    // One read round: every get issued in this turn.
    const reads = await Promise.allSettled(idx.map((i) => (items[i]!.hook === 'failed' ? Promise.reject((items[i] as { error: unknown }).error) : store.get(keys[i]!, (items[i] as { nowMs: number }).nowMs))));
    const states: (GateJobState | undefined)[] = reads.map((r, w) => (r.status === 'fulfilled' ? r.value : (fail(w, r.reason), undefined)));

    // Each answer is recorded as soon as it is decided, not after the wave's slowest judge call: its reply can
    // then leave at once (the stage sends it from `map`). The job store still sends the writes issued in one
    // event-loop turn as one round (answers decided together — rules, tier 1, a burst of judge answers — share
    // it). Not awaited by the pool's worker, so a judge slot never waits on a write.
    const nowOf = (w: number) => (items[idx[w]!] as { nowMs: number }).nowMs;
    const writes: Promise<void>[] = [];
    const record = async (w: number, d: DecidedAnswer): Promise<void> => {
      let saved: GateJobState;
      try {
        saved = await store.update(d.key, nowOf(w), (prev) => gate.record(prev, d, nowOf(w)));
        // The agent's index of rewrite-only jobs, before the answer goes out (D45; a write only around a rewrite).
        await syncRewriteIndex(store, d.key, nowOf(w), states[w], saved);
      } catch (e) {
        fail(w, e);
        return;
      }
      put(idx[w]!, { outcome: gate.settle(saved, d) });
    };
    await pool(idx.length, o.concurrency ?? gate.judgeInFlight, async (w) => {
      if (failed.has(w)) return;
      const i = idx[w]!;
      const it = items[i]!;
      try {
        if (it.hook === 'user_feedback') put(i, { feedback: feedbackAgainst(states[w], it.trace) });
        else if (it.hook === 'final_answer') {
          const d = await gate.decideAgainst(states[w], prepared[i]!, it.trace, it.agent, it.blueprint, it.nowMs, it.eventId, { trustDebt: it.trustDebt });
          if ('again' in d) {
            // As finalize(): a redelivered rewrite writes its index entry again (D45).
            await syncRewriteIndex(store, keys[i]!, it.nowMs, undefined, states[w]);
            put(i, { outcome: d.again });
          } else {
            const written = record(w, d);
            // Awaited after the pool; until then a throw of `map` must not count as an unhandled rejection.
            written.catch(() => undefined);
            writes.push(written);
          }
        }
      } catch (e) {
        fail(w, e);
      }
    });
    await Promise.all(writes);
    wave = wave.filter((j, w) => !failed.has(w) && ++j.pos < j.list.length);
  }
  return results;
}

/** Runs task(0..n-1) with at most `limit` running at once. */
async function pool(n: number, limit: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), n) }, worker));
}
