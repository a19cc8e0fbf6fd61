/** The trace an agent sends (contracts C1) and the agent it comes from, as the trusted registry knows it (contracts C2). */

export interface SourceRef {
  id: string;
  category?: string;
  trust?: number;
  [k: string]: unknown;
}

/** contracts C1. Unknown fields are kept and reachable from conditions. */
export interface Trace {
  trace_id: string;
  agent_id: string;
  timestamp: string;
  hook: string;
  tool?: string;
  args?: Record<string, unknown>;
  /** What the action does; on ACM hooks the ACM §14.1 action name (the hook itself, contracts C1). */
  action?: Record<string, unknown> | string;
  reasoning?: string;
  content?: string;
  context?: Record<string, unknown>;
  sources?: SourceRef[];
  destination?: string;
  response_size?: number;
  session_id?: string;
  goal_id?: string;
  plan_id?: string;
  task_id?: string;
  [k: string]: unknown;
}

/** ACL-0..ACL-5; GT-n is accepted as an alias on input and normalised to ACL-n. */
export type AclTier = 'ACL-0' | 'ACL-1' | 'ACL-2' | 'ACL-3' | 'ACL-4' | 'ACL-5';

/** From the trusted agent registry (contracts C2), never from the trace. */
export interface AgentInfo {
  id: string;
  tenant: string;
  tier: AclTier;
  tools: string[];
  domains: string[];
  /** false when the agent is not in the registry (default tier, global blueprints only). */
  registered: boolean;
  /** Skills the registry lists for the agent; a trace's skill_id selects per-skill gate settings only for these (docs/gate.md). */
  skills?: string[];
  /**
   * Ed25519 public keys (PEM) the agent signs its traces with (docs/security.md): an agent with keys must
   * sign every trace; the registry's key ids (sha256 of the key, 16 hex) name them in signatures.
   */
  publicKeys?: string[];
  /**
   * API keys of the HTTP ingress (docs/http.md), hashed at rest: `sha256:<64 hex>` of the key's text; a
   * request's agent is its key's agent (docs/spec-decisions.md D24).
   */
  apiKeys?: string[];
}
