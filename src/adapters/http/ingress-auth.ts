/**
 * API-key identity and per-key rate limits of the HTTP ingress (docs/spec-decisions.md D24): the key's
 * sha256 is looked up in the agent registry's `api_keys`; the request's agent is that entry's agent.
 */
import { createHash } from 'node:crypto';
import type { AgentInfo } from '../../engine/types.js';

export interface KeyedRegistry {
  agents: ReadonlyMap<string, AgentInfo>;
}

export function apiKeyHash(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

// Keyed by the agents map: a hot-reloaded registry hands out a new map per reload.
const byHash = new WeakMap<object, Map<string, AgentInfo>>();

/** The agent whose registry entry lists this key's hash, or undefined (unknown or revoked: 401). */
export function agentForKey(registry: KeyedRegistry, key: string): AgentInfo | undefined {
  const agents = registry.agents;
  let m = byHash.get(agents);
  if (!m) {
    m = new Map();
    for (const a of agents.values()) for (const h of a.apiKeys ?? []) m.set(h, a);
    byHash.set(agents, m);
  }
  return m.get(apiKeyHash(key));
}

/** Token bucket per key: `rate` per second, burst twice that. Bounded: idle buckets are dropped past `maxKeys`. */
export class KeyRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly rate: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {}

  /** 0 when the request may go, else the seconds to wait (Retry-After). */
  take(key: string): number {
    const t = this.now();
    const burst = this.rate * 2;
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.buckets.clear();
      b = { tokens: burst, at: t };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * this.rate);
    b.at = t;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.rate));
  }
}
