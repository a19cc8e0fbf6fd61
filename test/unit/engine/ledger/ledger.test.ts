import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  ed25519Signer,
  entryHash,
  GENESIS_HASH,
  LedgerChain,
  verifyLedger,
  type LedgerEntry,
  type LedgerIssueKind,
} from '../../../../src/engine/ledger/index.js';
import { policyDecisionDraft } from '../../../../src/contracts/policy-decision.js';

const keyA = generateKeyPairSync('ed25519');
const keyB = generateKeyPairSync('ed25519');
const signerA = ed25519Signer(keyA.privateKey);
const signerB = ed25519Signer(keyB.privateKey);
const trusted = { [signerA.kid]: keyA.publicKey };

function build(n: number, agent = 'agent-1'): LedgerEntry[] {
  const chain = new LedgerChain(signerA);
  const out: LedgerEntry[] = [];
  for (let i = 1; i <= n; i++) {
    out.push(
      chain.append(
        policyDecisionDraft({
          trace_id: `t-${agent}-${i}`,
          agent_id: agent,
          tenant: 'acme',
          blueprint: 'finance/trading_bot@1.0',
          intervention: i % 3 === 0 ? 'block' : 'ok',
          stage: 'rule',
          event_time_ms: 1_700_000_000_000 + i * 1000,
          tripwires: [{ id: 'tw', fired: false }],
          rules: [{ id: 'cap', passed: i % 3 !== 0 }],
        }),
      ),
    );
  }
  return out;
}

/** Re-hash and re-sign an entry with `signer`, as an attacker holding that key would. */
function resign(e: LedgerEntry, signer = signerB): LedgerEntry {
  const unsigned = { ...e, kid: signer.kid };
  const hash = entryHash(unsigned);
  return { ...unsigned, hash, signature: signer.sign(hash) };
}

const kinds = (entries: LedgerEntry[]) => verifyLedger(entries, trusted).issues.map((i) => `${i.kind}@${i.seq}`);
const hasIssue = (entries: LedgerEntry[], kind: LedgerIssueKind, seq: number) => expect(kinds(entries)).toContain(`${kind}@${seq}`);

describe('LedgerChain', () => {
  it('chains entries per agent from the genesis hash, with consecutive seq and valid signatures', () => {
    const entries = build(5);
    expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(entries[0].prev_hash).toBe(GENESIS_HASH);
    for (let i = 1; i < entries.length; i++) expect(entries[i].prev_hash).toBe(entries[i - 1].hash);
    expect(entries[2].payload).toMatchObject({ decision: 'deny', intervention: 'block', rules_failed: ['cap'] });
    const r = verifyLedger(entries, trusted);
    expect(r).toMatchObject({ ok: true, agents: 1, entries: 5, issues: [] });
    expect(r.heads['agent-1']).toMatchObject({ seq: 5, hash: entries[4].hash });
  });

  it('continues a chain from a head passed in (state lives outside the chain)', () => {
    const first = build(2);
    const chain = new LedgerChain(signerA);
    const next = chain.append(
      { entry_id: 'x', agent_id: 'agent-1', tenant: 'acme', ts_ms: first[1].ts_ms + 5, type: 'PLAN_SELECTED', payload: { plan: 'A' } },
      { agent_id: 'agent-1', seq: 2, hash: first[1].hash, ts_ms: first[1].ts_ms },
    );
    expect(next.seq).toBe(3);
    expect(verifyLedger([...first, next], trusted).ok).toBe(true);
  });

  it('keeps time order by clamping an earlier event time to the head and recording the original', () => {
    const chain = new LedgerChain(signerA);
    const a = chain.append({ entry_id: 'a', agent_id: 'g', tenant: '', ts_ms: 2000, type: 'GOAL_AMENDED', payload: {} });
    const b = chain.append({ entry_id: 'b', agent_id: 'g', tenant: '', ts_ms: 1000, type: 'BRANCH_TAKEN', payload: {} });
    expect(b.ts_ms).toBe(a.ts_ms);
    expect(b.payload.event_ts_ms).toBe(1000);
  });

  it('hash is over RFC 8785 canonical JSON: key order does not matter, content does', () => {
    const [e] = build(1);
    const reordered = Object.fromEntries(Object.entries(e).reverse()) as unknown as LedgerEntry;
    expect(entryHash(reordered)).toBe(e.hash);
    expect(entryHash({ ...e, payload: { ...e.payload, intervention: 'ok ' } })).not.toBe(e.hash);
  });

  it('rejects unknown entry types', () => {
    const chain = new LedgerChain(signerA);
    expect(() => chain.append({ entry_id: 'a', agent_id: 'g', tenant: '', ts_ms: 1, type: 'NOPE' as never, payload: {} })).toThrow(/unknown ledger entry type/);
  });
});

describe('verifyLedger detects tampering and says which entry', () => {
  it('edit: payload changed without re-hashing', () => {
    const e = build(5);
    e[2] = { ...e[2], payload: { ...e[2].payload, intervention: 'ok', decision: 'allow' } };
    expect(kinds(e)).toEqual(['edited@3']);
  });

  it('edit: seq or kid changed alone breaks the hash', () => {
    const e = build(3);
    e[1] = { ...e[1], kid: signerB.kid };
    hasIssue(e, 'edited', 2);
  });

  it('delete: a middle entry removed', () => {
    const e = build(5);
    e.splice(2, 1);
    expect(kinds(e)).toEqual(['deleted@4']);
    expect(verifyLedger(e, trusted).issues[0].message).toMatch(/seq 3 missing/);
  });

  it('delete: the first entries removed', () => {
    const e = build(4).slice(2);
    expect(kinds(e)).toEqual(['deleted@3']);
  });

  it('delete: a truncated tail is caught against a trusted anchor', () => {
    const e = build(5);
    const anchor = { seq: 5, hash: e[4].hash };
    const r = verifyLedger(e.slice(0, 3), trusted, { anchors: { 'agent-1': anchor } });
    expect(r.issues.map((i) => i.kind)).toEqual(['truncated']);
    expect(verifyLedger(e, trusted, { anchors: { 'agent-1': anchor } }).ok).toBe(true);
  });

  it('insert: a forged entry claiming an existing seq (signed with an untrusted key)', () => {
    const e = build(5);
    const forged = resign({ ...e[2], entry_id: 'pd:forged', payload: { ...e[2].payload, intervention: 'ok' } });
    const tampered = [...e.slice(0, 3), forged, ...e.slice(3)];
    const k = kinds(tampered);
    expect(k).toContain('inserted@3');
    expect(k).toContain('unknown_key@3');
    const ins = verifyLedger(tampered, trusted).issues.find((i) => i.kind === 'inserted');
    expect(ins?.entry_id).toBe('pd:forged');
  });

  it('insert: an entry spliced in with renumbered successors is caught (hashes no longer match)', () => {
    const e = build(4);
    const chain = new LedgerChain(signerB);
    const spliced = chain.append(
      { entry_id: 'evil', agent_id: 'agent-1', tenant: 'acme', ts_ms: e[1].ts_ms, type: 'POLICY_DECISION', payload: {} },
      { agent_id: 'agent-1', seq: 2, hash: e[1].hash, ts_ms: e[1].ts_ms },
    );
    const renumbered = e.slice(2).map((x) => ({ ...x, seq: x.seq + 1 }));
    const k = kinds([...e.slice(0, 2), spliced, ...renumbered]);
    expect(k).toContain('unknown_key@3');
    expect(k).toContain('edited@4');
    expect(k).toContain('edited@5');
  });

  it('reorder: two entries swapped in storage order', () => {
    const e = build(5);
    [e[1], e[2]] = [e[2], e[1]];
    const k = kinds(e);
    expect(k).toContain('reordered@3');
    expect(k).toContain('reordered@2');
    expect(k.every((x) => x.startsWith('reordered'))).toBe(true);
  });

  it('reorder: seq numbers swapped and re-signed with the trusted key still shows broken links and time order', () => {
    // Worst case: the attacker holds the signing key. Links and time still betray the reorder.
    const e = build(4);
    const s2 = resign({ ...e[2], seq: 2 }, signerA);
    const s3 = resign({ ...e[1], seq: 3 }, signerA);
    const k = kinds([e[0], s2, s3, e[3]]);
    expect(k.some((x) => x.startsWith('reordered') || x.startsWith('chain_broken'))).toBe(true);
    expect(k).toContain('time_order@3');
  });

  it('re-sign with another key: edited entry re-hashed and signed by an untrusted key', () => {
    const e = build(4);
    e[1] = resign({ ...e[1], payload: { ...e[1].payload, intervention: 'ok' } });
    expect(kinds(e)).toEqual(['unknown_key@2']);
  });

  it('re-sign with another key but the trusted kid kept: signature fails', () => {
    const e = build(4);
    const unsigned = { ...e[1], payload: { ...e[1].payload, reasons: ['nothing to see'] } };
    const hash = entryHash(unsigned);
    e[1] = { ...unsigned, hash, signature: signerB.sign(hash) };
    expect(kinds(e)).toEqual(['bad_signature@2']);
  });

  it('redelivered exact duplicates are not tampering; chains of several agents verify independently', () => {
    const a = build(3, 'a');
    const b = build(2, 'b');
    const r = verifyLedger([...a, a[1], ...b, b[0]], trusted);
    expect(r).toMatchObject({ ok: true, agents: 2, entries: 5 });
    b[1] = { ...b[1], payload: {} };
    expect(verifyLedger([...a, ...b], trusted).issues).toEqual([expect.objectContaining({ agent_id: 'b', seq: 2, kind: 'edited' })]);
  });

  it('a forged second copy keeping seq, hash, signature and entry_id but another payload, time or kid is not a redelivery', () => {
    const a = build(3, 'dup');
    for (const forged of [
      { ...a[1], payload: { ...a[1].payload, decision: 'deny' } },
      { ...a[1], ts_ms: a[1].ts_ms + 1 },
      { ...a[1], tenant: 'other' },
      { ...a[1], kid: 'someone-else' },
    ]) {
      const r = verifyLedger([...a, forged], trusted);
      expect(r.ok, JSON.stringify(forged)).toBe(false);
      expect(r.issues.map((i) => i.seq)).toContain(2);
    }
  });

  it('a kid that is not a trusted fingerprint (a deployment label) verifies when a trusted key verifies the signature', () => {
    const labelled = new LedgerChain(ed25519Signer(keyA.privateKey, 'prod-1'));
    const entries = [1, 2].map((i) => labelled.append(policyDecisionDraft({ trace_id: `l-${i}`, agent_id: 'lab', tenant: 'acme', blueprint: 'b@1', intervention: 'ok', stage: 'rule', event_time_ms: 1_700_000_000_000 + i })));
    expect(entries[0].kid).toBe('prod-1');
    expect(verifyLedger(entries, trusted)).toMatchObject({ ok: true, entries: 2 });
    // Signed by an untrusted key under the same label: still untrusted.
    const other = new LedgerChain(ed25519Signer(keyB.privateKey, 'prod-1'));
    const forged = other.append(policyDecisionDraft({ trace_id: 'l-x', agent_id: 'lab2', tenant: 'acme', blueprint: 'b@1', intervention: 'ok', stage: 'rule', event_time_ms: 1_700_000_000_000 }));
    expect(verifyLedger([forged], trusted).issues.map((i) => i.kind)).toEqual(['unknown_key']);
  });

  it('malformed rows are reported, not thrown', () => {
    const e = build(2);
    const r = verifyLedger([e[0], { ...e[1], type: 'WHATEVER' } as unknown as LedgerEntry], trusted);
    expect(r.issues.map((i) => i.kind)).toEqual(['malformed']);
  });
});

describe('schemas/ledger-entry.schema.json', () => {
  const schema = JSON.parse(readFileSync(new URL('../../../../schemas/ledger-entry.schema.json', import.meta.url), 'utf8'));
  const validate = new Ajv2020({ strict: false }).compile(schema);

  it('accepts the entries the chain builds and rejects incomplete or foreign ones', () => {
    for (const e of build(3)) expect(validate(e), JSON.stringify(validate.errors)).toBe(true);
    const [e] = build(1);
    expect(validate({ ...e, hash: undefined })).toBe(false);
    expect(validate({ ...e, type: 'TOOL_OUTPUT' })).toBe(false);
    expect(validate({ ...e, seq: 0 })).toBe(false);
    expect(validate({ ...e, extra: 1 })).toBe(false);
  });
});

describe('LedgerChain.appendUnsigned', () => {
  it('gives the entry append gives, minus the signature, and moves the head the same way', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const { LedgerChain, ed25519Signer } = await import('../../../../src/engine/ledger/index.js');
    const signer = ed25519Signer(generateKeyPairSync('ed25519').privateKey);
    const a = new LedgerChain(signer);
    const b = new LedgerChain(signer);
    const draft = (i: number, ts: number) => ({ entry_id: `e${i}`, agent_id: 'ag', tenant: 't', ts_ms: ts, type: 'POLICY_DECISION' as const, payload: { i } });
    // the second draft is older than the head: both paths clamp it the same way
    for (const [i, ts] of [[1, 2000], [2, 1000], [3, 3000]] as const) {
      const full = a.append(draft(i, ts));
      const bare = b.appendUnsigned(draft(i, ts));
      expect(bare).toEqual((({ signature: _s, ...rest }) => rest)(full));
      expect(signer.sign(bare.hash)).toBe(full.signature);
      expect(b.head('ag')).toEqual(a.head('ag'));
    }
  });
});

describe('LedgerChain.append with a signer that fails', () => {
  it('leaves the head where it was (signed before the head moves)', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const { LedgerChain, ed25519Signer } = await import('../../../../src/engine/ledger/index.js');
    const real = ed25519Signer(generateKeyPairSync('ed25519').privateKey);
    let fail = true;
    const flaky = { kid: real.kid, sign: (h: string) => (fail ? ((fail = false), (() => { throw new Error('KMS unavailable'); })()) : real.sign(h)) };
    const chain = new LedgerChain(flaky);
    const draft = { entry_id: 'e1', agent_id: 'ag', tenant: 't', ts_ms: 1000, type: 'POLICY_DECISION' as const, payload: {} };
    expect(() => chain.append(draft)).toThrow('KMS unavailable');
    expect(chain.head('ag')).toBeUndefined();
    expect(chain.append(draft).seq).toBe(1);
  });
});

describe('key rotation (docs/security.md, signing keys)', () => {
  it('a chain signed with the old key, then the new one, verifies with both keys trusted; not with the new one alone', () => {
    const old = build(3);
    const chain = new LedgerChain(signerB);
    chain.setHead('agent-1', { agent_id: 'agent-1', seq: old[2].seq, hash: old[2].hash, ts_ms: old[2].ts_ms });
    const next = chain.append({ entry_id: 'after-rotation', agent_id: 'agent-1', tenant: 'acme', ts_ms: old[2].ts_ms + 1000, type: 'POLICY_DECISION', payload: {} });
    const all = [...old, next];
    expect(next.kid).toBe(signerB.kid);
    expect(verifyLedger(all, { [signerA.kid]: keyA.publicKey, [signerB.kid]: keyB.publicKey }).ok).toBe(true);
    const newOnly = verifyLedger(all, { [signerB.kid]: keyB.publicKey });
    expect(newOnly.ok).toBe(false);
    expect(newOnly.issues.map((i) => i.kind)).toContain('unknown_key');
  });
});
