/**
 * Redis Cluster hash slots (spec-decisions D28, docs/pipeline.md "Redis Cluster"). A key's slot is CRC-16/XMODEM
 * of its hash tag (the text between the first `{` and the next `}`, when not empty) or of the whole key, mod
 * 16384 — the rule every cluster node and client applies. A Lua script may only touch keys of one slot, so
 * Steward's multi-key scripts use keys of one tag (one agent: `{tenant:agent}`), and the keys that used to be
 * global to all agents (known-agents set, re-tiering queue, audit outbox) are kept once per slot: `slotTag(s)`
 * is a short tag whose slot is `s`, so `…td-agents:{<slotTag(slotOf(agentKey))>}` lives with the agent's hash.
 */
export const SLOTS = 16384;

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

function crc16(buf: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < buf.length; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ buf[i]!) & 0xff]!;
  return crc;
}

/** The part of `key` that picks its slot (Redis' rule). */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The cluster slot of `key` (0..16383). */
export function keySlot(key: string): number {
  return crc16(Buffer.from(hashTagOf(key), 'utf8')) % SLOTS;
}

let tags: string[] | undefined;

/** A short hash tag whose slot is `slot` (the same on every process: the first such string in a fixed order). */
export function slotTag(slot: number): string {
  if (!tags) {
    const found: string[] = new Array<string>(SLOTS);
    let left = SLOTS;
    const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz';
    // All strings of 1..4 characters in length-then-lexicographic order: they cover every slot (checked by a unit test).
    const next = (prefix: string, depth: number): void => {
      for (const ch of alphabet) {
        if (left === 0) return;
        const s = prefix + ch;
        if (depth === 1) {
          const sl = keySlot(s);
          if (found[sl] === undefined) {
            found[sl] = s;
            left--;
          }
        } else next(s, depth - 1);
      }
    };
    for (let len = 1; len <= 4 && left > 0; len++) next('', len);
    tags = found;
  }
  const t = tags[slot];
  if (t === undefined) throw new RangeError(`no tag for slot ${slot}`);
  return t;
}

/** The tag of the per-slot copy of a once-global key for the slot of `key`. */
export function shardTagFor(key: string): string {
  return slotTag(keySlot(key));
}
