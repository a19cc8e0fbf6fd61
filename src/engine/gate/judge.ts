/**
 * The final alignment judge call (gate spec §9.6, §9.9; docs/gate.md "Judge"): one prompt over the
 * engine's LlmClient, bounded in flight and in time. The answer must be JSON of the §9.6 schema with the
 * five fields of Prompt Lite (spec-decisions D21); it is retried once when invalid, never when the call
 * timed out. Unknown reason codes are dropped and reported; a `quality_score` outside 0..1 makes the answer
 * invalid (D16: it is not clamped); the judge's own verdict is read but never used (D16: Steward computes the verdict).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { StewardError } from '../../errors.js';
import { jsonAnswerBody } from '../json-fence.js';
import { Semaphore } from '../scorers/concurrency.js';
import type { LlmClient, LlmUsage } from '../types.js';
import { FIX_MODES, VERDICTS, type FixMode, type GateVerdict } from './codes.js';
import type { NextAction } from './types.js';

/** §9.6 with the Lite five required (D21); the other fields are checked one by one and dropped if malformed. */
export const JUDGE_OUTPUT_SCHEMA = {
  type: 'object',
  required: ['quality_score', 'verdict', 'reason_codes', 'fix_mode', 'missing_requirements'],
  properties: {
    // D16: a score outside 0..1 is invalid output, not clamped: a judge answering on another scale (7 of 10)
    // would otherwise pass at any strictness, against its own FAIL.
    quality_score: { type: 'number', minimum: 0, maximum: 1 },
    verdict: { enum: [...VERDICTS] },
    reason_codes: { type: 'array', items: { type: 'string' } },
    fix_mode: { enum: [...FIX_MODES] },
    missing_requirements: { type: 'array', items: { type: 'string' } },
  },
} as const;

let validator: ValidateFunction | undefined;
function validate(): ValidateFunction {
  validator ??= new Ajv2020({ allErrors: true, strict: true }).compile(JUDGE_OUTPUT_SCHEMA);
  return validator;
}

export interface JudgeAnswer {
  quality_score: number;
  /** The judge's own verdict: reported, never used (D16). */
  judge_verdict: GateVerdict;
  reason_codes: string[];
  dropped_reason_codes: string[];
  fix_mode: FixMode;
  missing_requirements: string[];
  evidence_issues: string[];
  next_actions: NextAction[];
}

const MAX_ITEMS = 20;
const MAX_ITEM_CHARS = 500;
const cap = (xs: string[]): string[] => xs.slice(0, MAX_ITEMS).map((s) => (s.length > MAX_ITEM_CHARS ? `${s.slice(0, MAX_ITEM_CHARS - 1)}…` : s));

/** Parses and validates one answer. Throws STEWARD_GATE_JUDGE with what was wrong. */
export function parseJudgeOutput(text: string, allowedCodes: ReadonlySet<string>): JudgeAnswer {
  let obj: unknown;
  try {
    obj = JSON.parse(jsonAnswerBody(text));
  } catch {
    throw new StewardError('STEWARD_GATE_JUDGE', `judge answer is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
  }
  const v = validate();
  if (!v(obj)) {
    const e = v.errors?.[0];
    const what = e?.keyword === 'required' ? `missing '${(e.params as { missingProperty: string }).missingProperty}'` : `${e?.instancePath || '/'} ${e?.message ?? 'invalid'}`;
    throw new StewardError('STEWARD_GATE_JUDGE', `judge answer does not match the §9.6 schema: ${what}`);
  }
  const o = obj as Record<string, unknown>;
  const codes = [...new Set(o.reason_codes as string[])];
  const strList = (x: unknown): string[] => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
  const next = Array.isArray(o.next_actions)
    ? o.next_actions.flatMap((a): NextAction[] => {
        const x = a as Record<string, unknown>;
        if (typeof a !== 'object' || a === null || !['rewrite', 'tool', 'question'].includes(x.type as string) || typeof x.instruction !== 'string') return [];
        return [{ type: x.type as NextAction['type'], instruction: x.instruction.slice(0, MAX_ITEM_CHARS), ...(['high', 'med', 'low'].includes(x.priority as string) && { priority: x.priority as NextAction['priority'] }) }];
      })
    : [];
  return {
    quality_score: o.quality_score as number,
    judge_verdict: o.verdict as GateVerdict,
    reason_codes: codes.filter((c) => allowedCodes.has(c)),
    dropped_reason_codes: codes.filter((c) => !allowedCodes.has(c)),
    fix_mode: o.fix_mode as FixMode,
    missing_requirements: cap(strList(o.missing_requirements)),
    evidence_issues: cap(strList(o.evidence_issues)),
    next_actions: next.slice(0, MAX_ITEMS),
  };
}

export interface JudgeRequest {
  system: string;
  prompt: string;
  model?: string;
  timeoutMs: number;
  allowedCodes: ReadonlySet<string>;
  signal?: AbortSignal;
}

/**
 * `usage`: the tokens of every call that reported them (a retried invalid answer included), summed; null when
 * none did (no usage on the wire, or every call failed or timed out before an answer).
 */
export type JudgeResult =
  | { ok: true; answer: JudgeAnswer; model: string | null; calls: number; latencyMs: number; usage: LlmUsage | null }
  | { ok: false; error: { code: string; message: string }; model: string | null; calls: number; latencyMs: number; usage: LlmUsage | null };

/** One judge per gate instance: its semaphore bounds the calls in flight across all jobs. */
export class GateJudge {
  readonly semaphore: Semaphore;
  calls = 0;
  constructor(
    private readonly llm: LlmClient,
    maxInFlight: number,
  ) {
    this.semaphore = new Semaphore(Math.max(1, maxInFlight));
    // Compiled now, not by the first final answer (a few ms of ajv code generation on an agent's wait).
    validate();
  }

  async judge(r: JudgeRequest): Promise<JudgeResult> {
    const t0 = performance.now();
    let last: { code: string; message: string } = { code: 'STEWARD_GATE_JUDGE', message: 'no answer' };
    let model: string | null = r.model ?? null;
    let calls = 0;
    let usage: LlmUsage | null = null;
    // Two calls at most: the first, and one retry when it failed for any reason other than its time running out.
    for (let i = 0; i < 2; i++) {
      calls++;
      const res = await this.once(r);
      if (res.model) model = res.model;
      if ('text' in res) {
        if (res.usage) usage = addUsage(usage, res.usage);
        try {
          return { ok: true, answer: parseJudgeOutput(res.text, r.allowedCodes), model, calls, latencyMs: performance.now() - t0, usage };
        } catch (e) {
          last = { code: (e as StewardError).code ?? 'STEWARD_GATE_JUDGE', message: (e as Error).message };
        }
      } else {
        last = res.error;
        if (res.timedOut || r.signal?.aborted) break;
      }
    }
    return { ok: false, error: last, model, calls, latencyMs: performance.now() - t0, usage };
  }

  /** One call within `timeoutMs`, waiting for a slot included (a full queue must not hold an agent forever). */
  private async once(r: JudgeRequest): Promise<OnceResult> {
    // The common case, a free slot and no caller's signal, needs no AbortController of its own (creating one
    // and listening on it was ~4% of a warm answer's main-thread time with an in-process judge).
    if (!r.signal && this.semaphore.tryAcquire()) return this.onceHolding(r);
    const ac = new AbortController();
    const onOuter = () => ac.abort(r.signal?.reason);
    r.signal?.addEventListener('abort', onOuter, { once: true });
    const timer = setTimeout(() => ac.abort(new StewardError('STEWARD_LLM_TIMEOUT', `judge did not answer within ${r.timeoutMs} ms`, { retryable: true })), r.timeoutMs);
    const aborted = new Promise<never>((_, reject) => ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }));
    aborted.catch(() => undefined);
    // A free slot is taken at once; only a full semaphore needs the race against the deadline.
    let holds = this.semaphore.tryAcquire();
    const slot = holds
      ? undefined
      : this.semaphore.acquire().then(() => {
          // Acquired after we gave up waiting: hand the slot back at once.
          if (ac.signal.aborted) this.semaphore.release();
          else holds = true;
        });
    try {
      if (slot) await Promise.race([slot, aborted]);
      this.calls++;
      const res = await Promise.race([this.llm.complete({ model: r.model, system: r.system, prompt: r.prompt, temperature: 0, maxTokens: 1024, timeoutMs: r.timeoutMs }, ac.signal), aborted]);
      return { text: res.text, ...(res.model && { model: res.model }), ...(res.usage && { usage: res.usage }) };
    } catch (e) {
      const timedOut = ac.signal.aborted && !r.signal?.aborted;
      const err = e as StewardError;
      return { error: { code: timedOut ? 'STEWARD_LLM_TIMEOUT' : (err?.code ?? 'STEWARD_GATE_JUDGE'), message: timedOut ? `judge did not answer within ${r.timeoutMs} ms` : String(err?.message ?? e) }, timedOut };
    } finally {
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onOuter);
      if (holds) this.semaphore.release();
    }
  }

  /**
   * A call holding its slot already, with no caller's signal to pass on. The deadline is a timer raced against
   * the call, as in once(); the exchange itself is ended by the client's own timeout (the same `timeoutMs`, in
   * the request: the HTTP clients end it through postJson), not by an abort from here.
   */
  private async onceHolding(r: JudgeRequest): Promise<OnceResult> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(JUDGE_DEADLINE), r.timeoutMs);
    });
    try {
      this.calls++;
      const res = await Promise.race([this.llm.complete({ model: r.model, system: r.system, prompt: r.prompt, temperature: 0, maxTokens: 1024, timeoutMs: r.timeoutMs }), deadline]);
      return { text: res.text, ...(res.model && { model: res.model }), ...(res.usage && { usage: res.usage }) };
    } catch (e) {
      if (e === JUDGE_DEADLINE) return { error: { code: 'STEWARD_LLM_TIMEOUT', message: `judge did not answer within ${r.timeoutMs} ms` }, timedOut: true };
      const err = e as StewardError;
      return { error: { code: err?.code ?? 'STEWARD_GATE_JUDGE', message: String(err?.message ?? e) }, timedOut: false };
    } finally {
      clearTimeout(timer);
      this.semaphore.release();
    }
  }
}

function addUsage(a: LlmUsage | null, b: LlmUsage): LlmUsage {
  return a ? { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens } : b;
}

type OnceResult = { text: string; model?: string; usage?: LlmUsage } | { error: { code: string; message: string }; timedOut: boolean; model?: string };
/** What onceHolding's deadline rejects with (compared by identity; never leaves this file). */
const JUDGE_DEADLINE = Symbol('judge deadline');
