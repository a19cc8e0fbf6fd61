/**
 * The JSON body of an LLM answer: bare JSON, or one ```json (or bare ```) fence around it. Done with
 * startsWith/endsWith/slice rather than a regex: the obvious pattern (`^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$`)
 * backtracks super-linearly on answers with long whitespace runs (~4 s on "```" + 2 000 spaces), and
 * these strings come from a model, so their shape is not ours to choose. Linear in the text's length.
 */
const FENCE = '```';

/** The text inside one surrounding fence (an optional `json` tag dropped), trimmed; else the trimmed text. */
export function jsonAnswerBody(text: string): string {
  const t = text.trim();
  if (t.length < 2 * FENCE.length || !t.startsWith(FENCE) || !t.endsWith(FENCE)) return t;
  let inner = t.slice(FENCE.length, t.length - FENCE.length);
  if (inner.startsWith('json')) inner = inner.slice('json'.length);
  return inner.trim();
}
