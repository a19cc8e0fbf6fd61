// LLM answers are parsed without a backtracking regex (review finding 9): the old fence pattern took ~4 s on
// "```" + 2 000 spaces and grew ~cubically (11 s on 3 000, 7 s on the 1 500 " \n" pairs below, measured). The
// inputs are bounded so that a regression fails on the test timeout within seconds to a minute, rather than
// blocking the worker for hours (a synchronous regex cannot be interrupted); the fix takes microseconds.
import { describe, expect, it } from 'vitest';
import { jsonAnswerBody } from '../../../src/engine/json-fence.js';
import { parseJudgeOutput } from '../../../src/engine/gate/judge.js';
import { parseJsonAnswer } from '../../../src/engine/rules/prompts.js';
import { parseJudgeAnswer } from '../../../src/engine/scorers/llm-judge.js';

const PATHOLOGICAL = ['```' + ' '.repeat(3_000), '```json' + ' \n'.repeat(1_500) + 'x'];

describe('jsonAnswerBody', () => {
  it('unwraps one fence, with or without the json tag, and leaves bare JSON alone', () => {
    expect(jsonAnswerBody('```json\n{"a": 1}\n```')).toBe('{"a": 1}');
    expect(jsonAnswerBody('  ```\n{"a": 1}\n```  \n')).toBe('{"a": 1}');
    expect(jsonAnswerBody('```json{"a":1}```')).toBe('{"a":1}');
    expect(jsonAnswerBody(' {"a": 1} ')).toBe('{"a": 1}');
    expect(jsonAnswerBody('``````')).toBe('');
    // A lone or unclosed fence is not a fence: the text is returned (and fails JSON.parse later).
    expect(jsonAnswerBody('```')).toBe('```');
    expect(jsonAnswerBody('```json {"a": 1}')).toBe('```json {"a": 1}');
  });

  it('pathological whitespace runs finish (linear) and yield no JSON in every parser', () => {
    for (const text of PATHOLOGICAL) {
      expect(parseJsonAnswer(text)).toBeUndefined();
      expect(() => parseJudgeAnswer(text)).toThrow(/not JSON/);
      expect(() => parseJudgeOutput(text, new Set())).toThrow(/not JSON/);
    }
  });

  it('a large fenced answer is unwrapped whole', () => {
    const big = { condition: 'args.amount <= 500', pad: ' '.repeat(200_000) };
    expect(parseJsonAnswer('```json\n' + JSON.stringify(big) + '\n' + ' '.repeat(50_000) + '```')).toEqual(big);
  });
});
