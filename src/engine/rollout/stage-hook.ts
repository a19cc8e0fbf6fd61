/**
 * What the tripwire stage does after a decision for issue #26 (docs/rollout.md): count it for its rollout arm
 * (RolloutRecorder: local, synchronous) and, with a shadow set, evaluate the candidate and emit the diff on
 * acgp.shadow-diffs. Never throws and never changes the decision.
 */
import { splitId } from '../blueprint/versions.js';
import type { DecisionRecord } from '../records.js';
import type { Trace } from '../types.js';
import type { RolloutArm } from './arm.js';
import type { ShadowEvaluator } from './shadow.js';
import type { ShadowDiff } from './diff.js';
import { countsOf, type ArmCounts } from './triggers.js';

export interface RolloutRecorder {
  record(name: string, arm: RolloutArm, atMs: number, counts: ArmCounts): void;
}

export interface HookOutput {
  topic: string;
  message: { key: string; value: string };
}

export interface RolloutStageHookOptions {
  recorder?: RolloutRecorder;
  shadow?: ShadowEvaluator;
  /** acgp.shadow-diffs. */
  shadowTopic: string;
  /** Only changed decisions are emitted when false (default: every diff, so the report can count traces). */
  emitUnchanged?: boolean;
  /** limits.max_message_bytes: a larger diff is dropped (and counted) rather than failing the trace. */
  maxMessageBytes?: number;
  onDropped?: (why: string) => void;
  /** Every diff the shadow produced (metrics). */
  onDiff?: (d: ShadowDiff) => void;
}

export class RolloutStageHook {
  private queued: HookOutput[] = [];

  constructor(private readonly o: RolloutStageHookOptions) {}

  /**
   * Records to send with the next decision's outputs (a rollback's event and ledger entry): they leave in the
   * stage's own send, transactional where the stage is, without a producer of their own.
   */
  enqueue(outputs: HookOutput[]): void {
    this.queued.push(...outputs);
  }

  async afterDecision(trace: Trace, record: DecisionRecord, eventTimeMs: number): Promise<HookOutput[]> {
    if (record.rolloutArm && this.o.recorder) this.o.recorder.record(splitId(record.blueprint).name, record.rolloutArm, eventTimeMs, countsOf(record));
    const out = this.queued.length > 0 ? this.queued.splice(0) : [];
    if (!this.o.shadow) return out;
    const diff = await this.o.shadow.evaluate(trace, record, eventTimeMs);
    if (diff) this.o.onDiff?.(diff);
    if (!diff || (!diff.changed && this.o.emitUnchanged === false)) return out;
    const value = JSON.stringify(diff);
    if (this.o.maxMessageBytes !== undefined && value.length + trace.agent_id.length > this.o.maxMessageBytes) {
      this.o.onDropped?.('shadow diff over limits.max_message_bytes');
      return out;
    }
    out.push({ topic: this.o.shadowTopic, message: { key: trace.agent_id, value } });
    return out;
  }
}
