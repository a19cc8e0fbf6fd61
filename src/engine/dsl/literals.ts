/**
 * Size and duration literals (spec-decisions D10). Sizes: KB/MB/GB/TB are decimal (SI, 1 MB = 10^6 bytes),
 * KiB/MiB/GiB/TiB binary; units are case-insensitive. Durations: ms, s, m, h, d, w → milliseconds.
 */

const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
};

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

export function sizeMultiplier(unit: string): number | undefined {
  return SIZE_UNITS[unit.toLowerCase()];
}

export function durationMultiplier(unit: string): number | undefined {
  return DURATION_UNITS[unit.toLowerCase()];
}

const DURATION_RE = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/i;

/** "1m" → 60000; undefined when the text is not a positive duration. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION_RE.exec(text);
  if (!m) return undefined;
  const ms = Number(m[1]) * DURATION_UNITS[m[2]!.toLowerCase()]!;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}
