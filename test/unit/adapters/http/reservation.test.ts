// A request's share of the in-flight byte budget (docs/http.md "Backpressure"): freed once, after the response
// closed and every hold ended; once freed it takes no more holds (audit #24 r2, finding 4).
import { describe, expect, it } from 'vitest';
import { Reservation } from '../../../../src/adapters/http/reservation.js';

describe('Reservation', () => {
  it('is freed once, when the response closed and every hold was released', () => {
    let frees = 0;
    const r = new Reservation(() => frees++);
    const a = r.hold()!;
    const b = r.hold()!;
    r.close();
    expect(frees).toBe(0);
    a();
    a(); // a second release of the same hold counts once
    expect(frees).toBe(0);
    b();
    expect(frees).toBe(1);
    r.close();
    expect(frees).toBe(1);
  });

  it('a hold taken after close but before the free keeps the bytes; none is given once freed', () => {
    let frees = 0;
    const r = new Reservation(() => frees++);
    const first = r.hold()!;
    r.close();
    // Closed (the client left) while a send holds the bytes: still reserved, so more work may hold them.
    const late = r.hold();
    expect(late).toBeTypeOf('function');
    first();
    expect(frees).toBe(0);
    late!();
    expect(frees).toBe(1);
    // Freed: the bytes are back in the budget, so work begun now would be counted by nobody.
    expect(r.hold()).toBeUndefined();
    expect(frees).toBe(1);
  });

  it('a request whose client left before any hold is freed at close and refuses a later hold', () => {
    let frees = 0;
    const r = new Reservation(() => frees++);
    r.close();
    expect(frees).toBe(1);
    expect(r.hold()).toBeUndefined();
  });
});
