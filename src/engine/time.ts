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
  const m = ISO.exec(s);
  if (!m) return Number.NaN;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && isLeap(year) ? 29 : DAYS[month - 1])) return Number.NaN;
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  let second = m[6] === undefined ? 0 : Number(m[6]);
  let ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (minute > 59 || second > 60) return Number.NaN;
  if (hour > 24 || (hour === 24 && (minute !== 0 || second !== 0 || ms !== 0))) return Number.NaN;
  if (second === 60) {
    second = 59;
    ms = 999;
  }
  let offsetMin = 0;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = m[11] === undefined ? 0 : Number(m[11]);
    if (oh > 23 || om > 59) return Number.NaN;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
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

/** For the trace schema's `date-time` format (ajv): the forms parseTimestamp accepts. */
export function isTimestamp(s: string): boolean {
  return Number.isFinite(parseTimestamp(s));
}
