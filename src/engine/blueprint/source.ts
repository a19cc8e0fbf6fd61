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

/**
 * Maps an offset in a quoted scalar's value to its offset in the source, stepping over escapes
 * (`\\n`, `\\"`, `\\xNN`, `\\uNNNN`, `\\UNNNNNNNN` in double quotes; `''` in single quotes). Line folding
 * inside multi-line quoted scalars is not modelled.
 */
function sourceOffset(text: string, from: number, valueOffset: number, kind: 'double' | 'single'): number {
  let s = from;
  for (let v = 0; v < valueOffset && s < text.length; v++) {
    if (kind === 'double' && text[s] === '\\') {
      const c = text[s + 1];
      s += c === 'x' ? 4 : c === 'u' ? 6 : c === 'U' ? 10 : 2;
    } else if (kind === 'single' && text[s] === "'" && text[s + 1] === "'") s += 2;
    else s++;
  }
  return s;
}

export function parseSource(file: string, text: string): { doc?: SourceDoc; errors: StewardError[] } {
  const lineCounter = new LineCounter();
  const ydoc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, version: '1.2', schema: 'core', keepSourceTokens: false });
  const at = (offset: number): { line: number; col: number } => lineCounter.linePos(offset);
  const errors: StewardError[] = [];
  for (const e of ydoc.errors) {
    const { line, col } = at(e.pos[0]);
    const msg = e.message.split('\n')[0];
    errors.push(new StewardError('STEWARD_BLUEPRINT_SYNTAX', `invalid YAML/JSON: ${msg}`, { position: { file, line, col } }));
  }
  if (errors.length) return { errors };
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
    return { file, ...at(off), path: formatPath(path) };
  };
  const posInScalar = (path: readonly PathSeg[], offset: number): SourcePosition => {
    const f = walk(ydoc.contents, path);
    const n = f.node;
    if (!n || !isScalar(n) || f.depth !== path.length) return { ...pos(path), offset };
    const start = n.range?.[0] ?? 0;
    // Block scalars start on the next line; quoted ones after the quote. Escapes are not re-mapped (rare in DSL text).
    if (n.type === 'BLOCK_LITERAL' || n.type === 'BLOCK_FOLDED') return { file, ...at(start), path: formatPath(path), offset };
    const quote = n.type === 'QUOTE_DOUBLE' || n.type === 'QUOTE_SINGLE' ? 1 : 0;
    const src = quote ? sourceOffset(text, start + 1, offset, n.type === 'QUOTE_DOUBLE' ? 'double' : 'single') : start + offset;
    return { file, ...at(src), path: formatPath(path), offset };
  };
  return { doc: { file, text, value, pos, posInScalar }, errors };
}
