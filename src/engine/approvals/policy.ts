/**
 * `tools[].requires_approval` (gate spec §6; docs/approvals.md): compiled at load like any condition, but
 * read as a trigger — a call whose condition is true needs a human approval — and the matching call's
 * approval request (id, deadline, default action, role) computed per decision.
 */
import { createHash } from 'node:crypto';
import { StewardError } from '../../errors.js';
import { compileConditionAt, type DslOptions } from '../blueprint/conditions.js';
import type { SourceDoc } from '../blueprint/source.js';
import { parseDuration } from '../dsl/index.js';
import type { ApprovalPolicy, EvalContext, Trace } from '../types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Default wait for an answer (docs/approvals.md). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 3_600_000;

function durationMs(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v > 0 ? v : undefined;
  if (typeof v === 'string') return parseDuration(v);
  return undefined;
}

const action = (v: unknown): 'approve' | 'deny' | undefined => (v === 'approve' || v === 'deny' ? v : undefined);

export function compileOwnApprovals(doc: SourceDoc, v: Obj, dsl: DslOptions, errors: StewardError[]): ApprovalPolicy[] {
  const out: ApprovalPolicy[] = [];
  (Array.isArray(v.tools) ? v.tools : []).forEach((t, i) => {
    if (!isObj(t) || typeof t.id !== 'string' || t.requires_approval === undefined) return;
    const condition = compileConditionAt(doc, ['tools', i, 'requires_approval'], t.requires_approval, dsl, errors);
    if (!condition) return;
    if (condition.async) {
      errors.push(new StewardError('STEWARD_APPROVAL_CONFIG', `tool '${t.id}': requires_approval must be decided from the call alone (uses ${[...condition.functions].join(', ')})`, { position: doc.pos(['tools', i, 'requires_approval']) }));
      return;
    }
    const a = isObj(t.approval) ? t.approval : {};
    const timeoutMs = a.timeout === undefined ? DEFAULT_APPROVAL_TIMEOUT_MS : durationMs(a.timeout);
    if (timeoutMs === undefined) {
      errors.push(new StewardError('STEWARD_APPROVAL_CONFIG', `tool '${t.id}': approval.timeout must be a duration ("30m", "1h") or positive milliseconds`, { position: doc.pos(['tools', i, 'approval', 'timeout']) }));
      return;
    }
    const skills: NonNullable<ApprovalPolicy['skills']> = {};
    if (isObj(a.skills))
      for (const [skill, o] of Object.entries(a.skills)) {
        if (!isObj(o)) continue;
        const ms = o.timeout === undefined ? undefined : durationMs(o.timeout);
        if (o.timeout !== undefined && ms === undefined) errors.push(new StewardError('STEWARD_APPROVAL_CONFIG', `tool '${t.id}', skill '${skill}': timeout must be a duration`, { position: doc.pos(['tools', i, 'approval', 'skills', skill, 'timeout']) }));
        skills[skill] = { ...(ms !== undefined && { timeoutMs: ms }), ...(action(o.default_action) && { defaultAction: action(o.default_action) }), ...(typeof o.role === 'string' && { role: o.role }) };
      }
    out.push({
      tool: t.id,
      condition,
      timeoutMs,
      // Fail closed: an unanswered request is denied unless the author chose otherwise.
      defaultAction: action(a.default_action) ?? 'deny',
      ...(typeof a.role === 'string' && { role: a.role }),
      ...(Object.keys(skills).length > 0 && { skills }),
      position: doc.pos(['tools', i]),
    });
  });
  return out;
}

/** A call's approval request, before it is stored (docs/approvals.md "Requests"). */
export interface ApprovalRequest {
  approval_id: string;
  tool: string;
  agent_id: string;
  tenant: string;
  agent_tier: string;
  trace_id: string;
  event_id: string;
  job_id: string | null;
  skill_id: string | null;
  role: string | null;
  default_action: 'approve' | 'deny';
  requested_ms: number;
  deadline_ms: number;
  /** The tool arguments the approver decides on. */
  args: unknown;
}

/** Derived from the event id, so a redelivered call names the same approval (one request, one outcome). */
export function approvalIdOf(eventId: string): string {
  return 'ap-' + createHash('sha256').update(eventId, 'utf8').digest('hex').slice(0, 24);
}

type Settings = { timeoutMs: number; defaultAction: 'approve' | 'deny'; role: string | undefined };

/**
 * The policy's settings for an agent: the strictest over the agent's registered skills (each its override over
 * the base, a skill without one the base), never the skill the trace claims — an agent registered for two skills
 * would otherwise pick the laxer override call by call (spec-decisions D35). Strictest: deny if any says deny;
 * the longest timeout (a human gets the most time); the one role they agree on, else the base policy's role.
 */
function skillSettings(p: ApprovalPolicy, registered: readonly string[] | undefined): Settings {
  const base: Settings = { timeoutMs: p.timeoutMs, defaultAction: p.defaultAction, role: p.role };
  // The common case, on every approval: no overrides, or an agent without registered skills.
  if (!p.skills || !registered?.length) return base;
  const all = (registered?.length ? registered : [undefined]).map((s): Settings => {
    const o = s === undefined ? undefined : p.skills?.[s];
    return o ? { timeoutMs: o.timeoutMs ?? base.timeoutMs, defaultAction: o.defaultAction ?? base.defaultAction, role: o.role ?? base.role } : base;
  });
  const roles = new Set(all.map((x) => x.role));
  return {
    timeoutMs: Math.max(...all.map((x) => x.timeoutMs)),
    defaultAction: all.some((x) => x.defaultAction === 'deny') ? 'deny' : 'approve',
    role: roles.size === 1 ? all[0]!.role : base.role,
  };
}

/** The first policy of `policies` (parent first) that matches the call, as a request; undefined: no approval needed. */
export function approvalFor(policies: readonly ApprovalPolicy[] | undefined, ctx: EvalContext, eventId: string): ApprovalRequest | undefined {
  const trace: Trace = ctx.trace;
  if (!policies?.length || trace.hook !== 'tool_call' || typeof trace.tool !== 'string') return undefined;
  for (const p of policies) {
    if (p.tool !== trace.tool) continue;
    let hit: boolean;
    try {
      hit = p.condition.evaluate(ctx) === true;
    } catch {
      hit = true; // a trigger that cannot be evaluated asks a human rather than letting the call through
    }
    if (!hit) continue;
    const skill = typeof trace.skill_id === 'string' && ctx.agent.skills?.includes(trace.skill_id) ? trace.skill_id : null;
    const { timeoutMs, defaultAction, role } = skillSettings(p, ctx.agent.skills);
    return {
      approval_id: approvalIdOf(eventId),
      tool: trace.tool,
      agent_id: ctx.agent.id,
      tenant: ctx.agent.tenant,
      agent_tier: ctx.agent.tier,
      trace_id: String(trace.trace_id ?? ''),
      event_id: eventId,
      job_id: typeof trace.job_id === 'string' ? trace.job_id : null,
      skill_id: skill,
      role: role ?? null,
      default_action: defaultAction,
      requested_ms: ctx.nowMs,
      deadline_ms: ctx.nowMs + timeoutMs,
      args: trace.args ?? null,
    };
  }
  return undefined;
}

/**
 * The request counted from `brokerMs` (the broker's append time of the trace record) instead of the event time
 * the agent stamped (clamped only to ±limits.max_event_time_skew): an agent writing its trace minutes in the past
 * must not shorten its own approval timeout (spec-decisions D35). The timeout itself is kept.
 */
export function anchoredApproval(req: ApprovalRequest, brokerMs: number): ApprovalRequest {
  if (!Number.isFinite(brokerMs) || brokerMs === req.requested_ms) return req;
  return { ...req, requested_ms: brokerMs, deadline_ms: brokerMs + (req.deadline_ms - req.requested_ms) };
}
