/**
 * One behavioural suite for every TrustDebtStore: memory in unit tests, Redis in integration tests.
 * Each call of `factory` must return an empty store (unique Redis prefix).
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_TRUST_DEBT_CONFIG,
  HOUR_MS,
  trustDebtConfigFrom,
  type TrustDebtEvent,
  type TrustDebtStore,
} from '../../../../src/engine/trust-debt/index.js';
import type { Intervention } from '../../../../src/engine/types.js';

const T0 = Date.UTC(2026, 0, 1);
const cfg = DEFAULT_TRUST_DEBT_CONFIG; // no trust_debt block: no good-behaviour audit (opt-in)
// the §10.1 example's audit, configured explicitly
const audited = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 168, credit: -0.2 } } });

export function describeTrustDebtStore(name: string, factory: () => Promise<TrustDebtStore>, cleanup?: () => Promise<void>): void {
  describe(`TrustDebtStore contract: ${name}`, () => {
    if (cleanup) afterAll(cleanup);
    let seq = 0;
    const ev = (agentId: string, atMs: number, intervention: Intervention, extra: Partial<TrustDebtEvent> = {}): TrustDebtEvent => ({
      eventId: `e-${++seq}`,
      tenant: 'acme',
      agentId,
      atMs,
      kind: 'intervention',
      intervention,
      ...extra,
    });

    it('reads an unknown agent as zero debt, level normal', async () => {
      const s = await factory();
      expect(await s.current('acme', 'nobody', T0, cfg)).toEqual({ debt: 0, level: 'normal' });
    });

    it('accumulates per intervention with severity weights and reports crossings (§10.2, §10.5)', async () => {
      const s = await factory();
      const c1 = await s.apply(ev('a', T0, 'block'), cfg);
      expect(c1).toMatchObject({ before: 0, after: 0.15, level: 'normal', previousLevel: 'normal', crossings: [], duplicate: false, cause: 'intervention:block' });
      const c2 = await s.apply(ev('b', T0, 'block', { severity: 'severe' }), cfg);
      expect(c2.after).toBeCloseTo(0.75, 15);
      expect(c2.level).toBe('re_tiering_review');
      expect(c2.crossings).toEqual([
        { threshold: 'elevated_monitoring', direction: 'up' },
        { threshold: 'restricted_mode', direction: 'up' },
        { threshold: 're_tiering_review', direction: 'up' },
      ]);
      const q = await s.retierQueue();
      expect(q).toHaveLength(1);
      expect(q[0]).toMatchObject({ tenant: 'acme', agentId: 'b', eventId: c2.eventId });
      expect(q[0]!.debt).toBeCloseTo(0.75, 15);
    });

    it('queues one re-tiering request per up-crossing and resolves an agent\'s requests once (§10.6)', async () => {
      const s = await factory();
      await s.apply(ev('r1', T0, 'halt', { severity: 'critical' }), cfg); // 1.0: crosses re_tiering_review
      await s.apply(ev('r2', T0, 'halt', { severity: 'critical' }), cfg);
      await s.apply(ev('r1', T0 + 1, 'halt'), cfg); // already at the level: no second request
      await s.apply(ev('r1', T0 + 2, 'ok', { eventId: 'credit', kind: 'review_approved', credit: -0.5 }), cfg); // down to 0.5
      await s.apply(ev('r1', T0 + 3, 'halt'), cfg); // crosses up again: a second request
      expect((await s.retierQueue()).map((r) => r.agentId)).toEqual(['r1', 'r2', 'r1']);
      const resolved = await s.resolveRetier('acme', 'r1');
      expect(resolved.map((r) => [r.agentId, r.atMs])).toEqual([
        ['r1', T0],
        ['r1', T0 + 3],
      ]);
      expect((await s.retierQueue()).map((r) => r.agentId)).toEqual(['r2']);
      expect(await s.resolveRetier('acme', 'r1')).toEqual([]);
      expect(await s.resolveRetier('other-tenant', 'r2')).toEqual([]);
      expect((await s.retierQueue()).map((r) => r.agentId)).toEqual(['r2']);
    });

    it('escalate adds nothing by default and unknown severities weigh 1.0', async () => {
      const s = await factory();
      expect((await s.apply(ev('a', T0, 'escalate'), cfg)).after).toBe(0);
      expect((await s.apply(ev('a', T0, 'flag', { severity: 'mystery' }), cfg)).after).toBe(0.05);
    });

    it('severities named like Object.prototype members weigh 1.0; the debt stays finite (§10.2)', async () => {
      const s = await factory();
      const sevs = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];
      let after = 0;
      for (const sev of sevs) after = (await s.apply(ev('proto', T0, 'block', { severity: sev }), cfg)).after;
      expect(after).toBeCloseTo(0.6, 15);
      expect((await s.current('acme', 'proto', T0, cfg)).level).toBe('restricted_mode');
    });

    it('sums of increments land on the thresholds: 10 flags = 0.5, 5 blocks = 0.75, 15 nudges = 0.3 (stored debt rounded to 1e-12)', async () => {
      const s = await factory();
      // in plain doubles these sums are 0.49999999999999994, 0.7499999999999999 and 0.30000000000000004 / 0.29999999999999993
      const runs: [string, Intervention, number, number, string][] = [
        ['ten-flags', 'flag', 10, 0.5, 'restricted_mode'],
        ['five-blocks', 'block', 5, 0.75, 're_tiering_review'],
        ['fifteen-nudges', 'nudge', 15, 0.3, 'elevated_monitoring'],
      ];
      for (const [agent, intervention, times, want, level] of runs) {
        let last;
        for (let i = 0; i < times; i++) last = await s.apply(ev(agent, T0, intervention), cfg);
        expect(last!.after).toBe(want);
        expect(last!.level).toBe(level);
        expect(last!.crossings.map((c) => `${c.threshold}:${c.direction}`)).toContain(`${level}:up`);
        expect(await s.current('acme', agent, T0, cfg)).toEqual({ debt: want, level });
      }
      expect((await s.retierQueue()).map((r) => r.agentId)).toEqual(['five-blocks']);
    });

    it('caps at 1.0', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'halt', { severity: 'critical' }), cfg);
      const c = await s.apply(ev('a', T0, 'halt'), cfg);
      expect(c.before).toBe(1);
      expect(c.after).toBe(1);
    });

    it('decays lazily before the increment; current() does not write', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'halt'), cfg);
      const at = T0 + 24 * HOUR_MS;
      expect((await s.current('acme', 'a', at, cfg)).debt).toBeCloseTo(0.475, 15);
      expect((await s.current('acme', 'a', at, cfg)).debt).toBeCloseTo(0.475, 15);
      const c = await s.apply(ev('a', at, 'flag'), cfg);
      expect(c.before).toBeCloseTo(0.475, 15);
      expect(c.after).toBeCloseTo(0.525, 15);
      expect(c.crossings).toEqual([]);
      expect(c.previousLevel).toBe('restricted_mode');
    });

    it('reports decay-driven down-crossings at the next event', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'halt'), cfg);
      const c = await s.apply(ev('a', T0 + 30 * 24 * HOUR_MS, 'ok'), cfg);
      expect(c.audits).toBeUndefined();
      expect(c.previousLevel).toBe('restricted_mode');
      expect(c.level).toBe('normal');
      expect(c.crossings).toEqual([
        { threshold: 'restricted_mode', direction: 'down' },
        { threshold: 'elevated_monitoring', direction: 'down' },
      ]);
    });

    it('does not decay backwards for an out-of-order event', async () => {
      const s = await factory();
      await s.apply(ev('a', T0 + HOUR_MS, 'block'), cfg);
      const c = await s.apply(ev('a', T0, 'flag'), cfg);
      expect(c.before).toBe(0.15);
      expect(c.after).toBeCloseTo(0.2, 15);
    });

    it('applies an event id once and returns the original change on redelivery', async () => {
      const s = await factory();
      const e = ev('a', T0, 'block');
      const first = await s.apply(e, cfg);
      const again = await s.apply({ ...e, atMs: T0 + HOUR_MS, intervention: 'halt' }, cfg);
      expect(again).toEqual({ ...first, duplicate: true });
      expect((await s.current('acme', 'a', T0, cfg)).debt).toBe(0.15);
    });

    it('keeps tenants and agents apart', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'block'), cfg);
      await s.apply({ ...ev('a', T0, 'flag'), tenant: 'other' }, cfg);
      expect((await s.current('acme', 'a', T0, cfg)).debt).toBe(0.15);
      expect((await s.current('other', 'a', T0, cfg)).debt).toBe(0.05);
    });

    it('grants successful review credit, never below the floor (§10.4.1)', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'block'), cfg);
      const c = await s.apply({ eventId: 'r-1', tenant: 'acme', agentId: 'a', atMs: T0, kind: 'review_approved' }, cfg);
      expect(c.after).toBeCloseTo(0.05, 15);
      expect(c.cause).toBe('review_approved');
      const floored = trustDebtConfigFrom({ decay: { min_debt: 0.1 } });
      const c2 = await s.apply({ eventId: 'r-2', tenant: 'acme', agentId: 'a', atMs: T0, kind: 'review_approved' }, floored);
      expect(c2.after).toBe(0.1);
    });

    it('grants no good-behaviour audit unless the blueprint configures it: only decay (§10.3, spec-decisions D15)', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'block'), cfg);
      const c = await s.apply(ev('a', T0 + 168 * HOUR_MS, 'ok'), cfg);
      expect(c.audits).toBeUndefined();
      expect(c.before).toBeCloseTo(0.15 * 0.95 ** 7, 12); // the §10.3 example: 7 days → × 0.95^7
      expect(await s.sweep(T0 + 1000 * HOUR_MS, () => cfg)).toEqual([]);
      const off = trustDebtConfigFrom({ recovery: { enabled: false, good_behavior_audit: { threshold_hours: 24 } } });
      await s.apply(ev('b', T0, 'block'), off);
      expect((await s.apply(ev('b', T0 + 100 * HOUR_MS, 'ok'), off)).audits).toBeUndefined();
      expect(await s.sweep(T0 + 1000 * HOUR_MS, () => off)).toEqual([]);
    });

    it('an explicit audit_credit review event keeps the §10.4.2 credit (−0.20) without a configured audit', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'halt'), cfg);
      const c = await s.apply({ eventId: 'ac-1', tenant: 'acme', agentId: 'a', atMs: T0, kind: 'audit_credit' }, cfg);
      expect(c.after).toBeCloseTo(0.3, 15);
    });

    it('grants the good-behaviour audit lazily, once per window (§10.4.2)', async () => {
      const s = await factory();
      const cfg = audited;
      await s.apply(ev('a', T0, 'halt'), cfg);
      await s.apply(ev('a', T0 + 100 * HOUR_MS, 'ok'), cfg); // ok does not restart the window
      const at = T0 + 170 * HOUR_MS;
      const c = await s.apply(ev('a', at, 'ok'), cfg);
      expect(c.audits).toHaveLength(1);
      const audit = c.audits![0]!;
      expect(audit.cause).toBe('good_behavior_audit');
      expect(audit.atMs).toBe(T0 + 168 * HOUR_MS);
      expect(audit.eventId).toBe(`audit:acme:a:${T0 + 168 * HOUR_MS}`);
      expect(audit.before).toBeCloseTo(0.5 * 0.95 ** 7, 12);
      expect(audit.after).toBeCloseTo(0.5 * 0.95 ** 7 - 0.2, 12);
      expect(c.before).toBeCloseTo((0.5 * 0.95 ** 7 - 0.2) * 0.95 ** (2 / 24), 12);
      const c2 = await s.apply(ev('a', at + HOUR_MS, 'ok'), cfg);
      expect(c2.audits).toBeUndefined();
      const redelivered = await s.apply({ ...ev('a', at, 'ok'), eventId: c.eventId }, cfg);
      expect(redelivered.duplicate).toBe(true);
      expect(redelivered.after).toBe(c.after);
      expect(redelivered.audits?.map((x) => [x.eventId, x.after, x.duplicate])).toEqual([[audit.eventId, audit.after, true]]);
    });

    it('settles every audit window due by an event in one change, at the last credited window (§10.4.2)', async () => {
      const s = await factory();
      const daily = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 24, credit: -0.1 } } });
      await s.apply(ev('m', T0, 'halt', { severity: 'critical' }), daily); // 1.0
      const c = await s.apply(ev('m', T0 + 3 * 24 * HOUR_MS + HOUR_MS, 'ok'), daily);
      // 1 → 0.95 − 0.1 = 0.85 → 0.7075 → 0.572125, one change at the third window's end
      expect(c.audits).toHaveLength(1);
      const a = c.audits![0]!;
      expect(a).toMatchObject({ eventId: `audit:acme:m:${T0 + 72 * HOUR_MS}`, atMs: T0 + 72 * HOUR_MS, cause: 'good_behavior_audit', previousLevel: 're_tiering_review', level: 'restricted_mode' });
      expect(a.before).toBeCloseTo(0.95 ** 3, 12);
      expect(a.after).toBeCloseTo(0.572125, 12);
      expect(a.crossings).toEqual([{ threshold: 're_tiering_review', direction: 'down' }]);
      expect(c.before).toBeCloseTo(0.572125 * 0.95 ** (1 / 24), 12);
    });

    it('a non-ok intervention restarts the audit window', async () => {
      const s = await factory();
      const cfg = audited;
      await s.apply(ev('a', T0, 'halt'), cfg);
      await s.apply(ev('a', T0 + 100 * HOUR_MS, 'nudge'), cfg);
      const c = await s.apply(ev('a', T0 + 170 * HOUR_MS, 'ok'), cfg);
      expect(c.audits).toBeUndefined();
    });

    it('a review with deferAudits settles no audit window; a backlogged non-ok event can still restart it', async () => {
      const s = await factory();
      const daily = trustDebtConfigFrom({ recovery: { good_behavior_audit: { threshold_hours: 24, credit: -0.1 } } });
      await s.apply(ev('d', T0, 'halt'), daily); // 0.5, window from T0
      // a review at T0+30h while the pipeline is behind: the window [T0, T0+24h] is not credited
      const r = await s.apply({ eventId: 'rv-1', tenant: 'acme', agentId: 'd', atMs: T0 + 30 * HOUR_MS, kind: 'review_approved', deferAudits: true }, daily);
      expect(r.audits).toBeUndefined();
      expect(r.before).toBeCloseTo(0.5 * 0.95 ** (30 / 24), 12);
      // the backlogged block at T0+20h arrives: it restarts the window, so no credit is ever due for T0..T0+24h
      await s.apply(ev('d', T0 + 20 * HOUR_MS, 'block'), daily);
      const next = await s.apply(ev('d', T0 + 40 * HOUR_MS, 'ok'), daily);
      expect(next.audits).toBeUndefined();
      // without deferAudits the same review credits the window at once (the behaviour a backlog must not see)
      const t = await factory();
      await t.apply(ev('e', T0, 'halt'), daily);
      const credited = await t.apply({ eventId: 'rv-2', tenant: 'acme', agentId: 'e', atMs: T0 + 30 * HOUR_MS, kind: 'review_approved' }, daily);
      expect(credited.audits?.map((a) => a.atMs)).toEqual([T0 + 24 * HOUR_MS]);
      // deferred windows are settled by the agent's next event
      const u = await factory();
      await u.apply(ev('f', T0, 'halt'), daily);
      await u.apply({ eventId: 'rv-3', tenant: 'acme', agentId: 'f', atMs: T0 + 30 * HOUR_MS, kind: 'review_approved', deferAudits: true }, daily);
      const later = await u.apply(ev('f', T0 + 31 * HOUR_MS, 'ok'), daily);
      expect(later.audits?.map((a) => a.atMs)).toEqual([T0 + 24 * HOUR_MS]);
    });

    it('sweep and lazy audit agree and never credit twice', async () => {
      const cfg = audited;
      const lazy = await factory();
      const swept = await factory();
      for (const s of [lazy, swept]) await s.apply(ev('a', T0, 'halt'), cfg);
      const sweepAt = T0 + 200 * HOUR_MS;
      const changes = await swept.sweep(sweepAt, () => cfg);
      expect(changes.filter((c) => c.agentId === 'a')).toHaveLength(1);
      expect(await swept.sweep(sweepAt + HOUR_MS, () => cfg)).toEqual([]);
      const at = T0 + 210 * HOUR_MS;
      const a = await lazy.apply({ ...ev('a', at, 'flag'), eventId: 'same' }, cfg);
      const b = await swept.apply({ ...ev('a', at, 'flag'), eventId: 'same' }, cfg);
      expect(a.audits).toHaveLength(1);
      expect(b.audits).toBeUndefined();
      expect(b.after).toBe(a.after);
      expect(b.before).toBe(a.before);
    });

    it('keeps remediation requests pending until a reviewer decides (§10.4.3)', async () => {
      const s = await factory();
      await s.apply(ev('a', T0, 'halt'), cfg);
      const r = await s.requestRemediation('acme', 'a', { requestId: 'rq-1', reason: 'fixed prompt', atMs: T0 + 1 }, cfg);
      expect(r.status).toBe('pending');
      await s.requestRemediation('acme', 'b', { requestId: 'rq-2', reason: 'x', atMs: T0 + 2 }, cfg);
      expect((await s.pendingRemediations('acme')).map((x) => x.requestId)).toEqual(['rq-1', 'rq-2']);
      const g = await s.decideRemediation('rq-1', 'grant', { reviewer: 'alice', atMs: T0 + 3 }, cfg);
      expect(g.request).toMatchObject({ status: 'granted', reviewer: 'alice', credit: -0.1, decidedAtMs: T0 + 3 });
      expect(g.change?.after).toBeCloseTo(g.change!.before - 0.1, 15);
      expect(g.change?.cause).toBe('remediation_granted');
      const again = await s.decideRemediation('rq-1', 'grant', { reviewer: 'alice', atMs: T0 + 4 }, cfg);
      expect(again.change?.duplicate).toBe(true);
      expect((await s.current('acme', 'a', T0 + 3, cfg)).debt).toBe(g.change!.after);
      await expect(s.decideRemediation('rq-1', 'deny', { reviewer: 'bob', atMs: T0 + 5 }, cfg)).rejects.toMatchObject({ code: 'STEWARD_REMEDIATION' });
      const d = await s.decideRemediation('rq-2', 'deny', { reviewer: 'bob', atMs: T0 + 5 }, cfg);
      expect(d.change).toBeUndefined();
      expect(await s.pendingRemediations()).toEqual([]);
      expect((await s.getRemediation('rq-2'))?.status).toBe('denied');
      await expect(s.decideRemediation('nope', 'grant', { reviewer: 'x', atMs: T0 }, cfg)).rejects.toMatchObject({ code: 'STEWARD_REMEDIATION' });
    });

    it('refuses remediation requests when the blueprint disables them', async () => {
      const s = await factory();
      const off = trustDebtConfigFrom({ recovery: { agent_remediation_request: false } });
      await expect(s.requestRemediation('acme', 'a', { requestId: 'rq-x', reason: 'r', atMs: T0 }, off)).rejects.toMatchObject({ code: 'STEWARD_REMEDIATION' });
    });

    it('moves nothing when trust debt is disabled', async () => {
      const s = await factory();
      const off = trustDebtConfigFrom({ enabled: false });
      const c = await s.apply(ev('a', T0, 'halt'), off);
      expect(c.after).toBe(0);
      expect((await s.current('acme', 'a', T0, cfg)).debt).toBe(0);
    });
  });
}
