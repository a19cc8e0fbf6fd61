/**
 * Recursive-descent parser for string conditions: the ACGP-1004 §9.4.1 grammar plus a documented
 * superset (AND/OR infix, parentheses, `!`, single-quoted strings, indexes, size/duration literals).
 * Limits (length, depth, nodes) are checked while parsing, cel-js style, so a hostile blueprint
 * cannot exhaust the stack or memory.
 */
import type { StewardErrorCode } from '../../errors.js';
import type { CompareOp, DslLimits, LiteralValue, Node } from './ast.js';
import { LexError, tokenize, type Token } from './lexer.js';
import { intern } from './values.js';

export class ParseFailure {
  constructor(
    readonly code: StewardErrorCode,
    readonly message: string,
    readonly offset: number,
  ) {}
}

/** Shared across the strings of one structured condition so node/depth limits apply to the whole. */
export interface ParseBudget {
  limits: DslLimits;
  nodes: number;
}

const COMPARE_OPS = new Set(['>', '>=', '<', '<=', '==', '!=']);
const RESERVED = new Set(['not', 'and', 'or', 'true', 'false', 'contains', 'matches', 'null']);

export function parseExpression(src: string, path: string, budget: ParseBudget, depth0 = 0): Node {
  if (src.length > budget.limits.maxLength) {
    throw new ParseFailure('STEWARD_DSL_LIMIT', `expression longer than ${budget.limits.maxLength} characters`, budget.limits.maxLength);
  }
  let tokens: Token[];
  try {
    tokens = tokenize(src);
  } catch (e) {
    if (e instanceof LexError) throw new ParseFailure('STEWARD_DSL_PARSE', e.message, e.offset);
    throw e;
  }
  const p = new Parser(tokens, path, budget, depth0);
  const node = p.parseOr();
  const t = p.peek();
  if (t.type !== 'eof') throw new ParseFailure('STEWARD_DSL_PARSE', `unexpected ${describe(t)}`, t.offset);
  return node;
}

function describe(t: Token): string {
  if (t.type === 'eof') return 'end of expression';
  if (t.type === 'string') return `string ${JSON.stringify(t.text)}`;
  return `'${t.text}'`;
}

class Parser {
  private pos = 0;
  private depth: number;

  constructor(
    private readonly tokens: Token[],
    private readonly path: string,
    private readonly budget: ParseBudget,
    depth0: number,
  ) {
    this.depth = depth0;
  }

  peek(k = 0): Token {
    return this.tokens[Math.min(this.pos + k, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.type !== 'eof') this.pos++;
    return t;
  }

  private expect(type: Token['type'], what: string): Token {
    const t = this.peek();
    if (t.type !== type) throw new ParseFailure('STEWARD_DSL_PARSE', `expected ${what}, found ${describe(t)}`, t.offset);
    return this.next();
  }

  private count(offset: number): void {
    if (++this.budget.nodes > this.budget.limits.maxNodes) {
      throw new ParseFailure('STEWARD_DSL_LIMIT', `condition has more than ${this.budget.limits.maxNodes} nodes`, offset);
    }
  }

  private enter(offset: number): void {
    if (++this.depth > this.budget.limits.maxDepth) {
      throw new ParseFailure('STEWARD_DSL_LIMIT', `condition nested deeper than ${this.budget.limits.maxDepth} levels`, offset);
    }
  }

  private isKeyword(t: Token, kw: string): boolean {
    return t.type === 'ident' && t.text.toLowerCase() === kw;
  }

  parseOr(): Node {
    const first = this.parseAnd();
    if (!this.isOr(this.peek())) return first;
    const items = [first];
    while (this.isOr(this.peek())) {
      this.next();
      items.push(this.parseAnd());
    }
    this.count(first.offset);
    return { kind: 'any', items, path: this.path, offset: first.offset };
  }

  private isOr(t: Token): boolean {
    return this.isKeyword(t, 'or') || (t.type === 'op' && t.text === '||');
  }

  private isAnd(t: Token): boolean {
    return this.isKeyword(t, 'and') || (t.type === 'op' && t.text === '&&');
  }

  private parseAnd(): Node {
    const first = this.parseUnary();
    if (!this.isAnd(this.peek())) return first;
    const items = [first];
    while (this.isAnd(this.peek())) {
      this.next();
      items.push(this.parseUnary());
    }
    this.count(first.offset);
    return { kind: 'all', items, path: this.path, offset: first.offset };
  }

  private parseUnary(): Node {
    const t = this.peek();
    if (this.isKeyword(t, 'not') || (t.type === 'op' && t.text === '!')) {
      this.next();
      this.enter(t.offset);
      this.count(t.offset);
      const operand = this.parseUnary();
      this.depth--;
      return { kind: 'not', operand, path: this.path, offset: t.offset };
    }
    if (t.type === 'ident' && this.peek(1).type === 'colon') {
      const kw = t.text.toLowerCase();
      if (kw === 'all' || kw === 'any') return this.parseCompound(kw);
      throw new ParseFailure('STEWARD_DSL_PARSE', `unknown compound '${t.text}:' (use all:, any: or NOT)`, t.offset);
    }
    return this.parseComparison();
  }

  /** The ABNF's inline `all: [a, b]` / `any: [...]` form. */
  private parseCompound(kind: 'all' | 'any'): Node {
    const kw = this.next();
    this.next(); // colon
    this.enter(kw.offset);
    this.count(kw.offset);
    this.expect('lbrack', `'[' after '${kw.text}:'`);
    const items: Node[] = [];
    if (this.peek().type === 'rbrack') throw new ParseFailure('STEWARD_DSL_PARSE', `'${kw.text}:' needs at least one condition`, this.peek().offset);
    for (;;) {
      items.push(this.parseOr());
      const t = this.next();
      if (t.type === 'rbrack') break;
      if (t.type !== 'comma') throw new ParseFailure('STEWARD_DSL_PARSE', `expected ',' or ']' in '${kw.text}:' list, found ${describe(t)}`, t.offset);
    }
    this.depth--;
    return { kind, items, path: this.path, offset: kw.offset };
  }

  private parseComparison(): Node {
    const left = this.parseOperand();
    const t = this.peek();
    let op: CompareOp | undefined;
    if (t.type === 'op' && COMPARE_OPS.has(t.text)) op = t.text as CompareOp;
    else if (this.isKeyword(t, 'contains')) op = 'contains';
    else if (this.isKeyword(t, 'matches')) op = 'matches';
    if (op === undefined) return left;
    this.next();
    this.count(t.offset);
    const right = this.parseOperand();
    const after = this.peek();
    if ((after.type === 'op' && COMPARE_OPS.has(after.text)) || this.isKeyword(after, 'contains') || this.isKeyword(after, 'matches')) {
      throw new ParseFailure('STEWARD_DSL_PARSE', `comparisons do not chain; use all: [...] or AND`, after.offset);
    }
    return { kind: 'compare', op, left, right, path: this.path, offset: left.offset, opOffset: t.offset };
  }

  private parseOperand(): Node {
    const t = this.peek();
    switch (t.type) {
      case 'number':
        this.next();
        this.count(t.offset);
        return { kind: 'literal', value: t.num!, unit: t.unit, path: this.path, offset: t.offset };
      case 'string':
        this.next();
        this.count(t.offset);
        return { kind: 'literal', value: t.text.length <= 256 ? intern(t.text) : t.text, path: this.path, offset: t.offset };
      case 'lbrack':
        return this.parseArray();
      case 'lparen': {
        this.next();
        this.enter(t.offset);
        const inner = this.parseOr();
        this.expect('rparen', "')'");
        this.depth--;
        return inner;
      }
      case 'ident':
        return this.parseFieldOrCall();
      default:
        throw new ParseFailure('STEWARD_DSL_PARSE', `expected a field, function call or value, found ${describe(t)}`, t.offset);
    }
  }

  private parseArray(): Node {
    const open = this.next();
    this.enter(open.offset);
    this.count(open.offset);
    const values: LiteralValue[] = [];
    if (this.peek().type !== 'rbrack') {
      for (;;) {
        const item = this.parseOperand();
        if (item.kind !== 'literal') throw new ParseFailure('STEWARD_DSL_PARSE', 'array elements must be literal values', item.offset);
        values.push(item.value);
        const sep = this.next();
        if (sep.type === 'rbrack') break;
        if (sep.type !== 'comma') throw new ParseFailure('STEWARD_DSL_PARSE', `expected ',' or ']' in array, found ${describe(sep)}`, sep.offset);
      }
    } else {
      this.next();
    }
    this.depth--;
    return { kind: 'literal', value: values, path: this.path, offset: open.offset };
  }

  private parseFieldOrCall(): Node {
    const first = this.next();
    const lower = first.text.toLowerCase();
    if (lower === 'true' || lower === 'false') {
      this.count(first.offset);
      return { kind: 'literal', value: lower === 'true', path: this.path, offset: first.offset };
    }
    if (RESERVED.has(lower)) {
      const hint = lower === 'null' ? ' (null is not supported; use exists(field))' : '';
      throw new ParseFailure('STEWARD_DSL_PARSE', `unexpected keyword '${first.text}'${hint}`, first.offset);
    }
    const segments: (string | number)[] = [intern(first.text)];
    let end = first.end;
    for (;;) {
      const t = this.peek();
      if (t.type === 'dot' && t.offset === end) {
        this.next();
        const id = this.peek();
        if (id.type !== 'ident' || id.offset !== t.end) throw new ParseFailure('STEWARD_DSL_PARSE', "expected a field name after '.'", id.offset);
        this.next();
        segments.push(intern(id.text));
        end = id.end;
      } else if (t.type === 'lbrack' && t.offset === end) {
        this.next();
        const idx = this.peek();
        if (idx.type !== 'number' || idx.unit !== undefined || !Number.isInteger(idx.num) || idx.num! < 0) {
          throw new ParseFailure('STEWARD_DSL_PARSE', 'expected a non-negative integer index', idx.offset);
        }
        this.next();
        const close = this.expect('rbrack', "']'");
        segments.push(idx.num!);
        end = close.end;
      } else {
        break;
      }
    }
    const text = segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
    this.count(first.offset);
    if (this.peek().type === 'lparen') {
      if (segments.some((s) => typeof s === 'number')) throw new ParseFailure('STEWARD_DSL_PARSE', 'function names cannot contain indexes', first.offset);
      return this.parseCall(text, first.offset);
    }
    return { kind: 'field', segments, text, path: this.path, offset: first.offset };
  }

  private parseCall(name: string, offset: number): Node {
    const open = this.next();
    this.enter(open.offset);
    const args: Node[] = [];
    if (this.peek().type !== 'rparen') {
      for (;;) {
        args.push(this.parseOr());
        const sep = this.next();
        if (sep.type === 'rparen') break;
        if (sep.type !== 'comma') throw new ParseFailure('STEWARD_DSL_PARSE', `expected ',' or ')' in arguments of ${name}, found ${describe(sep)}`, sep.offset);
      }
    } else {
      this.next();
    }
    this.depth--;
    return { kind: 'call', name, args, path: this.path, offset };
  }
}
