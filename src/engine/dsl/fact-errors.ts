/**
 * Errors and limits of the protocol-aware facts (issue #28, docs/dsl.md "Facts from the action itself"),
 * apart from facts.ts so the SQL front ends (sql-ast.ts, clickhouse-*.ts) share them without a cycle.
 */
import { StewardError } from '../../errors.js';

/** An unparseable or oversized input: the only error if_unparsed() turns into its default. */
export class FactParseError extends StewardError {
  constructor(message: string) {
    super('STEWARD_DSL_EVAL', `${message}: cannot evaluate`);
  }
}

/** Input beyond the size/nesting limits: cannot evaluate, and if_unparsed() does not recover it (padding must not buy an opt-out). */
export class FactLimitError extends StewardError {
  constructor(message: string) {
    super('STEWARD_DSL_EVAL', `${message}: cannot evaluate`);
  }
}

export const FACT_LIMITS = { sqlChars: 20_000, shellChars: 10_000, urlChars: 4_096, nesting: 64, shellDepth: 4, cacheEntries: 512 } as const;
