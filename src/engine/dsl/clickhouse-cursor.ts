/**
 * The ClickHouse statement classifier's cursor and token helpers (issue #28, docs/dsl.md "SQL
 * dialects"): apart from clickhouse-sql.ts to keep each file readable.
 */
import { FactParseError } from './fact-errors.js';
import type { Tok } from './clickhouse-lexer.js';
import { emptyFacts, type SqlFacts } from './sql-ast.js';

export const fail = (msg: string): never => {
  throw new FactParseError(`SQL (clickhouse): ${msg}`);
};
export const kw = (t: Tok | undefined, ...k: string[]): boolean => t !== undefined && t.kind === 'word' && k.includes(t.kw);
export const op = (t: Tok | undefined, o: string): boolean => t !== undefined && t.kind === 'op' && t.text === o;
export const syn = (kind: Tok['kind'], text: string): Tok => ({ kind, text, kw: kind === 'word' ? text.toUpperCase() : '', at: -1, end: -1 });

/** A cursor over one statement's tokens. */
export class Cur {
  i = 0;
  constructor(readonly t: Tok[]) {}
  peek(n = 0): Tok | undefined {
    return this.t[this.i + n];
  }
  is(...k: string[]): boolean {
    return kw(this.peek(), ...k);
  }
  eat(...k: string[]): boolean {
    if (!this.is(...k)) return false;
    this.i++;
    return true;
  }
  /** A sequence of keywords, all or nothing. */
  eatSeq(...k: string[]): boolean {
    if (!k.every((w, n) => kw(this.peek(n), w))) return false;
    this.i += k.length;
    return true;
  }
  end(): boolean {
    return this.i >= this.t.length;
  }
  /** `name` or `db.name`, quoted or not; lower case. */
  name(): string {
    const a = this.peek();
    if (!a || (a.kind !== 'word' && a.kind !== 'qident')) return fail(`a name expected at ${a ? a.at : 'the end'}`);
    this.i++;
    let n = a.text;
    if (op(this.peek(), '.') && (this.peek(1)?.kind === 'word' || this.peek(1)?.kind === 'qident')) {
      n += '.' + this.peek(1)!.text;
      this.i += 2;
    }
    return n.toLowerCase();
  }
  ifExists(): void {
    if (!this.eatSeq('IF', 'EXISTS') && !this.eatSeq('IF', 'EMPTY')) this.eatSeq('IF', 'NOT', 'EXISTS');
  }
  onCluster(): void {
    if (this.eatSeq('ON', 'CLUSTER')) {
      const c = this.peek();
      if (!c || (c.kind !== 'word' && c.kind !== 'qident' && c.kind !== 'string')) fail('cluster name expected');
      this.i++;
    }
  }
  /** The trailing modifiers of DDL (ON CLUSTER, SYNC, PERMANENTLY, NO DELAY, SETTINGS …), then the end. */
  tail(): void {
    for (;;) {
      if (this.is('ON')) this.onCluster();
      else if (this.eat('SYNC', 'PERMANENTLY', 'ASYNC', 'TEST')) continue;
      else if (this.eatSeq('NO', 'DELAY')) continue;
      else if (this.is('SETTINGS', 'FORMAT')) this.i = this.t.length;
      else break;
    }
    if (!this.end()) fail(`unexpected ${JSON.stringify(this.peek()!.text)} at ${this.peek()!.at}`);
  }
  rest(): Tok[] {
    const r = this.t.slice(this.i);
    this.i = this.t.length;
    return r;
  }
}

export const facts = (f: Partial<SqlFacts> & { statements: string[] }): SqlFacts => ({ ...emptyFacts(), ...f });
