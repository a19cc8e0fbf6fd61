/**
 * The ClickHouse SQL dialect of the SQL facts (issue #28, docs/dsl.md "SQL dialects", spec-decisions
 * D34). No well-kept ClickHouse parser exists for Node, so: a real lexer (clickhouse-lexer.ts),
 * statements split at `;`, and a classifier for ClickHouse's own statements (ALTER … DELETE/UPDATE
 * mutations, partition commands, TRUNCATE/DROP/DETACH … ON CLUSTER, RENAME, EXCHANGE, OPTIMIZE, SYSTEM,
 * KILL, INSERT INTO [FUNCTION]); query bodies and mutation expressions go to node-sql-parser after
 * normalisation (clickhouse-query.ts). Every form it does not know throws FactParseError: unknown text is
 * never classified as harmless.
 */
import { lexClickHouse, type Tok } from './clickhouse-lexer.js';
import { clauseEnd, delegate, expressions, matching, settingsEnd } from './clickhouse-query.js';
import { mergeFacts, type SqlFacts } from './sql-ast.js';
import { Cur, facts, fail, kw, op, syn } from './clickhouse-cursor.js';

export function clickhouseFacts(q: string): SqlFacts {
  const toks = lexClickHouse(q);
  const parts: SqlFacts[] = [];
  let start = 0;
  for (let i = 0; i <= toks.length; i++) {
    if (i < toks.length && !op(toks[i], ';')) continue;
    if (i > start) parts.push(statement(toks.slice(start, i)));
    start = i + 1;
  }
  if (parts.length === 0) fail('no statement');
  return mergeFacts(parts);
}


// Statements that change nothing: their kind is the fact.
const PLAIN_KINDS: Record<string, string> = { USE: 'use', SET: 'set', SHOW: 'show', DESCRIBE: 'describe', DESC: 'describe', EXISTS: 'exists', EXPLAIN: 'explain', CHECK: 'check', WATCH: 'watch' };

function statement(t: Tok[]): SqlFacts {
  const c = new Cur(t);
  const first = c.peek()!;
  if (kw(first, 'SELECT', 'WITH') || op(first, '(')) return delegate(t, 'query');
  if (first.kind !== 'word') return fail(`unexpected ${JSON.stringify(first.text)} at ${first.at}`);
  const plain = PLAIN_KINDS[first.kw];
  if (plain) return { ...inspected(t.slice(1)), statements: [plain] };
  c.i++;
  switch (first.kw) {
    case 'INSERT':
      return insert(c);
    case 'ALTER':
      return alter(c);
    case 'DELETE':
    case 'UPDATE':
      return delegate(stripCluster(t), first.kw.toLowerCase());
    case 'TRUNCATE':
      return truncate(c);
    case 'DROP':
    case 'DETACH':
      return drop(c, first.kw.toLowerCase());
    case 'ATTACH':
      return attach(c);
    case 'RENAME':
    case 'EXCHANGE':
      return rename(c, first.kw.toLowerCase());
    case 'OPTIMIZE': {
      if (!c.eat('TABLE')) fail('OPTIMIZE TABLE expected');
      const n = c.name();
      return mergeFacts([facts({ statements: ['optimize'], written: [n] }), noQuery(c.rest(), 'OPTIMIZE')]);
    }
    case 'SYSTEM':
      // SYSTEM commands act on the server (caches, merges, replicas, shutdown): the kind is the fact.
      return mergeFacts([facts({ statements: ['system'] }), noQuery(c.rest(), 'SYSTEM')]);
    case 'KILL':
      if (!c.eat('QUERY', 'MUTATION', 'TRANSACTION')) fail('KILL QUERY|MUTATION expected');
      return mergeFacts([facts({ statements: ['kill'] }), noQuery(c.rest(), 'KILL')]);
    case 'CREATE':
    case 'REPLACE':
      return create(c, first.kw === 'REPLACE');
    default:
      return fail(`statement ${first.text} is not understood`);
  }
}

const DDL_CLAUSES = new Set(['SOURCE', 'LAYOUT', 'LIFETIME', 'RANGE', 'SETTINGS', 'STRUCTURE']);

/**
 * What EXPLAIN/DESCRIBE/SHOW/… look at: they run nothing, but `DESCRIBE url(…)` and `EXPLAIN SELECT …
 * FROM s3(…)` reach the table function to infer its structure, so its tables and table functions count.
 */
function inspected(t: Tok[]): SqlFacts {
  const c = new Cur(t);
  c.eat('TABLE');
  if (c.peek()?.kind === 'word' && op(c.peek(1), '(') && matching(t, c.i + 1) === t.length - 1) {
    return delegate([syn('word', 'SELECT'), syn('op', '*'), syn('word', 'FROM'), ...t.slice(c.i)], 'DESCRIBE');
  }
  const q = t.findIndex((x) => kw(x, 'SELECT', 'WITH'));
  if (q < 0) return noQuery(t, 'the statement');
  const start = op(t[q - 1], '(') && matching(t, q - 1) === t.length - 1 ? q - 1 : q;
  return delegate(t.slice(start), 'EXPLAIN/DESCRIBE');
}

/** Functions of a command's tokens; a subquery there is not expected and fails closed. */
function noQuery(t: Tok[], what: string): SqlFacts {
  if (t.some((x) => kw(x, 'SELECT'))) fail(`a query inside ${what} is not understood`);
  const fns = new Set<string>();
  for (let i = 0; i + 1 < t.length; i++) {
    if (t[i]!.kind !== 'word' || !op(t[i + 1], '(')) continue;
    // Engines and dictionary clauses are not function calls (storage() reads them).
    if (DDL_CLAUSES.has(t[i]!.kw)) i = matching(t, i + 1);
    else if (!(op(t[i - 1], '=') && kw(t[i - 2], 'ENGINE'))) fns.add(t[i]!.text.toLowerCase());
  }
  return facts({ statements: [], functions: [...fns].sort() });
}

/** Drop `ON CLUSTER c` (the grammars have no such clause; where it runs changes nothing here). */
function stripCluster(t: Tok[]): Tok[] {
  const out: Tok[] = [];
  for (let i = 0; i < t.length; i++) {
    if (kw(t[i], 'ON') && kw(t[i + 1], 'CLUSTER')) i += 2;
    else out.push(t[i]!);
  }
  return out;
}

function truncate(c: Cur): SqlFacts {
  c.eat('TEMPORARY');
  if (c.eatSeq('ALL', 'TABLES') || c.eat('DATABASE')) {
    // TRUNCATE ALL TABLES FROM db / TRUNCATE DATABASE db: every table of db.
    c.ifExists();
    c.eat('FROM', 'IN');
    const db = c.name();
    if (c.eat('LIKE') || c.eatSeq('NOT', 'LIKE')) c.i++;
    c.tail();
    return facts({ statements: ['truncate'], written: [`${db}.*`], dropped: [`${db}.*`], unboundedWrite: true });
  }
  c.eat('TABLE');
  c.ifExists();
  const n = c.name();
  c.tail();
  return facts({ statements: ['truncate'], written: [n], dropped: [n], unboundedWrite: true });
}

const TABLE_OBJECTS = ['TABLE', 'VIEW', 'DICTIONARY', 'DATABASE'];
// Access entities and functions: DDL on them names no table, so the kind is the fact. Any other
// object (INDEX … ON t, a form this list does not know) cannot be evaluated.
const ENTITY_OBJECTS = ['USER', 'ROLE', 'QUOTA', 'ROW', 'POLICY', 'MASKING', 'SETTINGS', 'PROFILE', 'FUNCTION', 'NAMED'];

function entity(c: Cur, kind: string): SqlFacts {
  if (!c.is(...ENTITY_OBJECTS)) fail(`${kind.toUpperCase()} ${c.peek()?.text ?? ''} is not understood`);
  return facts({ statements: [kind] });
}

function drop(c: Cur, kind: string): SqlFacts {
  c.eat('TEMPORARY');
  if (!c.is(...TABLE_OBJECTS)) {
    // DROP USER/ROLE/QUOTA/FUNCTION/…; DETACH <name> is a table.
    if (kind === 'drop') return entity(c, 'drop');
  } else c.i++;
  c.ifExists();
  const names = [c.name()];
  while (op(c.peek(), ',')) {
    c.i++;
    names.push(c.name());
  }
  c.tail();
  return facts({ statements: [kind], written: names, dropped: names });
}

function attach(c: Cur): SqlFacts {
  if (!c.eat(...TABLE_OBJECTS)) fail('ATTACH TABLE|VIEW|DICTIONARY|DATABASE expected');
  c.ifExists();
  const n = c.name();
  return mergeFacts([facts({ statements: ['attach'], written: [n] }), noQuery(c.rest(), 'ATTACH')]);
}

function rename(c: Cur, kind: string): SqlFacts {
  c.eat('TABLE', 'TABLES', 'DICTIONARY', 'DICTIONARIES', 'DATABASE');
  const written: string[] = [];
  const dropped: string[] = [];
  do {
    if (op(c.peek(), ',')) c.i++;
    const a = c.name();
    if (!c.eat(kind === 'rename' ? 'TO' : 'AND')) fail(`${kind === 'rename' ? 'TO' : 'AND'} expected`);
    const b = c.name();
    // RENAME: a's name goes away; EXCHANGE: both names lose the data they had.
    written.push(a, b);
    dropped.push(...(kind === 'rename' ? [a] : [a, b]));
  } while (kind === 'rename' && op(c.peek(), ','));
  c.tail();
  return facts({ statements: [kind], written, dropped });
}

function insert(c: Cur): SqlFacts {
  if (!c.eat('INTO')) fail('INSERT INTO expected');
  c.eat('TABLE');
  const parts: SqlFacts[] = [];
  if (c.eat('FUNCTION')) {
    // INSERT INTO FUNCTION url(…)/s3(…)/remote(…): a write to external (or computed) storage.
    const name = c.peek();
    if (!name || name.kind !== 'word' || !op(c.peek(1), '(')) fail('a table function expected after INSERT INTO FUNCTION');
    const close = matching(c.t, c.i + 1);
    const target = delegate([syn('word', 'SELECT'), syn('op', '*'), syn('word', 'FROM'), ...c.t.slice(c.i, close + 1)], 'INSERT INTO FUNCTION');
    parts.push({ ...target, statements: ['insert'], read: [], written: target.read });
    c.i = close + 1;
  } else parts.push(facts({ statements: ['insert'], written: [c.name()] }));
  if (op(c.peek(), '(')) {
    const close = matching(c.t, c.i);
    if (c.t.slice(c.i, close).some((x) => kw(x, 'SELECT'))) fail('a query in the column list of INSERT');
    c.i = close + 1;
  }
  if (c.is('SETTINGS')) {
    const e = settingsEnd(c.t, c.i + 1, ['VALUES', 'SELECT', 'WITH', 'FORMAT', 'FROM']);
    if (e < 0) fail('SETTINGS of INSERT not understood');
    c.i = e;
  }
  if (c.end()) return mergeFacts(parts);
  if (c.eat('VALUES') || c.eatSeq('FORMAT', 'VALUES')) parts.push(expressions(c.rest(), 'VALUES'));
  else if (c.is('SELECT', 'WITH') || op(c.peek(), '(')) parts.push({ ...delegate(c.rest(), 'INSERT … SELECT'), statements: [] });
  else if (c.eat('FORMAT')) c.name(); // the data was cut off by the lexer
  else if (c.eatSeq('FROM', 'INFILE')) parts.push(noQuery(c.rest(), 'FROM INFILE')); // a client-side file: the target is the fact
  else fail(`unexpected ${JSON.stringify(c.peek()!.text)} in INSERT`);
  if (!c.end()) fail('unexpected text after INSERT');
  return mergeFacts(parts);
}

/** ALTER TABLE commands by their first words: what they do to the table's data. */
const ALTER_DROPS = new Set(['DROP', 'DETACH', 'CLEAR COLUMN', 'MOVE', 'REPLACE', 'MODIFY TTL', 'MATERIALIZE TTL']);
const ALTER_KEEPS = new Set(['ADD', 'MODIFY', 'COMMENT', 'RENAME', 'RESET', 'MATERIALIZE', 'CLEAR', 'ATTACH', 'FREEZE', 'UNFREEZE', 'FETCH', 'APPLY', 'REMOVE']);

function alter(c: Cur): SqlFacts {
  if (c.eat('DATABASE')) {
    // ALTER DATABASE db MODIFY SETTING/COMMENT …: the database is written.
    return mergeFacts([facts({ statements: ['alter'], written: [c.name()] }), noQuery(c.rest(), 'ALTER DATABASE')]);
  }
  if (!c.eat('TABLE')) return entity(c, 'alter');
  const n = c.name();
  c.onCluster();
  const parts: SqlFacts[] = [];
  let settingsList = false;
  while (!c.end()) {
    if (c.is('SETTINGS')) {
      c.rest();
      break;
    }
    const head = c.peek()!;
    const two = `${head.kw} ${c.peek(1)?.kw ?? ''}`;
    if (head.kw === 'DELETE' || head.kw === 'UPDATE') {
      // Mutations, read as the standard statements: DELETE FROM n WHERE …, UPDATE n SET … WHERE ….
      c.i++;
      const where = clauseEnd(c.t, c.i);
      if (!kw(c.t[where], 'WHERE')) fail(`ALTER … ${head.kw} without WHERE`);
      let body = c.t.slice(c.i, where);
      const inPart = body.findIndex((x, j) => kw(x, 'IN') && kw(body[j + 1], 'PARTITION'));
      if (inPart >= 0) body = body.slice(0, inPart);
      const e = clauseEnd(c.t, where + 1, { comma: true });
      const dot = n.indexOf('.');
      const target = dot < 0 ? [syn('qident', n)] : [syn('qident', n.slice(0, dot)), syn('op', '.'), syn('qident', n.slice(dot + 1))];
      const stmt =
        head.kw === 'DELETE'
          ? [syn('word', 'DELETE'), syn('word', 'FROM'), ...target, ...c.t.slice(where, e)]
          : [syn('word', 'UPDATE'), ...target, syn('word', 'SET'), ...body, ...c.t.slice(where, e)];
      if (head.kw === 'DELETE' && body.length > 0) fail('unexpected text in ALTER … DELETE');
      parts.push(delegate(stmt, `ALTER … ${head.kw}`));
      c.i = e;
      settingsList = false;
    } else if (two === 'MODIFY QUERY') {
      c.i += 2;
      parts.push(facts({ statements: ['alter'], written: [n] }), { ...delegate(c.rest(), 'MODIFY QUERY'), statements: [] });
    } else if (ALTER_DROPS.has(two) || ALTER_DROPS.has(head.kw) || ALTER_KEEPS.has(head.kw) || (settingsList && (head.kind === 'word' || head.kind === 'qident'))) {
      const continues: boolean = settingsList && !ALTER_DROPS.has(head.kw) && !ALTER_KEEPS.has(head.kw);
      const e = clauseEnd(c.t, c.i, { comma: true, noWords: true });
      const cmd = c.t.slice(c.i, e);
      const dropsData = !continues && (ALTER_DROPS.has(two) || ALTER_DROPS.has(head.kw));
      parts.push(facts({ statements: continues ? [] : ['alter'], written: [n], dropped: dropsData ? [n] : [] }), noQuery(cmd, 'ALTER'));
      // MOVE PARTITION p TO TABLE t2 writes t2; REPLACE/ATTACH PARTITION p FROM t2 reads t2.
      const to = cmd.findIndex((x, j) => kw(x, 'TO') && kw(cmd[j + 1], 'TABLE'));
      if (to >= 0) parts.push(facts({ statements: [], written: [new Cur(cmd.slice(to + 2)).name()] }));
      const from = cmd.findIndex((x) => kw(x, 'FROM'));
      if (from >= 0 && (head.kw === 'REPLACE' || head.kw === 'ATTACH') && cmd[from + 1]?.kind !== 'string') parts.push(facts({ statements: [], read: [new Cur(cmd.slice(from + 1)).name()] }));
      // MODIFY SETTING a = 1, b = 2 / RESET SETTING a, b: the items after a comma belong to it.
      settingsList = continues || ((head.kw === 'MODIFY' || head.kw === 'RESET') && kw(cmd[1], 'SETTING'));
      c.i = e;
    } else fail(`ALTER command ${JSON.stringify(head.text)} is not understood`);
    if (op(c.peek(), ',')) c.i++;
    else if (!c.end() && !c.is('SETTINGS')) fail(`unexpected ${JSON.stringify(c.peek()!.text)} in ALTER`);
  }
  if (parts.length === 0) fail('ALTER TABLE without a command');
  return mergeFacts(parts);
}

function create(c: Cur, replace: boolean): SqlFacts {
  if (c.eatSeq('OR', 'REPLACE')) replace = true;
  c.eat('TEMPORARY');
  c.eat('MATERIALIZED', 'LIVE', 'WINDOW');
  if (!c.eat(...TABLE_OBJECTS)) return entity(c, 'create');
  c.ifExists();
  const n = c.name();
  c.onCluster();
  const parts = [facts({ statements: ['create'], written: [n], dropped: replace ? [n] : [] })];
  const t = c.rest();
  let depth = 0;
  let query = -1;
  for (let j = 0; j < t.length; j++) {
    const x = t[j]!;
    if (op(x, '(')) depth++;
    else if (op(x, ')')) depth--;
    else if (depth === 0 && kw(x, 'TO') && j === 0) parts.push(facts({ statements: [], written: [new Cur(t.slice(1)).name()] }));
    else if (depth === 0 && kw(x, 'AS') && (kw(t[j + 1], 'SELECT', 'WITH') || op(t[j + 1], '('))) {
      query = j + 1;
      break;
    } else if (depth === 0 && kw(x, 'AS') && t[j + 1]?.kind === 'word' && op(t[j + 2], '(')) {
      // CREATE TABLE t AS s3(…): the table is the table function's data.
      const close = matching(t, j + 2);
      const src = delegate([syn('word', 'SELECT'), syn('op', '*'), syn('word', 'FROM'), ...t.slice(j + 1, close + 1)], 'CREATE … AS');
      parts.push({ ...src, statements: [] });
      j = close;
    }
  }
  const head = query >= 0 ? t.slice(0, query) : t;
  parts.push(noQuery(head, 'CREATE'), storage(head));
  if (query >= 0) parts.push({ ...delegate(t.slice(query), 'CREATE … AS SELECT'), statements: [] });
  return mergeFacts(parts);
}

// Table engines whose data stays in this server; any other engine (URL, S3, MySQL, Kafka, File,
// Distributed, an engine this list does not know) moves data in or out of it, like a table function.
const LOCAL_ENGINE = /^(?:(?:replicated|shared)?(?:replacing|summing|aggregating|collapsing|versionedcollapsing|graphite|coalescing)?mergetree|(?:tiny|stripe)?log|memory|null|set|join|buffer|view|materializedview|merge|generaterandom|keepermap|embeddedrocksdb|liveview|windowview)$/;

/** `ENGINE = URL(…)` and a dictionary's `SOURCE(HTTP(…))`: external storage, as table functions (`url()`). */
function storage(t: Tok[]): SqlFacts {
  const written = new Set<string>();
  const read = new Set<string>();
  const names = new Set<string>();
  let depth = 0;
  for (let j = 0; j < t.length; j++) {
    if (op(t[j], '(')) depth++;
    else if (op(t[j], ')')) depth--;
    else if (depth === 0 && kw(t[j], 'ENGINE') && op(t[j + 1], '=') && t[j + 2]?.kind === 'word') {
      const e = t[j + 2]!.text.toLowerCase();
      if (LOCAL_ENGINE.test(e)) continue;
      names.add(e);
      written.add(`${e}()`);
      // Distributed(cluster, db, table): rows go to db.table on the cluster, this server included.
      const a = op(t[j + 3], '(') ? t.slice(j + 4, matching(t, j + 3)).filter((x) => !op(x, ',')) : [];
      if (e === 'distributed' && a.length >= 3) written.add(`${a[1]!.text}.${a[2]!.text}`.toLowerCase());
    } else if (depth === 0 && kw(t[j], 'SOURCE') && op(t[j + 1], '(') && t[j + 2]?.kind === 'word') {
      const src = t[j + 2]!.text.toLowerCase();
      names.add(src);
      read.add(`${src}()`);
    }
  }
  return facts({ statements: [], written: [...written], read: [...read], tableFunctions: [...names] });
}
