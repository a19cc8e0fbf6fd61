/**
 * Scorer protocol (ACGP-1004 §7.4) and the context the engine hands to every scorer. Scorers never
 * invent a score: when they cannot answer they throw a StewardError (STEWARD_SCORER_UNAVAILABLE or
 * an LLM code); `details.skipped: true` means "not configured at all" (spec-decisions D13).
 */
import { StewardError } from '../../errors.js';
import type {
  AgentInfo,
  CompiledBlueprint,
  CompiledMetric,
  LlmClient,
  ScorerResult,
  Trace,
  TripwireStageResult,
} from '../types.js';

/** A source of the Certified Source Registry (ACGP-1004 §8). */
export interface CertifiedSource {
  id: string;
  category: string;
  /** 0..1 */
  trust: number;
  /** ISO-8601 time of the last review of the source. */
  updatedAt?: string;
  /** Older than this (relative to the trace time) = stale, not counted as certified. */
  maxAgeDays?: number;
}

export interface SourceRegistry {
  get(id: string): CertifiedSource | undefined;
  size(): number;
}

export interface ScorerContext {
  blueprint: CompiledBlueprint;
  agent: AgentInfo;
  /** The metric being scored (name picks the llm-judge prompt when the template is not an id). */
  metric?: CompiledMetric;
  /** Result of the tripwire stage, which the rule-based scorer reads. */
  decision?: Pick<TripwireStageResult, 'tripwires' | 'rules'>;
  nowMs: number;
  llm?: LlmClient;
  sourceRegistry?: SourceRegistry;
  registry: ScorerRegistry;
  signal?: AbortSignal;
  /**
   * Wraps a wait that must not count against the metric's time budget: a queue for a shared resource (an LLM
   * slot). Without it, a burst of traces spends the budget queueing and a healthy provider yields fallbacks.
   */
  queued?: <T>(wait: Promise<T>) => Promise<T>;
  /**
   * Full scoring (trust debt ≥ elevated_monitoring, ACGP-1004 §10.6): answer from a fresh evaluation,
   * never from a cached or shared result (llm-judge prompt cache / identical in-flight call).
   */
  fresh?: boolean;
}

export interface Scorer {
  readonly scorerType: string;
  readonly evalTier: 0 | 1 | 2 | 3;
  readonly latencyBudgetMs: number;
  evaluate(trace: Trace, parameters: Record<string, unknown>, ctx: ScorerContext): Promise<ScorerResult>;
}

/** Maps metric check types (§6.3) onto scorer types; `tool` goes through the tool table. */
const CHECK_TYPE_ALIASES: Record<string, string> = {
  llm: 'llm-judge',
  regex: 'pattern-match',
  pattern: 'pattern-match',
  rule: 'rule-based',
  rules: 'rule-based',
};

export class ScorerRegistry {
  private readonly scorers = new Map<string, Scorer>();
  private readonly tools = new Map<string, string>();

  register(scorer: Scorer): this {
    this.scorers.set(scorer.scorerType, scorer);
    return this;
  }

  /** `check: {type: tool, args: {name}}` resolves `name` to this scorer type. */
  registerTool(toolName: string, scorerType: string): this {
    this.tools.set(toolName, scorerType);
    return this;
  }

  has(type: string): boolean {
    return this.scorers.has(type);
  }

  /** Resolves a scorer type or a check type (+ parameters, for `tool`) to a scorer. */
  resolve(type: string, parameters: Record<string, unknown> = {}): Scorer {
    let t = CHECK_TYPE_ALIASES[type] ?? type;
    if (t === 'tool') {
      const name = typeof parameters.name === 'string' ? parameters.name : '';
      const mapped = this.tools.get(name) ?? (this.scorers.has(name) ? name : undefined);
      if (!mapped) throw new StewardError('STEWARD_SCORER_UNAVAILABLE', `no tool scorer registered as '${name}'`);
      t = mapped;
    }
    const s = this.scorers.get(t);
    if (!s) throw new StewardError('STEWARD_SCORER_UNAVAILABLE', `unknown scorer type '${type}'`);
    return s;
  }
}

/**
 * A metric this deployment cannot score (no LLM, no source registry): an expected outcome on every trace, not a
 * fault, so no stack trace is captured (it cost ~8% of the scorer stage's CPU in bench/pipeline's scorer profile).
 */
export function skipped(message: string): StewardError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new StewardError('STEWARD_SCORER_UNAVAILABLE', message, { details: { skipped: true } });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export function isSkipped(e: unknown): boolean {
  return e instanceof StewardError && e.details?.skipped === true;
}

export function unavailable(message: string, cause?: unknown): StewardError {
  return new StewardError('STEWARD_SCORER_UNAVAILABLE', message, { cause, retryable: true });
}

export function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

export function num(v: unknown, dflt: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

export function strList(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
