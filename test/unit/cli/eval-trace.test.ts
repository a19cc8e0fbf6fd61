import { describe, expect, it } from 'vitest';
import { MAX_TRACE_BYTES, parseTraceLine } from '../../../src/cli/eval-trace.js';

const trace = { trace_id: 't-1', agent_id: 'a', timestamp: '2026-11-22T08:00:00Z', hook: 'output' };

describe('parseTraceLine', () => {
  it('ignores a UTF-8 byte-order mark at the start of a line', () => {
    const r = parseTraceLine('\uFEFF' + JSON.stringify(trace));
    expect(r.ok).toBe(true);
  });

  it('measures the size limit in UTF-8 bytes, not characters', () => {
    // 400k three-byte characters: under the limit in characters, over it in bytes.
    const content = '€'.repeat(Math.ceil(MAX_TRACE_BYTES / 3) + 10);
    expect(content.length).toBeLessThan(MAX_TRACE_BYTES);
    const r = parseTraceLine(JSON.stringify({ ...trace, content }));
    expect(r).toMatchObject({ ok: false, code: 'STEWARD_TRACE_TOO_LARGE' });
  });

  it('accepts a large line that is within the byte limit', () => {
    const r = parseTraceLine(JSON.stringify({ ...trace, content: 'x'.repeat(MAX_TRACE_BYTES / 2) }));
    expect(r.ok).toBe(true);
  });
});
