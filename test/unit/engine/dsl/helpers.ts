import fc from 'fast-check';
import { luhnValid } from '../../../../src/engine/dsl/entities.js';
import type { EvalContext } from '../../../../src/engine/types.js';

/** An evaluation context of agent `a` (tenant acme, ACL-2) for a tool_call trace with the given fields. */
export const dslCtx = (trace: Record<string, unknown>): EvalContext => ({
  trace: { trace_id: 't', agent_id: 'a', timestamp: '', hook: 'tool_call', ...trace },
  agent: { id: 'a', tenant: 'acme', tier: 'ACL-2', tools: [], domains: [], registered: true },
  trustDebt: 0,
  nowMs: 0,
  stateNamespace: 'acme:a',
});

/** n random decimal digits. */
export const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));

/** `body` plus the check digit that makes it pass Luhn. */
export function withLuhn(body: string): string {
  for (let c = 0; c <= 9; c++) if (luhnValid(body + c)) return body + c;
  throw new Error('unreachable');
}

/** A valid IBAN (mod-97 check digits) for a country code and BBAN. */
export function ibanFor(country: string, bban: string): string {
  const num = (bban + country + '00').replace(/[A-Z]/g, (ch) => String(ch.charCodeAt(0) - 55));
  let rem = 0;
  for (const d of num) rem = (rem * 10 + Number(d)) % 97;
  return `${country}${String(98 - rem).padStart(2, '0')}${bban}`;
}
