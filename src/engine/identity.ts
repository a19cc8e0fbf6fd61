/**
 * Who sent a trace (docs/security.md). The agent id is a field the sender writes, so on its own it proves
 * nothing: these checks bind it to the record — the Kafka key must be the agent id (one agent's events stay in
 * one partition, in order), an unregistered agent may be refused, and an agent whose registry entry lists
 * public keys must sign the exact bytes of every trace with one of them (Ed25519). Pure: keys come from the
 * registry, bytes and headers from the record.
 */
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { StewardError } from '../errors.js';
import { keyId } from './ledger/crypto.js';
import type { AgentInfo, Trace } from './types.js';

/** `x-steward-signature: <key id>:<base64 Ed25519 signature over the record value>`. */
export const SIGNATURE_HEADER = 'x-steward-signature';

export interface IdentityPolicy {
  /** Refuse traces of agents the registry does not list (agents.require_registered). */
  requireRegistered: boolean;
  /** The record key must equal the trace's agent_id (agents.key_must_match). */
  keyMustMatch: boolean;
  /** Every agent must sign its traces, not only those with keys in the registry (agents.require_signature). */
  requireSignature: boolean;
}

export interface RecordFacts {
  /** The record value as received (what the signature covers). */
  value: Uint8Array;
  key: string | null;
  signature: string | undefined;
}

const keyCache = new WeakMap<AgentInfo, Map<string, KeyObject>>();

function keysOf(agent: AgentInfo): Map<string, KeyObject> {
  let m = keyCache.get(agent);
  if (!m) {
    m = new Map();
    for (const pem of agent.publicKeys ?? []) {
      const k = createPublicKey(pem);
      m.set(keyId(k), k);
    }
    keyCache.set(agent, m);
  }
  return m;
}

/** Throws a non-retryable StewardError (the stage dead-letters the trace with it) when the sender is not the agent. */
export function checkIdentity(trace: Trace, agent: AgentInfo, rec: RecordFacts, policy: IdentityPolicy): void {
  const bad = (code: 'STEWARD_AGENT_UNKNOWN' | 'STEWARD_AGENT_KEY' | 'STEWARD_AGENT_SIGNATURE', m: string) => new StewardError(code, `agent '${trace.agent_id}': ${m}`);
  if (policy.keyMustMatch && rec.key !== trace.agent_id) {
    throw bad('STEWARD_AGENT_KEY', rec.key === null ? 'the record has no key (it must be the agent id)' : 'the record key is not the agent id');
  }
  if (policy.requireRegistered && !agent.registered) throw bad('STEWARD_AGENT_UNKNOWN', 'not in the agent registry (agents.require_registered)');
  const keys = keysOf(agent);
  if (keys.size === 0 && !policy.requireSignature) return;
  if (keys.size === 0) throw bad('STEWARD_AGENT_SIGNATURE', 'signatures are required and the registry lists no public key for this agent');
  if (!rec.signature) throw bad('STEWARD_AGENT_SIGNATURE', `unsigned trace (the registry lists keys for this agent: sign with ${SIGNATURE_HEADER})`);
  const colon = rec.signature.indexOf(':');
  const kid = colon > 0 ? rec.signature.slice(0, colon) : '';
  const key = keys.get(kid);
  if (!key) throw bad('STEWARD_AGENT_SIGNATURE', `signed with key id '${kid.slice(0, 32)}', which the registry does not list for this agent`);
  let ok = false;
  try {
    ok = verify(null, rec.value, key, Buffer.from(rec.signature.slice(colon + 1), 'base64'));
  } catch {
    ok = false;
  }
  if (!ok) throw bad('STEWARD_AGENT_SIGNATURE', 'the signature does not match the trace bytes');
}

/** The header value an agent sends: signs `value` with its Ed25519 private key (PEM). */
export function signTraceBytes(value: Uint8Array, privateKeyPem: string): string {
  const priv = createPrivateKeyOnce(privateKeyPem);
  return `${keyId(createPublicKey(priv))}:${Buffer.from(signBytes(value, priv)).toString('base64')}`;
}

const privCache = new Map<string, KeyObject>();
function createPrivateKeyOnce(pem: string): KeyObject {
  let k = privCache.get(pem);
  if (!k) {
    k = createPrivateKey(pem);
    if (privCache.size > 100) privCache.clear();
    privCache.set(pem, k);
  }
  return k;
}
const signBytes = (value: Uint8Array, k: KeyObject): Uint8Array => sign(null, value, k);
