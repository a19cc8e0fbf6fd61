/**
 * Runs a blueprint's metrics for one trace (StewardEngine.score, tier 2): each matching metric through its scorer,
 * within its time budget (MetricBudget: time queued for a shared LLM slot does not count), as a MetricOutcome —
 * `ok`, `skipped` (a scorer that cannot run here, warned once) or `unavailable` (it failed or ran out of time).
 */
import { StewardError } from '../errors.js';
import { isSkipped, type ScorerContext, type ScorerRegistry, type SourceRegistry } from './scorers/index.js';
import type { AgentInfo, CompiledBlueprint, CompiledMetric, LlmClient, MetricOutcome, Trace } from './types.js';
import type { DecisionRecord } from './records.js';
import { MetricBudget } from './metric-budget.js';

/** Read at each run (the engine's options object). */
export interface MetricRunnerOptions {
  llm?: LlmClient;
  sourceRegistry?: SourceRegistry;
  metricTimeoutMs?: number;
  onWarning?: (message: string) => void;
}

export class MetricRunner {
  private readonly warned = new Set<string>();

  constructor(
    private readonly scorers: ScorerRegistry,
    private readonly o: MetricRunnerOptions,
  ) {}

  /**
   * Every metric whose `when` matches is evaluated: `when` is applicability (§6.1), never a sampling or
   * cost filter, and there is no sampling. `fresh` (full scoring, §10.6) forbids scorers from answering
   * with a cached or shared result (the llm-judge prompt cache), so each trace gets its own judgement.
   */
  async run(trace: Trace, bp: CompiledBlueprint, agent: AgentInfo, decision: DecisionRecord, nowMs: number, fresh: boolean): Promise<MetricOutcome[]> {
    const matched = bp.metrics.filter((m) => safeWhen(m, trace));
    return Promise.all(matched.map((m) => this.runMetric(trace, m, bp, agent, decision, nowMs, fresh)));
  }

  private async runMetric(
    trace: Trace,
    m: CompiledMetric,
    bp: CompiledBlueprint,
    agent: AgentInfo,
    decision: DecisionRecord,
    nowMs: number,
    fresh: boolean,
  ): Promise<MetricOutcome> {
    const base = { name: m.name, weight: m.weight, scorer: m.scorer };
    const ac = new AbortController();
    const limit = this.o.metricTimeoutMs ?? 30_000;
    let budget: MetricBudget | undefined;
    try {
      const scorer = this.scorers.resolve(m.scorer, m.parameters);
      const ctx: ScorerContext = {
        blueprint: bp,
        agent,
        metric: m,
        decision,
        nowMs,
        llm: this.o.llm,
        sourceRegistry: this.o.sourceRegistry,
        registry: this.scorers,
        signal: ac.signal,
        fresh,
        queued: (wait) => {
          budget?.pause();
          return wait.finally(() => budget?.resume());
        },
      };
      const timeout = new Promise<never>((_, reject) => {
        budget = new MetricBudget(limit, () => {
          ac.abort();
          reject(new StewardError('STEWARD_SCORER_UNAVAILABLE', `metric ${m.name}: over its ${limit} ms budget`, { retryable: true }));
        });
      });
      const r = await Promise.race([scorer.evaluate(trace, m.parameters, ctx), timeout]);
      return { ...base, scorer: scorer.scorerType, score: round3(r.score), confidence: round3(r.confidence), status: 'ok', explanation: r.explanation };
    } catch (e) {
      if (isSkipped(e)) {
        this.warnOnce((e as Error).message);
        return { ...base, score: null, confidence: 0, status: 'skipped', explanation: (e as Error).message };
      }
      const msg = e instanceof StewardError ? `${e.code}: ${e.message}` : String((e as Error)?.message ?? e);
      return { ...base, score: null, confidence: 0, status: 'unavailable', explanation: msg };
    } finally {
      budget?.clear();
    }
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.o.onWarning?.(message);
  }
}

function safeWhen(m: CompiledMetric, trace: Trace): boolean {
  try {
    return m.when(trace);
  } catch {
    return false;
  }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;
