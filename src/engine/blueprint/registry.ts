/**
 * The trusted agent registry (contracts C2): the only source of an agent's tier, tenant, tools, domains.
 */
import { createPublicKey } from 'node:crypto';
import { isMap, isSeq, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { sortProblems, StewardError } from '../../errors.js';
import { normalizeTier } from '../config.js';
import type { AclTier, AgentInfo } from '../types.js';
import { suggest } from './schema-check.js';
import { rangeEnd } from './source.js';

export interface AgentRegistry {
  agents: ReadonlyMap<string, AgentInfo>;
  /** Unknown agents get the default tier, tenant 'default', no tools/domains and registered=false. */
  lookup(agentId: string): AgentInfo;
}

const KEYS = ['id', 'tenant', 'tier', 'tools', 'domains', 'skills', 'public_keys', 'api_keys'];
// mcp_servers: tool schemas imported for every blueprint loaded with this registry (docs/rules.md).
const ROOT_KEYS = ['agents', 'mcp_servers'];

/** Unknown keys are errors at the key (x- extensions allowed): a typo like `agentz:` must not leave its agents silently unregistered. */
function unknownKeys(map: { items: { key: unknown }[] }, allowed: string[], path: string, at: (n: YamlNode | null | undefined, path: string) => StewardError['position'], errors: StewardError[]): void {
  for (const pair of map.items) {
    const k = String((pair.key as { value?: unknown })?.value ?? pair.key);
    if (allowed.includes(k) || k.startsWith('x-')) continue;
    const hint = suggest(k, allowed);
    errors.push(new StewardError('STEWARD_CONFIG', `unknown key '${k}'${hint ? ` (did you mean '${hint}'?)` : ''}`, { position: at(pair.key as YamlNode, path === '$' ? `$.${k}` : `${path}.${k}`) }));
  }
}

export function createAgentRegistry(agents: AgentInfo[], defaultTier: AclTier = 'ACL-2'): AgentRegistry {
  const map = new Map<string, AgentInfo>(
    agents.map((a) => [a.id, Object.freeze({ ...a, tools: [...a.tools], domains: [...a.domains], ...(a.skills && { skills: [...a.skills] }), ...(a.publicKeys && { publicKeys: [...a.publicKeys] }), ...(a.apiKeys && { apiKeys: [...a.apiKeys] }) })]),
  );
  // Unknown ids get one frozen object each (bounded) so BlueprintSet.select can cache per object.
  const unknown = new Map<string, AgentInfo>();
  return {
    agents: map,
    lookup(agentId: string): AgentInfo {
      const known = map.get(agentId);
      if (known) return known;
      let u = unknown.get(agentId);
      if (!u) {
        if (unknown.size >= 10_000) unknown.clear();
        u = Object.freeze({ id: agentId, tenant: 'default', tier: defaultTier, tools: [], domains: [], registered: false });
        unknown.set(agentId, u);
      }
      return u;
    },
  };
}

export function parseAgentRegistry(text: string, file: string, opts: { defaultTier?: AclTier } = {}): { registry?: AgentRegistry; errors: StewardError[] } {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true, version: '1.2' });
  const errors: StewardError[] = [];
  const at = (n: YamlNode | null | undefined, path: string) => ({ file, ...lc.linePos(n?.range?.[0] ?? 0), ...rangeEnd(text, lc, n?.range?.[0] ?? 0, n?.range?.[1]), path });
  for (const e of doc.errors) errors.push(new StewardError('STEWARD_CONFIG', `invalid YAML: ${e.message.split('\n')[0]}`, { position: { file, ...lc.linePos(e.pos[0]), ...rangeEnd(text, lc, e.pos[0], e.pos[1]) } }));
  if (errors.length) return { errors };
  const root = doc.contents;
  if (isMap(root)) unknownKeys(root, ROOT_KEYS, '$', at, errors);
  const agentsNode = isMap(root) ? (root.get('agents', true) as YamlNode | undefined) : undefined;
  if (!isMap(root) || !isSeq(agentsNode)) {
    errors.push(new StewardError('STEWARD_CONFIG', "agent registry must be a mapping with an 'agents:' list", { position: at(root, '$') }));
    return { errors: sortProblems(errors) };
  }
  const agents: AgentInfo[] = [];
  const seen = new Set<string>();
  const apiKeyOwner = new Map<string, string>();
  agentsNode.items.forEach((item, i) => {
    const path = `$.agents[${i}]`;
    if (!isMap(item)) {
      errors.push(new StewardError('STEWARD_CONFIG', 'an agent entry must be a mapping', { position: at(item as YamlNode, path) }));
      return;
    }
    unknownKeys(item, KEYS, path, at, errors);
    const v = item.toJSON() as Record<string, unknown>;
    const node = (k: string) => item.get(k, true) as YamlNode | undefined;
    if (typeof v.id !== 'string' || !v.id) {
      errors.push(new StewardError('STEWARD_CONFIG', "agent entry needs a string 'id'", { position: at(item, path) }));
      return;
    }
    if (seen.has(v.id)) errors.push(new StewardError('STEWARD_BLUEPRINT_DUPLICATE', `agent '${v.id}' is listed twice`, { position: at(node('id'), `${path}.id`) }));
    seen.add(v.id);
    const tier = v.tier === undefined ? (opts.defaultTier ?? 'ACL-2') : normalizeTier(v.tier);
    if (!tier) errors.push(new StewardError('STEWARD_BLUEPRINT_TIER', `tier ${JSON.stringify(v.tier)} is not ACL-0..ACL-5 (or GT-n)`, { position: at(node('tier'), `${path}.tier`) }));
    const strList = (k: 'tools' | 'domains' | 'skills' | 'public_keys' | 'api_keys'): string[] => {
      const x = v[k];
      if (x === undefined) return [];
      if (Array.isArray(x) && x.every((s) => typeof s === 'string')) return x as string[];
      errors.push(new StewardError('STEWARD_CONFIG', `'${k}' must be a list of strings`, { position: at(node(k), `${path}.${k}`) }));
      return [];
    };
    if (v.tenant !== undefined && typeof v.tenant !== 'string') errors.push(new StewardError('STEWARD_CONFIG', "'tenant' must be a string", { position: at(node('tenant'), `${path}.tenant`) }));
    // skills: the finalization gate's per-skill settings apply only to skills listed here (docs/gate.md)
    // public_keys: Ed25519 public keys (PEM) the agent signs its traces with (docs/security.md).
    const publicKeys = v.public_keys === undefined ? undefined : strList('public_keys');
    publicKeys?.forEach((pem, k) => {
      const problem = publicKeyProblem(pem);
      if (problem) errors.push(new StewardError('STEWARD_CONFIG', `public_keys[${k}]: ${problem}`, { position: at(node('public_keys'), `${path}.public_keys[${k}]`) }));
    });
    // api_keys: HTTP ingress keys, hashed at rest — `sha256:<64 hex>`, never the key itself (docs/http.md).
    const apiKeys = v.api_keys === undefined ? undefined : strList('api_keys').map((h) => h.toLowerCase());
    apiKeys?.forEach((h, k) => {
      if (!/^sha256:[0-9a-f]{64}$/.test(h)) errors.push(new StewardError('STEWARD_CONFIG', `api_keys[${k}]: must be sha256:<64 hex>, the hash of the key (never the key itself)`, { position: at(node('api_keys'), `${path}.api_keys[${k}]`) }));
      else if (apiKeyOwner.has(h) && apiKeyOwner.get(h) !== v.id) errors.push(new StewardError('STEWARD_CONFIG', `api_keys[${k}]: the same key is listed for agent '${apiKeyOwner.get(h)}'`, { position: at(node('api_keys'), `${path}.api_keys[${k}]`) }));
      else apiKeyOwner.set(h, v.id as string);
    });
    agents.push({
      id: v.id,
      tenant: typeof v.tenant === 'string' ? v.tenant : 'default',
      tier: tier ?? 'ACL-2',
      tools: strList('tools'),
      domains: strList('domains'),
      ...(v.skills !== undefined && { skills: strList('skills') }),
      ...(publicKeys && publicKeys.length > 0 && { publicKeys }),
      ...(apiKeys && apiKeys.length > 0 && { apiKeys }),
      registered: true,
    });
  });
  if (errors.length) return { errors: sortProblems(errors) };
  return { registry: createAgentRegistry(agents, opts.defaultTier), errors };
}

/** Why a `public_keys` entry is not an Ed25519 public key in PEM, or undefined. */
function publicKeyProblem(pem: string): string | undefined {
  try {
    const k = createPublicKey(pem);
    return k.asymmetricKeyType === 'ed25519' ? undefined : `an Ed25519 public key is required, got ${k.asymmetricKeyType}`;
  } catch {
    return 'not a PEM public key';
  }
}
