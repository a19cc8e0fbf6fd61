import { describe, expect, it } from 'vitest';
import {
  DECISION_COLUMNS, DLQ_COLUMNS, GATE_COLUMNS, GATE_JUDGE_RESULT_COLUMNS, GATE_OUTCOME_COLUMNS, LEDGER_COLUMNS, TABLE_COLUMNS, TRUST_DEBT_COLUMNS, VERDICT_COLUMNS,
  decisionRow, dlqRow, gateJudgeResultRow, gateOutcomeRow, gateRow, ledgerRow, trustDebtRow, verdictRow,
} from '../../../../src/adapters/clickhouse/rows.js';
import { tsvEncoder, tsvString, type Columns } from '../../../../src/adapters/clickhouse/tsv.js';
import { MIGRATIONS } from '../../../../src/adapters/clickhouse/migrations.js';
import { clickhouseError } from '../../../../src/adapters/clickhouse/client.js';

type Any = Record<string, unknown>;
const one = <R,>(cols: Columns<R>, row: object) => tsvEncoder(cols).encode([row]);

describe('TSV encoding', () => {
  it('escapes what the TSV reader unescapes and nothing else', () => {
    expect(tsvString('plain ünïcødé 🚀 "quoted" \'single\'')).toBe('plain ünïcødé 🚀 "quoted" \'single\'');
    expect(tsvString('a\tb\nc\\d\re\0f')).toBe('a\\tb\\nc\\\\d\\re\\0f');
    expect(tsvString('\\N')).toBe('\\\\N'); // the text "\N", not NULL
    expect(tsvString('')).toBe('');
  });

  it('one line per row: fields tab-separated, newline-terminated, arrays as quoted literals, NULL as \\N', () => {
    const cols: Columns<{ s: string; n: number; c: number | null; a: string[]; f: (number | null)[] }> = {
      s: 'String', n: 'UInt64', c: 'Nullable(Float64)', a: 'Array(String)', f: 'Array(Nullable(Float64))',
    };
    const enc = tsvEncoder(cols);
    expect(enc.columnList).toBe('(s, n, c, a, f)');
    expect(enc.encode([
      { s: 'x\ty', n: 1_700_000_000_000, c: null, a: ["it's", 'tab\there', 'back\\slash', ''], f: [0.5, null, 1e-7] },
      { s: '', n: 0, c: 0.25, a: [], f: [] },
    ])).toBe(
      "x\\ty\t1700000000000\t\\N\t['it\\'s','tab\\there','back\\\\slash','']\t[0.5,NULL,1e-7]\n" +
      '\t0\t0.25\t[]\t[]\n',
    );
    expect(enc.encode([])).toBe('');
  });

  it('a value of the wrong type stays inside its field (the server rejects that row; the framing holds)', () => {
    const enc = tsvEncoder<{ n: number; s: string }>({ n: 'UInt64', s: 'String' });
    const line = enc.encode([{ n: 'yes\tterday\n', s: 'ok' } as unknown as object]);
    expect(line).toBe('yes\\tterday\\n\tok\n');
    expect(line.split('\n')).toHaveLength(2);
    // Non-finite numbers are written as NULL, as JSON.stringify would.
    expect(enc.encode([{ n: Number.NaN, s: 'x' }])).toBe('\\N\tx\n');
  });

  it('the column specs name exactly the columns of the migrated tables, with their types', () => {
    const ddl = MIGRATIONS.flatMap((m) => m.statements).join('\n');
    for (const [table, cols] of Object.entries(TABLE_COLUMNS)) {
      const body = new RegExp(`CREATE TABLE IF NOT EXISTS \\{db\\}\\.${table} \\(([\\s\\S]*?)\\) ENGINE`).exec(ddl)?.[1];
      expect(body, table).toBeDefined();
      // "name Type, name Type(...)" — split on commas outside parentheses.
      const declared: [string, string][] = [];
      let depth = 0;
      let cur = '';
      for (const ch of `${body},`) {
        if (ch === ',' && depth === 0) {
          const [name, ...type] = cur.trim().split(/\s+/);
          if (name) declared.push([name, type.join(' ')]);
          cur = '';
          continue;
        }
        if (ch === '(') depth++;
        if (ch === ')') depth--;
        cur += ch;
      }
      // Later migrations' ALTER TABLE … ADD COLUMN name Type [DEFAULT x] AFTER col (18.16 syntax).
      for (const alter of ddl.matchAll(new RegExp(`ALTER TABLE \\{db\\}\\.${table} ([\\s\\S]*?)(?:\\n|$)(?!\\s*ADD COLUMN)`, 'g'))) {
        for (const add of alter[1].matchAll(/ADD COLUMN (\w+) (\w+(?:\([^)]*\))?)(?: DEFAULT \S+)? AFTER (\w+)/g)) {
          const at = declared.findIndex(([n]) => n === add[3]);
          expect(at, `${table}: ADD COLUMN ${add[1]} AFTER ${add[3]}`).toBeGreaterThanOrEqual(0);
          declared.splice(at + 1, 0, [add[1], add[2]]);
        }
      }
      expect(Object.entries(cols), table).toEqual(declared);
    }
  });
});

describe('every mapper produces exactly its table columns (so its rows encode completely)', () => {
  const cases: [string, Columns<object>, Any][] = [
    ['decisions', DECISION_COLUMNS, decisionRow({ trace_id: 't', agent_id: 'a', intervention: 'ok', event_time_ms: 1 }, 1) as unknown as Any],
    ['verdicts', VERDICT_COLUMNS, verdictRow({ trace_id: 't', agent_id: 'a', intervention: 'ok', ctq: null, risk: 0.5, metrics: [{ name: 'm', score: null, status: 'skipped' }], verdict: {}, event_time_ms: 1 }, 1) as unknown as Any],
    ['trust_debt_events', TRUST_DEBT_COLUMNS, trustDebtRow({ event_id: 'e', agent_id: 'a', at_ms: 1, cause: 'c', before: 0, after: 1, level: 'normal' }, 1) as unknown as Any],
    ['ledger', LEDGER_COLUMNS, ledgerRow({ entry_id: 'x', agent_id: 'a', tenant: 't', seq: 1, ts_ms: 1, type: 'POLICY_DECISION', payload: {}, prev_hash: '0', hash: 'h', signature: 's', kid: 'k' }, '{}', 1) as unknown as Any],
    ['dlq_events', DLQ_COLUMNS, dlqRow({ dlq_topic: 'd', dlq_partition: 0, dlq_offset: '1', timestamp_ms: 1, value_bytes: 1 }, 1) as unknown as Any],
    ['gate_events', GATE_COLUMNS, gateRow({ trace_id: 't', agent_id: 'a', ts_ms: 1 }, 1) as unknown as Any],
    ['gate_judge_results', GATE_JUDGE_RESULT_COLUMNS, gateJudgeResultRow({ event_id: 'e', trace_id: 't', job_id: 'j', agent_id: 'a', attempt_index: 0, action: 'finalize', ts_ms: 1 }, 1) as unknown as Any],
    ['gate_outcomes', GATE_OUTCOME_COLUMNS, gateOutcomeRow({ event_id: 'e', trace_id: 't', job_id: 'j', agent_id: 'a', final_verdict: 'pass', action: 'finalize', num_retries: 0, ts_ms: 1 }, 1) as unknown as Any],
  ];
  it.each(cases)('%s', (table, cols, row) => {
    expect(Object.keys(row).sort()).toEqual(Object.keys(cols).sort());
    expect(TABLE_COLUMNS[table as keyof typeof TABLE_COLUMNS]).toBe(cols);
    const line = one(cols, row);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1).split('\t')).toHaveLength(Object.keys(cols).length);
  });

  it('a decision row with nasty strings is still one line of 23 fields', () => {
    const nasty = 'tab\tnl\ncr\rback\\slash \'q\' "dq" \\N 🚀 \0';
    const row = decisionRow({ trace_id: nasty, agent_id: nasty, intervention: 'block', reasons: [nasty, ''], tripwires: [{ id: nasty, fired: true }], rules: [], event_time_ms: 5 }, 1);
    const line = one(DECISION_COLUMNS, row);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(line.slice(0, -1).split('\t')).toHaveLength(25);
  });
});

describe('server errors', () => {
  it('parse errors of TSV input (including a malformed array, code 130) are data errors: poison, not retried', () => {
    for (const code of [26, 27, 130])
      expect(clickhouseError(new Error(`Code: ${code}, e.displayText() = DB::Exception: Cannot parse`), 'insert')).toMatchObject({ retryable: false });
    expect(clickhouseError(new Error('connect ECONNREFUSED 127.0.0.1:18123'), 'insert')).toMatchObject({ retryable: true });
  });
});
