/**
 * Calibration statistics (ACGP-1004 §7.6): correlation of CTQ with ground-truth labels, a confusion
 * matrix of the current decisions, and risk thresholds suggested from the labelled data.
 * Labels map to pass = 1, borderline = 0.5, fail = 0; decisions to pass (ok, nudge), borderline
 * (flag, escalate) and fail (block, halt).
 */
import type { Intervention } from '../engine/types.js';

export const LABELS = ['pass', 'borderline', 'fail'] as const;
export type Label = (typeof LABELS)[number];

export interface CalibrationPoint {
  label: Label;
  ctq: number | null;
  intervention: Intervention;
}

export interface CalibrationReport {
  n: number;
  scored: number;
  byLabel: Record<Label, number>;
  /** Pearson correlation of CTQ with the label value; null with < 2 scored points or no variance. */
  correlation: number | null;
  /** Spearman rank correlation (robust to a judge's non-linear scale). */
  spearman: number | null;
  confusion: Record<Label, Record<Label, number>>;
  accuracy: number;
  /** Risk-space boundaries that best separate the labels in this dataset; null when a class is missing. */
  suggested: { ok: number; nudge: number; escalate: number; block: number } | null;
}

const VALUE: Record<Label, number> = { pass: 1, borderline: 0.5, fail: 0 };

export function predictedLabel(i: Intervention): Label {
  if (i === 'ok' || i === 'nudge') return 'pass';
  if (i === 'flag' || i === 'escalate') return 'borderline';
  return 'fail';
}

export function pearson(xs: number[], ys: number[]): number | null {
  const n = xs.length;
  if (n < 2) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  return sxx === 0 || syy === 0 ? null : sxy / Math.sqrt(sxx * syy);
}

function ranks(xs: number[]): number[] {
  const idx = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const r = new Array<number>(xs.length);
  for (let i = 0; i < idx.length; ) {
    let j = i;
    while (j + 1 < idx.length && idx[j + 1][0] === idx[i][0]) j++;
    for (let k = i; k <= j; k++) r[idx[k][1]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return r;
}

/** Best cut on risk: "positive" points should have risk <= cut. Maximises balanced accuracy. */
export function bestCut(risksPos: number[], risksNeg: number[]): number | null {
  if (risksPos.length === 0 || risksNeg.length === 0) return null;
  const cands = [...new Set([...risksPos, ...risksNeg])].sort((a, b) => a - b);
  let best = { cut: cands[0], score: -1 };
  for (let i = 0; i < cands.length; i++) {
    const cut = cands[i];
    const tpr = risksPos.filter((r) => r <= cut).length / risksPos.length;
    const tnr = risksNeg.filter((r) => r > cut).length / risksNeg.length;
    const score = (tpr + tnr) / 2;
    if (score > best.score) best = { cut: i + 1 < cands.length ? (cut + cands[i + 1]) / 2 : cut, score };
  }
  return Math.round(best.cut * 1000) / 1000;
}

export function calibrate(points: CalibrationPoint[]): CalibrationReport {
  const byLabel = { pass: 0, borderline: 0, fail: 0 } as Record<Label, number>;
  const confusion = Object.fromEntries(LABELS.map((l) => [l, { pass: 0, borderline: 0, fail: 0 }])) as Record<Label, Record<Label, number>>;
  let correct = 0;
  for (const p of points) {
    byLabel[p.label]++;
    const pred = predictedLabel(p.intervention);
    confusion[p.label][pred]++;
    if (pred === p.label) correct++;
  }
  const scored = points.filter((p): p is CalibrationPoint & { ctq: number } => p.ctq !== null);
  const xs = scored.map((p) => p.ctq);
  const ys = scored.map((p) => VALUE[p.label]);
  const risk = (l: Label[]) => scored.filter((p) => l.includes(p.label)).map((p) => 1 - p.ctq);
  const ok = bestCut(risk(['pass']), risk(['borderline', 'fail']));
  const block = bestCut(risk(['pass', 'borderline']), risk(['fail']));
  let suggested: CalibrationReport['suggested'] = null;
  if (ok !== null && block !== null) {
    const lo = Math.min(ok, block);
    const hi = Math.max(ok, block);
    const r3 = (x: number) => Math.round(x * 1000) / 1000;
    // ok separates pass from the rest; the escalate/block boundary separates fail from the rest.
    suggested = { ok: r3(lo), nudge: r3(lo + (hi - lo) / 2), escalate: r3(hi), block: r3(hi) };
  }
  return {
    n: points.length,
    scored: scored.length,
    byLabel,
    correlation: round(pearson(xs, ys)),
    spearman: round(pearson(ranks(xs), ranks(ys))),
    confusion,
    accuracy: points.length ? Math.round((correct / points.length) * 1000) / 1000 : 0,
    suggested,
  };
}

const round = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);

export function formatReport(r: CalibrationReport, expected: number): string {
  const lines = [
    `dataset: ${r.n} labelled trace(s) (pass ${r.byLabel.pass}, borderline ${r.byLabel.borderline}, fail ${r.byLabel.fail}); ${r.scored} with a CTQ`,
    `correlation (Pearson, CTQ vs label): ${r.correlation ?? 'n/a'}  (Spearman ${r.spearman ?? 'n/a'}; expected >= ${expected}${r.correlation !== null && r.correlation < expected ? ' — BELOW EXPECTATION' : ''})`,
    '',
    'confusion matrix at current thresholds (rows = label, columns = decision: pass = ok/nudge, borderline = flag/escalate, fail = block/halt)',
    `  ${'label'.padEnd(11)}${LABELS.map((l) => l.padStart(11)).join('')}`,
    ...LABELS.map((l) => `  ${l.padEnd(11)}${LABELS.map((c) => String(r.confusion[l][c]).padStart(11)).join('')}`),
    `  accuracy: ${r.accuracy}`,
    '',
  ];
  if (r.suggested) {
    lines.push('suggested risk thresholds (scoring.thresholds, risk = 1 - CTQ; the stricter-of rule with the ACL tier still applies):');
    lines.push(`  scoring:\n    thresholds:\n      ok: ${r.suggested.ok}\n      nudge: ${r.suggested.nudge}\n      escalate: ${r.suggested.escalate}\n      block: ${r.suggested.block}`);
  } else lines.push('suggested thresholds: n/a (need scored traces labelled pass and fail)');
  return lines.join('\n');
}
