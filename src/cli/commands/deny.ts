/** `steward deny ID`: the signed counterpart of `steward approve` (src/cli/commands/approve.ts, docs/approvals.md). */
import { answer, USAGE as APPROVE_USAGE } from './approve.js';

export const USAGE = APPROVE_USAGE.replace('usage: steward approve ID  (or: steward deny ID)', 'usage: steward deny ID');

export function run(argv: string[]): Promise<number> {
  return answer('deny', argv);
}
