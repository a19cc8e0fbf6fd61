import { describe, expect, it } from 'vitest';
import { decisionFeedback, oversightMode, verdictFeedback } from '../../../../src/adapters/http/acgp-feedback.js';

describe('acgp feedback and oversight (D43)', () => {
  it('the oversight mode is the stricter of the decision and the CTQ band', () => {
    const table: [string, number | null, string][] = [
      ['ok', null, 'socratic_philosopher'],
      ['nudge', null, 'wise_critic'],
      ['flag', null, 'wise_critic'],
      ['escalate', null, 'strict_guardian'],
      ['block', null, 'strict_guardian'],
      ['halt', null, 'strict_guardian'],
      ['ok', 0.71, 'socratic_philosopher'],
      ['ok', 0.7, 'wise_critic'],
      ['ok', 0.5, 'wise_critic'],
      ['ok', 0.49, 'strict_guardian'],
      ['nudge', 0.9, 'wise_critic'],
      ['block', 0.95, 'strict_guardian'],
      ['flag', 0.3, 'strict_guardian'],
    ];
    for (const [i, ctq, mode] of table) expect(oversightMode(i, ctq), `${i} ${ctq}`).toBe(mode);
  });

  it('decision and verdict feedback objects carry what the client shows', () => {
    expect(decisionFeedback({ intervention: 'block', approved: false, halted: false, reasons: ['PII detected in output'] })).toEqual({
      source: 'decision',
      intervention: 'block',
      approved: false,
      halted: false,
      reasons: ['PII detected in output'],
      oversight_mode: 'strict_guardian',
    });
    expect(verdictFeedback({ intervention: 'ok', approved: 1, ctq: 0.8, risk: 0.2 })).toEqual({ source: 'verdict', intervention: 'ok', approved: true, ctq: 0.8, risk: 0.2, oversight_mode: 'socratic_philosopher' });
  });
});
