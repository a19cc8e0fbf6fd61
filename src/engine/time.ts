/**
 * Trace timestamps (contracts C1: "ISO-8601"). Agents are written in many languages: Python's
 * `datetime.isoformat()` leaves out the offset for naive datetimes and prints microseconds, other clients
 * drop the seconds. RFC 3339 (JSON Schema's `date-time`) rejects all of these, and `Date.parse` reads a
 * time without an offset as the steward host's local time, which would make decisions depend on where the
 * steward runs. So one parser for every place that reads a trace timestamp:
 *  - date `YYYY-MM-DD`, optionally followed by `T`, `t` or a space and `hh:mm`, `hh:mm:ss` or
 *    `hh:mm:ss.fff…` (`,` as decimal sign too; digits past milliseconds are truncated);
 *  - offset `Z`/`z`, `±hh:mm`, `±hhmm` or `±hh`; none means UTC;
 *  - fields range-checked (day within its month, leap years); `24:00[:00]` is the end of the day; a leap
 *    second `:60` counts as `:59.999`.
 */

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/** Milliseconds since the epoch, or NaN when `s` is not an ISO-8601 timestamp of the accepted forms. */
export function parseTimestamp(s: string): number {
  if (s.length > 64) return Number.NaN;
  const fast = parseFullDateTime(s);
  if (fast !== undefined) return fast;
  const m = ISO.exec(s);
  if (!m) return Number.NaN;
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  let offsetMin = 0;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = m[11] === undefined ? 0 : Number(m[11]);
    if (oh > 23 || om > 59) return Number.NaN;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  return epochMs(Number(m[1]), Number(m[2]), Number(m[3]), hour, minute, second, ms, offsetMin);
}

/** The checked fields as epoch milliseconds (NaN when a field is out of range). */
function epochMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number, offsetMin: number): number {
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && isLeap(year) ? 29 : DAYS[month - 1])) return Number.NaN;
  if (minute > 59 || second > 60) return Number.NaN;
  if (hour > 24 || (hour === 24 && (minute !== 0 || second !== 0 || ms !== 0))) return Number.NaN;
  if (second === 60) {
    second = 59;
    ms = 999;
  }
  // Midnight of the date: Date.UTC, except for years 0–99, which it maps to 1900–1999 (setUTCFullYear does not).
  // No Date object for the usual years: this runs for every trace an ingress or a stage reads.
  let midnight: number;
  if (year >= 100) midnight = Date.UTC(year, month - 1, day);
  else {
    const d = new Date(0);
    d.setUTCFullYear(year, month - 1, day);
    midnight = d.getTime();
  }
  return midnight + ((hour * 60 + minute - offsetMin) * 60 + second) * 1000 + ms;
}

/** Two ASCII digits at i as a number, or -1. */
function digits2(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * The common full form `YYYY-MM-DDThh:mm:ss[.f…][Z|±hh[[:]mm]]` read by hand (the regex and its capture strings
 * cost most of a parse, and every trace's timestamp is parsed); undefined for any other shape, which the regex
 * then reads. Same fields and the same checks (epochMs) as the regex path.
 */
function parseFullDateTime(s: string): number | undefined {
  const n = s.length;
  if (n < 19) return undefined;
  const t = s.charCodeAt(10);
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || (t !== 84 && t !== 116 && t !== 32) || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return undefined;
  const y1 = digits2(s, 0);
  const y2 = digits2(s, 2);
  const month = digits2(s, 5);
  const day = digits2(s, 8);
  const hour = digits2(s, 11);
  const minute = digits2(s, 14);
  const second = digits2(s, 17);
  if (y1 < 0 || y2 < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return undefined;
  let i = 19;
  let ms = 0;
  const sep = s.charCodeAt(i);
  if (sep === 46 || sep === 44) {
    // [.,] then one or more digits; the first three are the milliseconds.
    let k = 0;
    i++;
    for (let c = s.charCodeAt(i) - 48; i < n && c >= 0 && c <= 9; c = s.charCodeAt(++i) - 48) if (k++ < 3) ms = ms * 10 + c;
    if (k === 0) return undefined;
    for (; k < 3; k++) ms *= 10;
  }
  let offsetMin = 0;
  if (i < n) {
    const z = s.charCodeAt(i);
    if (z === 90 || z === 122) {
      if (i + 1 !== n) return undefined;
    } else if (z === 43 || z === 45) {
      const oh = digits2(s, i + 1);
      if (oh < 0) return undefined;
      let om = 0;
      const rest = n - (i + 3);
      if (rest === 2 || (rest === 3 && s.charCodeAt(i + 3) === 58)) {
        om = digits2(s, n - 2);
        if (om < 0) return undefined;
      } else if (rest !== 0) return undefined;
      if (oh > 23 || om > 59) return Number.NaN;
      offsetMin = (z === 45 ? -1 : 1) * (oh * 60 + om);
    } else return undefined;
  }
  return epochMs(y1 * 100 + y2, month, day, hour, minute, second, ms, offsetMin);
}

/** For the trace schema's `date-time` format (ajv): the forms parseTimestamp accepts. */
export function isTimestamp(s: string): boolean {
  return Number.isFinite(parseTimestamp(s));
}
