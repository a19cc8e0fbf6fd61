import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACM_SCHEMA_FILES, contentAddress, contextPacketProblems, emptyContextState, isSnapshotSource, recordContextPacket, bindContext } from '../../../../src/engine/acm/index.js';

const packet = {
  id: 'ctx-1',
  sources: ['kb-snap://sales-2025-09-30'],
  facts: { orderId: 'O123', region: 'EU', amounts: [1, 2.5, 1e21] },
  provenance: { builder: 'ctx-ingestor@1.3.2' },
};

describe('content addresses', () => {
  it('are sha256 over RFC 8785 canonical JSON: key order and number spelling do not matter', () => {
    const reordered = JSON.parse('{"provenance":{"builder":"ctx-ingestor@1.3.2"},"facts":{"region":"EU","amounts":[1.0,2.50,1000000000000000000000],"orderId":"O123"},"sources":["kb-snap://sales-2025-09-30"],"id":"ctx-1"}');
    expect(contentAddress(reordered)).toBe(contentAddress(packet));
    expect(contentAddress(packet)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
  it('a known vector: sha256 of the canonical text {"a":1,"b":[true,"x"]}', () => {
    expect(contentAddress({ b: [true, 'x'], a: 1.0 })).toBe('sha256:63e8063d9dc6f0fd5a24b4706818a165fd57c3531b74466cf5dea62bff09b0b6');
  });
  it('change with any fact', () => {
    expect(contentAddress({ ...packet, facts: { ...packet.facts, region: 'US' } })).not.toBe(contentAddress(packet));
  });
});

describe('snapshot rule', () => {
  it.each([
    ['kb-snap://sales-2025-09-30', true],
    ['ds-snap://orders/2025-09-30T23:59Z', true],
    ['snapshot://warehouse/42', true],
    ['sha256:' + 'a'.repeat(64), true],
    ['s3://bucket/orders.parquet@sha256:' + 'b'.repeat(64), true],
    ['https://crm.example.com/customers/C789', false],
    ['kb://sales', false],
    ['postgres://db/orders', false],
    ['sha256:abc', false],
  ])('%s → %s', (s, ok) => expect(isSnapshotSource(s)).toBe(ok));

  it('a live source is refused with its path', () => {
    const p = contextPacketProblems({ ...packet, sources: ['kb-snap://x', 'https://crm.example.com/live'] }, '$.context');
    expect(p).toEqual([expect.objectContaining({ code: 'STEWARD_ACM_SNAPSHOT', path: '$.context.sources[1]' })]);
  });

  it('schema problems carry paths', () => {
    const p = contextPacketProblems({ id: 'c', sources: 'kb-snap://x', facts: {}, extra: 1 }, '$.context');
    expect(p.map((x) => x.path).sort()).toEqual(['$.context.extra', '$.context.sources']);
  });
});

describe('versions', () => {
  it('are monotonic per context id; the same content again is the same version', () => {
    let s = emptyContextState();
    const a = recordContextPacket(s, packet);
    s = a.state;
    expect(a.version.version).toBe(1);
    const again = recordContextPacket(s, JSON.parse(JSON.stringify(packet)));
    expect(again.created).toBe(false);
    expect(again.version.version).toBe(1);
    const b = recordContextPacket(s, { ...packet, facts: { region: 'US' } });
    expect(b.version.version).toBe(2);
    expect(bindContext(b.state, 'ctx-1')?.digest).toBe(b.version.digest);
    expect(bindContext(b.state, 'constructor')).toBeUndefined();
    // The earlier state is not changed (plain JSON, reducers return new states).
    expect(bindContext(s, 'ctx-1')?.version).toBe(1);
  });
});

describe('published schemas', () => {
  it('schemas/acm/*.json equal the embedded ones', () => {
    for (const [name, schema] of Object.entries(ACM_SCHEMA_FILES)) {
      expect(JSON.parse(readFileSync(join(__dirname, '../../../../schemas/acm', name), 'utf8')), name).toEqual(schema);
    }
  });
});

describe('canonical JSON', () => {
  it('is byte for byte the canonicalize package (RFC 8785 reference) on JSON-like values', async () => {
    const { canonicalize } = await import('../../../../src/engine/ledger/crypto.js');
    const { canonicalJson } = await import('../../../../src/engine/acm/canonical.js');
    const fc = (await import('fast-check')).default;
    fc.assert(fc.property(fc.jsonValue(), (v) => canonicalJson(v) === canonicalize(v)), { numRuns: 500 });
    const odd = { b: [undefined, 1e21, -0, 0.1, 'é\u2028"\\\n'], a: { z: undefined, y: null }, '€': 1, A: true };
    expect(canonicalJson(odd)).toBe(canonicalize(odd));
  });
});
