import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_RUNTIME_LIMITS, scanDraft, tier1Scope } from '../../../../src/engine/gate/index.js';
import { blocklistHits, keywordPattern, keywordText } from '../../../../src/engine/gate/keywords.js';
import type { AgentInfo, Trace } from '../../../../src/engine/types.js';
import { compileOne } from './helpers.js';

// The keyword blocklist reads a phrase however the draft spaces or hides it (audit #20 r2 finding 4, D47).
const agent: AgentInfo = { id: 'a', tenant: 't', tier: 'ACL-2', tools: [], domains: [], registered: true };
const trace: Trace = { trace_id: 't1', agent_id: 'a', timestamp: '2026-01-01T00:00:00Z', hook: 'final_answer', job_id: 'j' };
const settings = (list: string) => compileOne(`id: s@1.0\nversion: "1.0.0"\ndescription: s\nfinalization_gate:\n  keyword_blocklist: ${list}\n`).gate!.settings;
const scope = tier1Scope({ settings: settings('[project nightingale, "$$", secret]'), skills: {}, tier1: [], workflows: [], style: [] }, undefined);
const hits = (draft: string) => scanDraft(draft, { trace, agent, nowMs: 0 }, scope, DEFAULT_GATE_RUNTIME_LIMITS).filter((h) => h.kind === 'keyword').map((h) => h.id);
const nightingale = (draft: string) => expect(hits(draft), JSON.stringify(draft)).toEqual(['project nightingale']);

describe('keyword blocklist: the whitespace between the words of a phrase', () => {
  it('any run of spaces and line breaks', () => {
    nightingale('Status of Project Nightingale: on track.');
    nightingale('Status of Project  Nightingale: on track.');
    nightingale('Status of Project\nNightingale: on track.');
    nightingale('Status of Project\r\n\tNightingale.');
    nightingale('Status of Project \n \n Nightingale.');
  });
  it('Unicode spaces and separators: no-break, em, ideographic, line separator, NEL, vertical tab', () => {
    nightingale('Status of Project\u00a0Nightingale.');
    nightingale('Status of Project\u2003Nightingale.');
    nightingale('Status of Project\u202fNightingale.');
    nightingale('Status of Project\u3000Nightingale.');
    nightingale('Status of Project\u2028Nightingale.');
    nightingale('Status of Project\u0085Nightingale.');
    nightingale('Status of Project\u000bNightingale.');
  });
  it('blank fillers between words read as a gap: Hangul fillers U+115F, U+1160, U+3164, U+FFA0 and the Braille blank U+2800 (gate review finding 7)', () => {
    for (const f of ['\u115f', '\u1160', '\u3164', '\uffa0', '\u2800']) {
      nightingale(`the project${f}nightingale plan`);
      nightingale(`the project ${f} nightingale plan`);
      nightingale(`the project${f}\u200bnightingale plan`);
      // folded to a space, not dropped: they never join the words they separate
      expect(keywordText(`project${f}nightingale`)).toBe('project nightingale');
      expect(hits(`the project${f}nightingales plan`)).toEqual([]);
    }
    // a keyword written with a filler is its words
    expect(keywordPattern('project\u3164nightingale')!.test('the project nightingale plan')).toBe(true);
    expect(keywordPattern('\u3164\u2800')).toBeUndefined();
  });
  it('words still need a gap and word boundaries', () => {
    expect(hits('ProjectNightingale')).toEqual([]);
    expect(hits('Project-Nightingale')).toEqual([]);
    expect(hits('project nightingales')).toEqual([]);
    expect(hits('subproject nightingale')).toEqual([]);
    expect(hits('the nightingale project')).toEqual([]);
    expect(hits('secretary')).toEqual([]);
  });
});

describe('keyword blocklist: invisible characters and compatibility forms', () => {
  it('format / default-ignorable characters inside a word are read as nothing', () => {
    nightingale('Status of Project Night\u200bingale.'); // zero-width space
    nightingale('Status of Project Night\u00adingale.'); // soft hyphen
    nightingale('Status of Pro\u200dject Night\u2060ingale.'); // zero-width joiner, word joiner
    nightingale('Status of \ufeffProject Nightingale\ufe0f.'); // BOM, variation selector
    nightingale('Status of Project Night\u{e0041}ingale.'); // a tag character (astral)
    nightingale('Status of Project \u200bNightingale.'); // beside a space
  });
  it('fullwidth and other NFKC compatibility letters', () => {
    nightingale('Status of \uff30roject \uff2eightingale.');
    nightingale('Status of \uff30\uff32\uff2f\uff2a\uff25\uff23\uff34\u3000\uff2e\uff29\uff27\uff28\uff34\uff29\uff2e\uff27\uff21\uff2c\uff25.');
    nightingale('Status of \u{1d40f}roject Nightingale.'); // mathematical bold P
    expect(hits('pay \uff04\uff04 now')).toEqual(['$$']);
  });
  it('an invisible character that keeps words apart in the text as sent still counts', () => {
    // As sent the zero-width space is a boundary before "project"; folded it would join "x" to it. Either reading hits.
    nightingale('x\u200bproject nightingale');
  });
  it('clean non-ASCII text does not hit', () => {
    expect(hits('Das Projekt Nachtigall läuft\u00a0gut, 日本語のテキスト.')).toEqual([]);
    expect(hits('Project\u200bNightingale')).toEqual([]); // shows as "ProjectNightingale"
  });
});

describe('keyword blocklist: compiling and matching', () => {
  it('the keyword is read the same way: its own spacing, case and fullwidth forms do not matter', () => {
    const k = keywordPattern(' PROJECT \u3000 ＮIGHTINGALE ')!;
    expect(k.id).toBe(' PROJECT \u3000 ＮIGHTINGALE ');
    expect(blocklistHits('project\n\nnightingale', [k])).toEqual([k]);
    expect(keywordPattern(' \u200b ')).toBeUndefined();
  });
  it('keywordText folds only what needs it: ASCII text comes back as is', () => {
    const s = 'plain ascii text';
    expect(keywordText(s)).toBe(s);
    expect(keywordText('A\u00adB\uff23')).toBe('ABC');
    expect(keywordText('\u2163 \ufb01 \u00bd')).toBe('IV fi 1\u20442');
    expect(keywordText('\u00e9')).toBe('\u00e9');
  });
  it('accented letters of a keyword match composed or decomposed, with invisible characters between', () => {
    const k = keywordPattern('caf\u00e9 noir')!;
    for (const t of ['caf\u00e9 noir', 'cafe\u0301 noir', 'cafe\u200b\u0301 noir', 'CAF\u00c9\u00a0NOIR', '\uff43af\u00e9 noir']) expect(blocklistHits(t, [k]), JSON.stringify(t)).toEqual([k]);
    expect(blocklistHits('cafe noir', [k])).toEqual([]);
  });
  it('stays linear: a run of combining marks (quadratic for String.normalize) and 1 MB of invisible characters', () => {
    // String.prototype.normalize took 11 s on 400 000 alternating combining marks; the fold is one lookup per character.
    const marks = 'project ' + '\u0301\u0316'.repeat(200_000) + ' nightingale';
    expect(blocklistHits(marks, [keywordPattern('project nightingale')!], 1_000_000)).toEqual([]);
    expect(blocklistHits('project \u200b'.repeat(100_000) + 'nightingale', [keywordPattern('project nightingale')!], 1_000_000)!.map((k) => k.id)).toEqual(['project nightingale']);
  });
  it('a draft whose folded reading outgrows the scan limit fails closed (one character may unfold to 18)', () => {
    expect(keywordText('\ufdfa'.repeat(10), 100)).toBeUndefined();
    expect(keywordText('\ufdfa'.repeat(5), 100)).toHaveLength(90);
    const h = scanDraft('\ufdfa'.repeat(60_000), { trace, agent, nowMs: 0 }, scope, DEFAULT_GATE_RUNTIME_LIMITS);
    expect(h).toEqual([expect.objectContaining({ kind: 'scan_limit', id: 'max_scan_chars' })]);
    // Without a blocklist nothing is folded: the same draft is not a hit.
    expect(scanDraft('\ufdfa'.repeat(60_000), { trace, agent, nowMs: 0 }, tier1Scope({ settings: settings('[]'), skills: {}, tier1: [], workflows: [], style: [] }, undefined), DEFAULT_GATE_RUNTIME_LIMITS)).toEqual([]);
  });
  it('reports every entry hit, each once, in list order', () => {
    expect(hits('the Secret of Ｐroject Nightingale costs $$')).toEqual(['project nightingale', '$$', 'secret']);
  });
  it('an entry of only spaces or invisible characters is a load error at its position', () => {
    const yaml = (list: string) => `id: s@1.0\nversion: "1.0.0"\ndescription: s\nfinalization_gate:\n  keyword_blocklist:\n    - ok\n    - ${list}\n`;
    expect(() => compileOne(yaml('" "'))).toThrow(/^gate-test\.yaml:7:7: STEWARD_GATE_CONFIG: keyword_blocklist entry " " has no words/);
    expect(() => compileOne(yaml('"\\u200b"'))).toThrow(/^gate-test\.yaml:7:7: STEWARD_GATE_CONFIG: keyword_blocklist entry "\u200b" has no words/);
  });
});
