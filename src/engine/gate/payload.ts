/**
 * The judge's input (gate spec §9.9) under the §9.10 token rules (docs/gate.md "Judge payload"): the goal
 * cut to 3 sentences, a tool trace summary of at most 5 lines that Steward writes from the job's recorded
 * tool calls — evidence the agent cannot fake — and an agent-sent summary passed on only as the agent's
 * claim (spec-decisions D21).
 */
import type { Trace } from '../types.js';
import type { JudgePayload } from './prompts.js';
import type { GateToolCall } from './types.js';

const MAX_GOAL_CHARS = 600;
const MAX_CLAIM_CHARS = 300;
const MAX_CONSTRAINTS = 10;
const MAX_CONSTRAINT_CHARS = 200;

/** The first three sentences (a sentence ends in . ! or ? followed by white space), at most 600 characters. */
export function goalSentences(goal: string, max = 3): string {
  const parts = goal.trim().replace(/\s+/g, ' ').split(/(?<=[.!?])\s+/);
  const s = parts.slice(0, max).join(' ');
  return s.length > MAX_GOAL_CHARS ? `${s.slice(0, MAX_GOAL_CHARS - 1)}…` : s;
}

const FILE_KEYS = new Set(['path', 'file', 'filename', 'file_path', 'filepath', 'paths', 'files', 'target_file']);
const EXTERNAL_TOOL = /web|http|fetch|browse|url|curl|internet|google|bing/i;
const REPO_TOOL = /read|open|grep|search|list|ls\b|cat\b|find|glob|git|view|inspect|repo/i;

/** What a `tool_call` trace contributes to the job's evidence (kept in the job state, bounded). */
export function toolCallFacts(trace: Trace): { files?: string[]; external?: boolean } {
  const files: string[] = [];
  let external = typeof trace.tool === 'string' && EXTERNAL_TOOL.test(trace.tool);
  const args = trace.args ?? {};
  for (const [k, v] of Object.entries(args)) {
    const vals = Array.isArray(v) ? v : [v];
    for (const x of vals) {
      if (typeof x !== 'string') continue;
      if (/^https?:\/\//i.test(x)) external = true;
      else if (FILE_KEYS.has(k.toLowerCase()) && files.length < 5) files.push(x.slice(0, 200));
    }
  }
  return { ...(files.length && { files }), ...(external && { external: true }) };
}

/** At most 5 lines (§9.10): tools used, key files, repo inspected, external lookup, and the agent's claim. */
export function toolTraceSummary(calls: readonly GateToolCall[], agentClaim?: unknown): string {
  const ran = calls.filter((c) => !c.blocked);
  const blocked = calls.length - ran.length;
  const counts = new Map<string, number>();
  for (const c of ran) counts.set(c.tool, (counts.get(c.tool) ?? 0) + 1);
  const tools = [...counts].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t));
  const files = [...new Set(ran.flatMap((c) => c.files ?? []))];
  const lines = [
    `Tools used: ${tools.length ? tools.join(', ') : 'none (no tool call recorded for this job)'}${blocked ? ` (${blocked} blocked call(s) did not run)` : ''}`,
    `Key files opened: ${files.length ? files.slice(0, 5).join(', ') + (files.length > 5 ? ` (+${files.length - 5} more)` : '') : 'none'}`,
    `Repo inspected: ${files.length > 0 || ran.some((c) => REPO_TOOL.test(c.tool)) ? 'yes' : 'no'}`,
    `External lookup: ${ran.some((c) => c.external) ? 'yes' : 'no'}`,
  ];
  if (typeof agentClaim === 'string' && agentClaim.trim()) {
    const one = agentClaim.trim().replace(/\s+/g, ' ');
    lines.push(`Agent's own summary (a claim, not verified by Steward): ${one.length > MAX_CLAIM_CHARS ? `${one.slice(0, MAX_CLAIM_CHARS - 1)}…` : one}`);
  }
  return lines.join('\n');
}

/** Start and end of a long draft (a judge must see how it ends too), cut between code points. */
export function cutMiddle(s: string, max: number): string {
  if (s.length <= max) return s;
  const half = Math.floor(max / 2);
  let head = half;
  let tail = half;
  if (/[\ud800-\udbff]/.test(s[head - 1] ?? '')) head--;
  if (/[\udc00-\udfff]/.test(s[s.length - tail] ?? '')) tail--;
  return `${s.slice(0, head)}\n…[${s.length - head - tail} characters cut from the middle]…\n${s.slice(s.length - tail)}`;
}

export interface PayloadInput {
  goal?: string;
  intentId: string | null;
  constraints: string[];
  draft: string;
  calls: readonly GateToolCall[];
  agentSummary?: unknown;
  maxDraftChars: number;
}

export function buildPayload(i: PayloadInput): JudgePayload {
  return {
    goal: i.goal ? goalSentences(i.goal) : '(not given)',
    intent_id: i.intentId ?? '(not given)',
    constraints: i.constraints.slice(0, MAX_CONSTRAINTS).map((c) => (c.length > MAX_CONSTRAINT_CHARS ? `${c.slice(0, MAX_CONSTRAINT_CHARS - 1)}…` : c)),
    tool_trace_summary: toolTraceSummary(i.calls, i.agentSummary),
    draft_answer: cutMiddle(i.draft, i.maxDraftChars),
  };
}
