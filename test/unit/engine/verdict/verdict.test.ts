import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { readFileSync } from 'node:fs';
import { buildVerdict, Ed25519Signer, embedInAdpStep, signVerdict, verifyVerdict, type VerdictInput } from '../../../../src/engine/verdict/index.js';

const base: VerdictInput = {
  traceId: 't-1',
  agent: { id: 'a', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true },
  blueprint: 'x@1.0',
  intervention: 'ok',
  stage: 'ctq',
  tripwires: [{ id: 'tw', fired: false, latencyMs: 0 }],
  rules: [{ id: 'r', passed: true, latencyMs: 0 }],
  metrics: [{ name: 'clarity', score: 0.9, weight: 1, confidence: 0.95, scorer: 'llm-judge', status: 'ok' }],
  ctq: 0.9,
  risk: 0.1,
  ctqConfidence: 0.95,
  engineVersion: '0.1.0',
  latencyMs: 3.4,
  humanReviewConfidence: 0.9,
};

const schema = JSON.parse(readFileSync(new URL('../../../../schemas/pvs-1.schema.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ strict: false });
const validate = ajv.compile(schema);

describe('buildVerdict', () => {
  it('approved verdicts have no violations and carry Level 2–3 fields', () => {
    const v = buildVerdict(base);
    expect(v.approved).toBe(true);
    expect(v.policy_violations).toEqual([]);
    expect(v.policy_set).toEqual(['x@1.0', 'tw', 'r', 'clarity']);
    expect(v.metadata).toMatchObject({ engine: 'steward', engine_version: '0.1.0', latency_ms: 3, tenant_id: 'acme', agent_id: 'a', human_review: false });
    expect(validate(v)).toBe(true);
  });
  it('rule failures are violations with confidence 1; low CTQ confidence → human review', () => {
    const v = buildVerdict({ ...base, intervention: 'block', stage: 'rule', rules: [{ id: 'r', passed: false, reason: 'too big', decision: 'block', latencyMs: 0 }] });
    expect(v.approved).toBe(false);
    expect(v.policy_violations).toEqual(['r: too big']);
    expect(v.confidence_score).toBe(1);
    expect(validate(v)).toBe(true);
    const low = buildVerdict({ ...base, ctqConfidence: 0.5 });
    expect(low.metadata?.human_review).toBe(true);
  });
  it('a non-approved CTQ verdict always names a violation', () => {
    const v = buildVerdict({ ...base, intervention: 'escalate', ctq: 0.5, risk: 0.5 });
    expect(v.policy_violations.length).toBeGreaterThan(0);
  });
  it('a fallback-decided CTQ verdict names the fallback, not the risk of the answered metrics', () => {
    const fallback = { policy: 'deny', intervention: 'block' as const, metrics: ['accuracy'] };
    const v = buildVerdict({ ...base, intervention: 'block', risk: 0, ctq: 1, fallback });
    expect(v.policy_violations).toEqual(['scorers unavailable (accuracy): fallback deny → block']);
    // The risk decided (escalate) and the fallback only agreed with a milder one: both are named.
    const w = buildVerdict({ ...base, intervention: 'escalate', risk: 0.6, ctq: 0.4, fallback: { ...fallback, policy: 'allow_and_log', intervention: 'flag' } });
    expect(w.policy_violations).toEqual(['ctq: risk 0.6 maps to escalate', 'scorers unavailable (accuracy): fallback allow_and_log → flag']);
  });
  it('the schema rejects approved verdicts with violations and out-of-range confidence', () => {
    expect(validate({ ...buildVerdict(base), policy_violations: ['x'] })).toBe(false);
    expect(validate({ ...buildVerdict(base), confidence_score: 1.2 })).toBe(false);
  });
});

describe('signing', () => {
  const signer = Ed25519Signer.ephemeral();
  const v = signVerdict(buildVerdict(base), signer);
  it('verifies, and detects tampering of any field or a wrong key', () => {
    expect(verifyVerdict(v, signer.publicKeyPem()).ok).toBe(true);
    expect(validate(v)).toBe(true);
    expect(verifyVerdict({ ...v, approved: false }, signer.publicKeyPem()).ok).toBe(false);
    expect(verifyVerdict({ ...v, metadata: { ...v.metadata, latency_ms: 9 } }, signer.publicKeyPem()).ok).toBe(false);
    expect(verifyVerdict(v, Ed25519Signer.ephemeral().publicKeyPem()).ok).toBe(false);
    expect(verifyVerdict({ ...v, signature: undefined }, signer.publicKeyPem())).toMatchObject({ ok: false, reason: 'no signature' });
  });
  it('binds the event id (trace id + content digest), event time and severity: a verdict cannot be moved to another trace reusing the id', () => {
    const bound = signVerdict(buildVerdict({ ...base, eventId: `${base.traceId}#abc`, eventTimeMs: 1_767_225_600_000, severity: 'severe' }), signer);
    expect(bound.metadata).toMatchObject({ trace_id: base.traceId, event_id: `${base.traceId}#abc`, event_time_ms: 1_767_225_600_000, severity: 'severe' });
    expect(verifyVerdict(bound, signer.publicKeyPem()).ok).toBe(true);
    for (const change of [{ event_id: `${base.traceId}#def` }, { event_time_ms: 1 }, { severity: 'critical' }]) {
      expect(verifyVerdict({ ...bound, metadata: { ...bound.metadata, ...change } }, signer.publicKeyPem()).ok).toBe(false);
    }
    // without an event id, the trace id stands in
    expect(v.metadata?.event_id).toBe(base.traceId);
  });
  it('is independent of key order (RFC 8785)', () => {
    const reordered = JSON.parse(JSON.stringify({ metadata: v.metadata, ...v }));
    expect(verifyVerdict(reordered, signer.publicKeyPem()).ok).toBe(true);
  });
  it('embeds in an ADP-1 step', () => {
    const step = embedInAdpStep(v, 'draft', 't-1');
    expect(step.observation.output).toBe(v);
    expect(step.action.input.policies).toEqual(v.policy_set);
  });
});
