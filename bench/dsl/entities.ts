/**
 * bench:dsl entities — every contains_entity detector on 1 MB inputs (the default max trace size)
 * built to defeat a backtracking scan: long runs of `a@`, `a@a.a`, 63-character local parts,
 * dots, digits, digit groups, colons, IBAN and JWT prefixes, PEM words, random base62, prose.
 * In-memory conditions are never cut short, so these times are what a tier-0 tripwire pays
 * (budget 50 ms). Prints the median of 5 runs per detector and input, the worst per detector,
 * and `entities_worst_ms=<max>` last. Not part of the unit tests: timings depend on the machine.
 *
 * Usage: npx tsx bench/dsl/entities.ts [module path] [skip input names, comma-separated]
 * (a module path lets an older copy of entities.ts be measured the same way).
 */
import { ENTITY_DETECTORS } from '../../src/engine/dsl/entities.js';

type Detectors = Record<string, (text: string) => boolean>;

const MB = 1_000_000;
// Flat one-byte strings, like JSON.parse output (repeat() builds a rope that charCodeAt flattens).
const rep = (unit: string): string => Buffer.from(unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB)).toString();

function random(alphabet: string, seed: number): string {
  let x = seed;
  const out: string[] = [];
  for (let i = 0; i < MB; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out.push(alphabet[(x >>> 16) % alphabet.length]!);
  }
  return out.join('');
}

const B62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const INPUTS: Record<string, string> = {
  letters: rep('a'),
  digits: rep('4'),
  digitsSpaced: rep('1 '),
  dashes: rep('1-'),
  dots: rep('1.'),
  cardGroups: rep('4111 '),
  cardGroups3: rep('411 '),
  ats: rep('a@'),
  emails: rep('a@a.a'),
  localParts: rep('a'.repeat(63) + '@'),
  domainDashes: 'a@' + rep('a-'),
  domainDots: 'x@' + rep('a.'),
  colons: rep('a:'),
  hexColons: rep('fe80::'),
  ibanPrefixes: rep('GB82 '),
  ibanGroups: 'GB82 ' + rep('WEST '),
  aba: rep('021000021 '),
  phones: rep('(212) '),
  jwtDashes: rep('eyJ-'),
  pemWords: '-----BEGIN ' + rep('A '),
  hex40: rep('3f786850e387550fdab836ed7e6dc881de23001b '),
  tokens25: rep('aB3xK9mQ2zL7pR4tV8wY1cN6 '),
  base62: random(B62, 1),
  base62Spaced: random(B62 + '      ', 2),
  prose: rep('The quick brown fox jumps over the lazy dog, 42 times. '),
  // #20 audit: card groups joined by dots / no-break spaces, SSN labels before near-miss numbers, URL userinfo.
  dottedGroups: rep('4111.'),
  nbspGroups: rep('4111\u00a0'),
  ssnLabels: rep('SSN: 12345678 '),
  ssnNines: rep('ssn 000000000 '),
  schemes: rep('a://'),
  userinfos: rep('ab://u:p'),
  wideGroups: rep('４１１１ '),
  // #20 review: digits of other scripts, format characters, `_`/`/` card separators, non-ASCII text that is neither.
  arabicGroups: rep('\u0664\u0661\u0661\u0661 '),
  mathDigits: rep('𝟒𝟏𝟏𝟏 '),
  zwspGroups: rep('4111\u200b'),
  slashGroups: rep('4111/'),
  emoji: rep('🤔 1234 '),
  cjk: rep('注文番号は１２３です。'),
  ssnFillers: rep('SSN is no number of the 219099998 '),
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const [modulePath, skipArg] = process.argv.slice(2);
  const detectors: Detectors = modulePath ? ((await import(modulePath)) as { ENTITY_DETECTORS: Detectors }).ENTITY_DETECTORS : ENTITY_DETECTORS;
  const skip = new Set((skipArg ?? '').split(',').filter(Boolean));
  const worst: Record<string, { input: string; ms: number }> = {};
  for (const [name, text] of Object.entries(INPUTS)) {
    if (skip.has(name)) continue;
    const row: string[] = [];
    for (const [type, detect] of Object.entries(detectors)) {
      detect(text); // warm-up
      const times: number[] = [];
      for (let r = 0; r < 5; r++) {
        const t0 = performance.now();
        detect(text);
        times.push(performance.now() - t0);
      }
      const ms = median(times);
      row.push(`${type}=${ms.toFixed(1)}`);
      if (!worst[type] || worst[type].ms < ms) worst[type] = { input: name, ms };
    }
    console.log(name.padEnd(14), row.join(' '));
  }
  console.log('worst per detector (ms, median of 5):');
  for (const [type, w] of Object.entries(worst)) console.log(`  ${type.padEnd(13)} ${w.ms.toFixed(1).padStart(7)}  (${w.input})`);
  console.log(`entities_worst_ms=${Math.max(...Object.values(worst).map((w) => w.ms)).toFixed(1)}`);
}

void main();
