import { describe, expect, it } from 'vitest';
import { parseAgentRegistry } from '../../../../src/engine/blueprint/index.js';

describe('parseAgentRegistry', () => {
  it('parses agents, normalises GT-n and treats unknown agents as unregistered with the default tier', () => {
    const { registry, errors } = parseAgentRegistry('agents:\n  - id: a\n    tenant: acme\n    tier: GT-4\n    tools: [x]\n    domains: [prod]\n', 'agents.yaml', { defaultTier: 'ACL-1' });
    expect(errors).toEqual([]);
    expect(registry!.lookup('a')).toEqual({ id: 'a', tenant: 'acme', tier: 'ACL-4', tools: ['x'], domains: ['prod'], registered: true });
    const u = registry!.lookup('zz');
    expect(u).toEqual({ id: 'zz', tenant: 'default', tier: 'ACL-1', tools: [], domains: [], registered: false });
    expect(registry!.lookup('zz')).toBe(u); // same object: selection caches per AgentInfo
  });

  it('reports bad tiers, unknown keys and duplicate ids with positions', () => {
    const text = 'agents:\n  - id: a\n    tier: ACL-9\n  - id: a\n    tolls: [x]\n';
    const { registry, errors } = parseAgentRegistry(text, 'agents.yaml');
    expect(registry).toBeUndefined();
    expect(errors.map((e) => [e.code, e.position?.line, e.position?.col])).toEqual([
      ['STEWARD_BLUEPRINT_TIER', 3, 11],
      ['STEWARD_BLUEPRINT_DUPLICATE', 4, 9],
      ['STEWARD_CONFIG', 5, 5],
    ]);
    expect(errors[2].message).toContain("did you mean 'tools'");
  });

  it('rejects a registry without an agents list', () => {
    expect(parseAgentRegistry('foo: 1\n', 'agents.yaml').errors[0].code).toBe('STEWARD_CONFIG');
  });

  it('reports unknown root keys at the key (a typo must not leave agents unregistered), allows x- extensions', () => {
    const text = 'x-owner: platform\nagents:\n  - id: a\n    tier: ACL-1\nagentz:\n  - id: c\n';
    const { registry, errors } = parseAgentRegistry(text, 'agents.yaml');
    expect(registry).toBeUndefined();
    expect(errors.map((e) => e.format())).toEqual(["agents.yaml:5:1: STEWARD_CONFIG: unknown key 'agentz' (did you mean 'agents'?) (at $.agentz)"]);
    // only the typo: the hint and the missing list are both reported
    expect(parseAgentRegistry('agentz:\n  - id: c\n', 'agents.yaml').errors.map((e) => [e.position?.line, e.position?.col, e.message])).toEqual([
      [1, 1, "unknown key 'agentz' (did you mean 'agents'?)"],
      [1, 1, "agent registry must be a mapping with an 'agents:' list"],
    ]);
    expect(parseAgentRegistry('x-owner: platform\nagents: []\n', 'agents.yaml').errors).toEqual([]);
  });
});

describe('parseAgentRegistry api_keys (docs/http.md)', () => {
  const h = (c: string) => `sha256:${c.repeat(64)}`;
  it('keeps hashed API keys per agent', () => {
    const { registry, errors } = parseAgentRegistry(`agents:\n  - id: a\n    api_keys: ["${h('a').toUpperCase().replace('SHA256', 'sha256')}", "${h('b')}"]\n`, 'agents.yaml');
    expect(errors).toEqual([]);
    expect(registry!.lookup('a').apiKeys).toEqual([h('a'), h('b')]);
  });
  it('refuses a plaintext key and a key listed for two agents', () => {
    const { errors } = parseAgentRegistry(`agents:\n  - id: a\n    api_keys: [my-secret-key]\n  - id: b\n    api_keys: ["${h('c')}"]\n  - id: c\n    api_keys: ["${h('c')}"]\n`, 'agents.yaml');
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/api_keys\[0\]: must be sha256:<64 hex>/), expect.stringMatching(/listed for agent 'b'/)]);
    expect(errors.map((e) => e.message).join(' ')).not.toContain('my-secret-key');
  });
});
