/**
 * Parse stage: YAML 1.2 / JSON text → plain value plus a position map (JSON path → line:col).
 * JSON is parsed by the same YAML 1.2 parser (JSON is a YAML 1.2 subset), so both formats share one
 * position model and one set of syntax errors.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { StewardError, type SourcePosition } from '../../errors.js';

export type PathSeg = string | number;

export interface SourceDoc {
  file: string;
  text: string;
  value: unknown;
  /** Position of the value at `path`; `key: true` gives the key's own position (unknown keys). Falls back to the deepest existing ancestor. */
  pos(path: readonly PathSeg[], opts?: { key?: boolean }): SourcePosition;
  /** Position of a character offset inside the scalar at `path` (DSL problems): accounts for the opening quote. */
  posInScalar(path: readonly PathSeg[], offset: number): SourcePosition;
}

export function formatPath(path: readonly PathSeg[]): string {
  let s = '$';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
  return s;
}

interface Found {
  node?: YamlNode;
  keyNode?: YamlNode;
  depth: number;
}

function walk(root: YamlNode | null | undefined, path: readonly PathSeg[]): Found {
  let node: unknown = root;
  let keyNode: YamlNode | undefined;
  let depth = 0;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((it) => isPair(it) && (isScalar(it.key) ? String(it.key.value) : String(it.key)) === String(seg));
      if (!pair) break;
      keyNode = pair.key as YamlNode;
      node = pair.value ?? pair.key;
    } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
      keyNode = undefined;
      node = node.items[seg];
    } else break;
    depth++;
  }
  return { node: (node ?? undefined) as YamlNode | undefined, keyNode, depth };
}

type ScalarKind = 'plain' | 'double' | 'single' | 'block';

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';

/**
 * The end of the source text `[start, end)` as SourcePosition fields (`endLine`/`endCol`: 1-based, exclusive,
 * the position just after the last character), trailing blanks left out so a block scalar's final line break
 * does not carry the range onto the next line. Nothing when the range is empty.
 */
export function rangeEnd(text: string, lineCounter: LineCounter, start: number, end: number | undefined): Pick<SourcePosition, 'endLine' | 'endCol'> {
  if (end === undefined) return {};
  let e = Math.min(end, text.length);
  while (e > start && isSpace(text[e - 1])) e--;
  if (e <= start) return {};
  const { line, col } = lineCounter.linePos(e);
  return { endLine: line, endCol: col };
}

/** Source characters one value character at `s` takes (an escape, a doubled quote, else 1). */
function charWidth(text: string, s: number, kind: ScalarKind): number {
  if (kind === 'double' && text[s] === '\\') {
    const c = text[s + 1];
    return c === 'x' ? 4 : c === 'u' ? 6 : c === 'U' ? 10 : 2;
  }
  return kind === 'single' && text[s] === "'" && text[s + 1] === "'" ? 2 : 1;
}

/**
 * Maps an offset in a scalar's value to its offset in the source by walking both in step from `from` (the
 * first content character) to `end`. Non-blank value characters always land on their own source character:
 * source whitespace the value does not have (block indentation, folded line breaks, a quoted scalar's
 * continuation lines) is skipped, escapes (`\\n`, `\\"`, `\\xNN`, `\\uNNNN`, `\\UNNNNNNNN`, an escaped line
 * break in double quotes; `''` in single quotes) count as the one value character they stand for. Blank value
 * characters take the next source blank, so only positions on whitespace can be approximate.
 */
function sourceOffset(text: string, from: number, end: number, value: string, valueOffset: number, kind: ScalarKind): number {
  // An offset in the value's trailing blanks (a block scalar's final line break, the end of the expression)
  // points just after its last non-blank character, not at the next line.
  const last = value.trimEnd().length;
  if (valueOffset >= last && last > 0) {
    const p = sourceOffset(text, from, end, value, last - 1, kind);
    return Math.min(p + charWidth(text, p, kind), end);
  }
  let s = from;
  let extra = 0;
  /** Consumes the source of one value character (an escape, a doubled quote, or one character). */
  const step = (): void => {
    // \U above U+FFFF is two UTF-16 units of the value for one escape of the source.
    if (kind === 'double' && text[s] === '\\' && text[s + 1] === 'U' && parseInt(text.slice(s + 2, s + 10), 16) > 0xffff) extra = 1;
    s += charWidth(text, s, kind);
  };
  const skipBlanks = (): void => {
    for (;;) {
      if (s < end && isSpace(text[s])) s++;
      else if (kind === 'double' && text[s] === '\\' && (text[s + 1] === '\n' || text[s + 1] === '\r')) s += 2;
      else return;
    }
  };
  for (let v = 0; v < valueOffset && s < end; v++) {
    if (extra > 0) {
      extra--;
      continue;
    }
    const escaped = (kind === 'double' && text[s] === '\\' && text[s + 1] !== '\n' && text[s + 1] !== '\r') || (kind === 'single' && text[s] === "'" && text[s + 1] === "'");
    if (escaped) step();
    else if (isSpace(value[v])) {
      if (isSpace(text[s])) s++;
    } else {
      skipBlanks();
      step();
    }
  }
  // The character at the offset itself: step over blanks the value does not have (not for a blank value character).
  if (!isSpace(value[valueOffset]) && s < end) {
    const save = s;
    skipBlanks();
    if (s >= end) s = save;
  }
  return Math.min(s, end);
}

/**
 * First RFC 8259 violation in `text` with its offset (Node's JSON.parse does not always say where).
 * A small recursive scan; nesting is bounded so a hostile file cannot overflow the stack.
 */
export function strictJsonError(text: string): { message: string; offset: number } | undefined {
  let i = 0;
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const fail = (message: string): never => {
    throw { message, offset: i };
  };
  const found = () => (i >= text.length ? 'end of input' : JSON.stringify(text[i]));
  const str = () => {
    i++;
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail('control character in string');
      if (text[i] === '\\') {
        i++;
        if (text[i] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail('bad \\u escape');
          i += 5;
        } else if (text[i] !== undefined && '"\\/bfnrt'.includes(text[i]!)) i++;
        else fail('bad escape');
      } else i++;
    }
    if (i >= text.length) fail('unterminated string');
    i++;
  };
  const value = (depth: number): void => {
    if (depth > 512) fail('nested too deeply');
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      ws();
      if (text[i] === close) return void i++;
      for (;;) {
        if (c === '{') {
          ws();
          if (text[i] !== '"') fail(`expected a double-quoted property name, found ${found()}`);
          str();
          ws();
          if (text[i] !== ':') fail(`expected ':', found ${found()}`);
          i++;
        }
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          ws();
          if (text[i] === close) fail(`trailing comma before ${close}`);
          continue;
        }
        if (text[i] === close) return void i++;
        fail(`expected ',' or '${close}', found ${found()}`);
      }
    }
    if (c === '"') return str();
    const lit = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!lit) fail(`unexpected ${found()}`);
    i += lit![0].length;
  };
  try {
    value(0);
    ws();
    if (i < text.length) fail(`unexpected ${found()} after the JSON value`);
    return undefined;
  } catch (e) {
    return e as { message: string; offset: number };
  }
}

export function parseSource(file: string, text: string): { doc?: SourceDoc; errors: StewardError[] } {
  const lineCounter = new LineCounter();
  const ydoc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, version: '1.2', schema: 'core', keepSourceTokens: false });
  const at = (offset: number): { line: number; col: number } => lineCounter.linePos(offset);
  const errors: StewardError[] = [];
  for (const e of ydoc.errors) {
    const { line, col } = at(e.pos[0]);
    const msg = e.message.split('\n')[0];
    errors.push(new StewardError('STEWARD_BLUEPRINT_SYNTAX', `invalid YAML/JSON: ${msg}`, { position: { file, line, col, ...rangeEnd(text, lineCounter, e.pos[0], e.pos[1]) } }));
  }
  if (errors.length) return { errors };
  // YAML 1.2 reads JSON, but also what JSON forbids (trailing commas, comments, single quotes, bare words):
  // a .json file must be JSON, or other JSON tools would disagree with us about the policy.
  if (file.toLowerCase().endsWith('.json')) {
    const bad = strictJsonError(text);
    if (bad) return { errors: [new StewardError('STEWARD_BLUEPRINT_SYNTAX', `invalid JSON: ${bad.message}`, { position: { file, ...at(bad.offset), ...rangeEnd(text, lineCounter, bad.offset, bad.offset + 1) } })] };
  }
  let value: unknown;
  try {
    value = ydoc.toJS({ maxAliasCount: 100 }) as unknown;
  } catch (e) {
    // Unresolved aliases and alias bombs surface only when converting.
    return { errors: [new StewardError('STEWARD_BLUEPRINT_SYNTAX', `invalid YAML: ${(e as Error).message}`, { position: { file, line: 1, col: 1 } })] };
  }

  const pos = (path: readonly PathSeg[], opts: { key?: boolean } = {}): SourcePosition => {
    const f = walk(ydoc.contents, path);
    const n = opts.key && f.depth === path.length && f.keyNode ? f.keyNode : f.node;
    const off = n?.range?.[0] ?? 0;
    // range = [start, value end, node end]: the value end leaves out a trailing comment.
    return { file, ...at(off), ...rangeEnd(text, lineCounter, off, n?.range?.[1]), path: formatPath(path) };
  };
  const posInScalar = (path: readonly PathSeg[], offset: number): SourcePosition => {
    const f = walk(ydoc.contents, path);
    const n = f.node;
    if (!n || !isScalar(n) || f.depth !== path.length) return { ...pos(path), offset };
    const [start = 0, end = text.length] = n.range ?? [];
    let from = start;
    let kind: ScalarKind = 'plain';
    if (n.type === 'QUOTE_DOUBLE' || n.type === 'QUOTE_SINGLE') {
      from = start + 1;
      kind = n.type === 'QUOTE_DOUBLE' ? 'double' : 'single';
    } else if (n.type === 'BLOCK_LITERAL' || n.type === 'BLOCK_FOLDED') {
      // Content starts on the line after the header (`|`, `>-`, `|2 # comment`).
      const nl = text.indexOf('\n', start);
      from = nl < 0 ? end : nl + 1;
      kind = 'block';
    }
    // From the offending character to the end of the expression: the DSL reports where a problem starts, not its length.
    const at0 = sourceOffset(text, from, end, String(n.value), offset, kind);
    const contentEnd = n.range?.[1] === undefined ? undefined : kind === 'double' || kind === 'single' ? n.range[1] - 1 : n.range[1];
    return { file, ...at(at0), ...rangeEnd(text, lineCounter, at0, contentEnd), path: formatPath(path), offset };
  };
  return { doc: { file, text, value, pos, posInScalar }, errors };
}
