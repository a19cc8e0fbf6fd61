/**
 * One error class for the whole project. Callers branch on `code` (stable strings) and `retryable`,
 * never on the class name, so retry logic survives refactors (the kafkajs/platformatic convention).
 */
export type StewardErrorCode =
  | 'STEWARD_BLUEPRINT_SYNTAX'
  | 'STEWARD_BLUEPRINT_SCHEMA'
  | 'STEWARD_BLUEPRINT_UNKNOWN_KEY'
  | 'STEWARD_BLUEPRINT_SEMVER'
  | 'STEWARD_BLUEPRINT_MISSING_PARENT'
  | 'STEWARD_BLUEPRINT_CYCLE'
  | 'STEWARD_BLUEPRINT_DUPLICATE'
  | 'STEWARD_BLUEPRINT_THRESHOLD_ORDER'
  | 'STEWARD_BLUEPRINT_TIER'
  | 'STEWARD_BLUEPRINT_INVALID'
  // blueprint rollout, compatibility matrix, review queue (docs/rollout.md)
  | 'STEWARD_BLUEPRINT_INCOMPATIBLE'
  | `STEWARD_ROLLOUT_${string}`
  | `STEWARD_REVIEW_QUEUE_${string}`
  | 'STEWARD_DSL_PARSE'
  | 'STEWARD_DSL_LIMIT'
  | 'STEWARD_DSL_UNKNOWN_FUNCTION'
  | 'STEWARD_DSL_ARITY'
  | 'STEWARD_DSL_TYPE'
  | 'STEWARD_DSL_REGEX'
  | 'STEWARD_DSL_EVAL'
  | 'STEWARD_DSL_UNKNOWN_LIST'
  | 'STEWARD_TRACE_JSON'
  | 'STEWARD_TRACE_SCHEMA'
  | 'STEWARD_TRACE_AVRO'
  // an acgp.decisions / acgp.verdicts record in Avro that cannot be read (unknown schema id, not that message's schema)
  | 'STEWARD_OUTPUT_AVRO'
  | 'STEWARD_TRACE_TOO_LARGE'
  | 'STEWARD_TRUST_DEBT_STALE'
  | 'STEWARD_CONFIG'
  | 'STEWARD_STATE_UNAVAILABLE'
  | 'STEWARD_STATE_TIMEOUT'
  // Redis refused a write at maxmemory (noeviction): retried for redis.oom_retry_ms, then dead-lettered (D32)
  | 'STEWARD_STATE_OOM'
  | 'STEWARD_SCORER_UNAVAILABLE'
  | 'STEWARD_LLM_HTTP'
  | 'STEWARD_LLM_TIMEOUT'
  | 'STEWARD_LLM_RESPONSE'
  | 'STEWARD_VERDICT_SIGNATURE'
  | 'STEWARD_LEDGER_CHAIN'
  | 'STEWARD_KAFKA'
  | 'STEWARD_CLICKHOUSE'
  | 'STEWARD_SINK_RECORD'
  | 'STEWARD_EVAL'
  | 'STEWARD_USAGE'
  | 'STEWARD_INTERNAL'
  | 'STEWARD_REMEDIATION'
  | 'STEWARD_AGENT_UNKNOWN'
  | 'STEWARD_AGENT_KEY'
  | 'STEWARD_AGENT_SIGNATURE'
  // ACM run governance and replay-bundle problems (docs/acm.md): one code per kind of problem
  | `STEWARD_ACM_${string}`
  | `STEWARD_REPLAY_${string}`
  // finalization gate (docs/gate.md)
  | 'STEWARD_GATE_CONFIG'
  | 'STEWARD_GATE_NOT_MECHANICAL'
  | 'STEWARD_GATE_WORKFLOW_LIMIT'
  | 'STEWARD_GATE_UNKNOWN_TOOL'
  | 'STEWARD_GATE_HOOK_UNCHECKED'
  | 'STEWARD_GATE_INPUT'
  | 'STEWARD_GATE_SCAN_LIMIT'
  | 'STEWARD_GATE_JUDGE'
  // plain-language rules, MCP tool schemas, approvals (docs/rules.md, docs/approvals.md)
  | `STEWARD_RULES_${string}`
  | `STEWARD_MCP_${string}`
  | `STEWARD_APPROVAL_${string}`;

/**
 * Where a policy author's mistake sits: file position, JSON path, and offset inside a DSL expression.
 * `line`/`col` is where the offending text starts; `endLine`/`endCol`, when the loader knows the node's
 * range, is where it ends, so an editor can underline it: 1-based and exclusive (the position just after
 * the last character, like SARIF's endColumn), trailing blanks and comments left out. `formatProblem`
 * (`FILE:LINE:COL: CODE: message`) prints the start only.
 */
export interface SourcePosition {
  file?: string;
  line?: number; // 1-based
  col?: number; // 1-based
  endLine?: number; // 1-based, exclusive end together with endCol
  endCol?: number; // 1-based column just after the last character
  path?: string; // JSONPath-like: $.tripwires[2].condition
  offset?: number; // 0-based offset inside a DSL expression
}

export interface StewardErrorOptions {
  retryable?: boolean;
  position?: SourcePosition;
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class StewardError extends Error {
  readonly code: StewardErrorCode;
  readonly retryable: boolean;
  readonly position?: SourcePosition;
  readonly details?: Record<string, unknown>;

  constructor(code: StewardErrorCode, message: string, opts: StewardErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'StewardError';
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.position = opts.position;
    this.details = opts.details;
  }

  /** `FILE:LINE:COL: CODE: message` — the format of `steward validate` (contracts C4). */
  format(): string {
    return formatProblem(this.code, this.message, this.position);
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, retryable: this.retryable, position: this.position };
  }
}

export function formatProblem(code: string, message: string, pos?: SourcePosition): string {
  const where = pos?.file ? `${pos.file}:${pos.line ?? 1}:${pos.col ?? 1}: ` : '';
  const path = pos?.path ? ` (at ${pos.path}${pos.offset !== undefined ? `, offset ${pos.offset}` : ''})` : '';
  return `${where}${code}: ${message}${path}`;
}

export function isStewardError(e: unknown): e is StewardError {
  return e instanceof StewardError;
}

export function isRetryable(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { retryable?: unknown }).retryable === true;
}

/** Sort by file, line, col, then code, and drop exact duplicates: authors see every problem once, in order. */
export function sortProblems<T extends { code: string; message: string; position?: SourcePosition }>(errs: T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const e of errs) {
    const k = `${e.position?.file}|${e.position?.line}|${e.position?.col}|${e.code}|${e.message}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(e);
    }
  }
  return out.sort(
    (a, b) =>
      (a.position?.file ?? '').localeCompare(b.position?.file ?? '') ||
      (a.position?.line ?? 0) - (b.position?.line ?? 0) ||
      (a.position?.col ?? 0) - (b.position?.col ?? 0) ||
      a.code.localeCompare(b.code),
  );
}

/** Thrown when a load stage collected several problems; `errors` is sorted and deduplicated. */
export class StewardAggregateError extends StewardError {
  readonly errors: StewardError[];
  constructor(code: StewardErrorCode, errors: StewardError[]) {
    const sorted = sortProblems(errors);
    super(code, `${sorted.length} problem(s):\n${sorted.map((e) => e.format()).join('\n')}`);
    this.errors = sorted;
  }
}
