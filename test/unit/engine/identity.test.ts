// Binding a trace's agent_id to its sender (docs/security.md): record key, registry, Ed25519 signatures.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseAgentRegistry } from '../../../src/engine/blueprint/index.js';
import { checkIdentity, signTraceBytes, type IdentityPolicy } from '../../../src/engine/identity.js';
import type { AgentInfo, Trace } from '../../../src/engine/types.js';

const pair = () => {
  const k = generateKeyPairSync('ed25519');
  return { priv: k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), pub: k.publicKey.export({ type: 'spki', format: 'pem' }).toString() };
};
const oldKey = pair();
const newKey = pair();
const stranger = pair();
const indent = (pem: string) => pem.trim().split('\n').map((l) => `        ${l}`).join('\n');
const { registry, errors } = parseAgentRegistry(
  `agents:\n  - id: signer-1\n    tenant: acme\n    public_keys:\n      - |\n${indent(oldKey.pub)}\n      - |\n${indent(newKey.pub)}\n  - { id: plain-1, tenant: acme }\n`,
  'agents.yaml',
);
const open: IdentityPolicy = { requireRegistered: false, keyMustMatch: true, requireSignature: false };
const trace = (agent: string): Trace => ({ trace_id: 't', agent_id: agent, timestamp: '2026-01-01T00:00:00Z', hook: 'tool_call' });
const bytes = (t: Trace) => Buffer.from(JSON.stringify(t));
const check = (t: Trace, agent: AgentInfo, rec: { value?: Buffer; key?: string | null; signature?: string }, policy = open) =>
  checkIdentity(t, agent, { value: rec.value ?? bytes(t), key: rec.key === undefined ? t.agent_id : rec.key, signature: rec.signature }, policy);

describe('checkIdentity', () => {
  it('the registry takes Ed25519 public keys and refuses anything else, at its position', () => {
    expect(errors).toEqual([]);
    expect(registry!.lookup('signer-1').publicKeys).toHaveLength(2);
    const bad = parseAgentRegistry('agents:\n  - id: x\n    public_keys: ["not a key"]\n', 'agents.yaml');
    expect(bad.errors.map((e) => e.format())).toEqual(['agents.yaml:3:18: STEWARD_CONFIG: public_keys[0]: not a PEM public key (at $.agents[0].public_keys[0])']);
  });

  it('the record key must be the agent id (a key ≠ agent_id or no key is refused)', () => {
    const t = trace('plain-1');
    expect(() => check(t, registry!.lookup('plain-1'), {})).not.toThrow();
    expect(() => check(t, registry!.lookup('plain-1'), { key: 'victim-2' })).toThrow(expect.objectContaining({ code: 'STEWARD_AGENT_KEY' }));
    expect(() => check(t, registry!.lookup('plain-1'), { key: null })).toThrow(/has no key/);
    expect(() => check(t, registry!.lookup('plain-1'), { key: 'victim-2' }, { ...open, keyMustMatch: false })).not.toThrow();
  });

  it('agents.require_registered refuses an agent id the registry does not list', () => {
    const t = trace('nobody');
    expect(() => check(t, registry!.lookup('nobody'), {})).not.toThrow();
    expect(() => check(t, registry!.lookup('nobody'), {}, { ...open, requireRegistered: true })).toThrow(expect.objectContaining({ code: 'STEWARD_AGENT_UNKNOWN' }));
  });

  it('an agent with public keys must sign: with either key (rotation), over the exact bytes', () => {
    const t = trace('signer-1');
    const agent = registry!.lookup('signer-1');
    expect(() => check(t, agent, { signature: signTraceBytes(bytes(t), oldKey.priv) })).not.toThrow();
    expect(() => check(t, agent, { signature: signTraceBytes(bytes(t), newKey.priv) })).not.toThrow();
    expect(() => check(t, agent, {})).toThrow(/unsigned trace/);
    expect(() => check(t, agent, { signature: signTraceBytes(bytes(t), stranger.priv) })).toThrow(/which the registry does not list/);
    const other = Buffer.from(JSON.stringify({ ...t, args: { amount: 1e9 } }));
    expect(() => check(t, agent, { value: other, signature: signTraceBytes(bytes(t), newKey.priv) })).toThrow(/does not match the trace bytes/);
    expect(() => check(t, agent, { signature: `${signTraceBytes(bytes(t), newKey.priv).split(':')[0]}:AAAA` })).toThrow(expect.objectContaining({ code: 'STEWARD_AGENT_SIGNATURE' }));
  });

  it('agents.require_signature: an agent without keys cannot send at all', () => {
    expect(() => check(trace('plain-1'), registry!.lookup('plain-1'), {}, { ...open, requireSignature: true })).toThrow(/lists no public key/);
  });
});
