/**
 * Problems of ACM run governance (docs/acm.md). Input problems (a packet, plan or sheet that is not
 * valid) carry a JSON path and, where the input came from a file, its FILE:LINE:COL; run violations
 * (a forbidden branch, a task no allowed edge reaches) carry the intervention they are answered with.
 */
import type { SourcePosition } from '../../errors.js';
import type { DslProblem } from '../dsl/index.js';

export type AcmCode =
  // input (the event is rejected: DLQ in the stream, an error line offline)
  | 'STEWARD_ACM_SCHEMA'
  | 'STEWARD_ACM_SNAPSHOT'
  | 'STEWARD_ACM_CONTEXT_UNKNOWN'
  | 'STEWARD_ACM_PLAN_CYCLE'
  | 'STEWARD_ACM_EDGE_TASK'
  | 'STEWARD_ACM_JOIN_PREDECESSOR'
  | 'STEWARD_ACM_DUPLICATE_ID'
  | 'STEWARD_ACM_SELECTION'
  | 'STEWARD_ACM_GUARD_UNRECORDED'
  | 'STEWARD_ACM_NO_RUN'
  | 'STEWARD_ACM_SHEET'
  | DslProblem['code']
  // run violations (answered with an intervention, recorded)
  | 'STEWARD_ACM_NO_PLAN'
  | 'STEWARD_ACM_OUTSIDE_PLAN'
  | 'STEWARD_ACM_FORBIDDEN_BRANCH'
  | 'STEWARD_ACM_UNREACHED_TASK'
  | 'STEWARD_ACM_JOIN_WAITING'
  | 'STEWARD_ACM_APPROVAL_MISSING'
  | 'STEWARD_ACM_UNKNOWN_APPROVER'
  | 'STEWARD_ACM_REPLAN_REFUSED'
  | 'STEWARD_ACM_VERIFICATION_FAILED'
  | 'STEWARD_ACM_VERIFICATION_DISAGREES'
  | 'STEWARD_ACM_FOREIGN_AGENT';

export interface AcmProblem {
  code: AcmCode;
  message: string;
  /** JSON path inside the event or sheet (`$.plans[0].edges[2].guard`). */
  path: string;
  /** 0-based offset inside a guard or check expression. */
  offset?: number;
  /** FILE:LINE:COL when the input came from a file. */
  position?: SourcePosition;
}

/** `FILE:LINE:COL: CODE: message` when the position is known, else `PATH[@offset]: CODE: message`. */
export function formatAcmProblem(p: AcmProblem): string {
  const pos = p.position;
  if (pos?.file && pos.line) return `${pos.file}:${pos.line}:${pos.col ?? 1}: ${p.code}: ${p.message} (${p.path})`;
  return `${p.path}${p.offset !== undefined ? `@${p.offset}` : ''}: ${p.code}: ${p.message}`;
}

/** `$` + segments, the same spelling as the blueprint loader's paths. */
export function jsonPath(segs: readonly (string | number)[]): string {
  let s = '$';
  for (const p of segs) s += typeof p === 'number' ? `[${p}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
  return s;
}

/** `/plans/0/edges/2` (ajv instancePath) → `$.plans[0].edges[2]`. */
export function pointerToPath(pointer: string): string {
  if (pointer === '') return '$';
  const segs = pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  return jsonPath(segs);
}
