/**
 * Strict UTF-8 text for policy files. Reading with 'utf8' turns invalid bytes into U+FFFD silently, so a
 * Latin-1 `café` in a list or condition would load fine and never match: the file must be rejected instead,
 * at the position of the first bad byte.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { StewardError, type StewardErrorCode } from '../../errors.js';

const decoder = new TextDecoder('utf-8', { fatal: true }); // strips a leading BOM (ignoreBOM defaults to false)

/** Offset of the lead byte of the first ill-formed UTF-8 sequence (WHATWG/Unicode rules: no overlongs, surrogates or > U+10FFFF), or -1. */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    let n: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c === 0xe0) lo = 0xa0; // overlong
      if (c === 0xed) hi = 0x9f; // UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c === 0xf0) lo = 0x90; // overlong
      if (c === 0xf4) hi = 0x8f; // > U+10FFFF
    } else return i;
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || d < (k === 1 ? lo : 0x80) || d > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return -1;
}

/**
 * 1-based line:col of byte `offset`, with col counted in UTF-16 units of the decoded line like the YAML
 * parser's positions (so every error of a file points the same way). A leading BOM is not counted.
 */
function bytePosition(b: Uint8Array, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
  for (let i = lineStart; i < offset; i++)
    if (b[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  // The bytes before `offset` on this line are valid UTF-8 (offset is the first invalid byte).
  return { line, col: decoder.decode(b.subarray(lineStart, offset)).length + 1 };
}

/** Decodes `bytes` as UTF-8 (BOM stripped), or returns a positioned error naming the first invalid byte. */
export function decodeUtf8(bytes: Uint8Array, file: string, code: StewardErrorCode = 'STEWARD_BLUEPRINT_SYNTAX'): { text: string } | { error: StewardError } {
  try {
    return { text: decoder.decode(bytes) };
  } catch {
    const at = Math.max(0, firstInvalidUtf8(bytes));
    const hex = (bytes[at] ?? 0).toString(16).toUpperCase().padStart(2, '0');
    return {
      error: new StewardError(code, `invalid UTF-8: byte 0x${hex} at offset ${at} (files must be UTF-8; re-encode, e.g. iconv -f latin1 -t utf-8)`, {
        position: { file, ...bytePosition(bytes, at) },
      }),
    };
  }
}

/** readFile + decodeUtf8; I/O errors still throw. */
export async function readUtf8File(path: string, file = path, code?: StewardErrorCode): Promise<{ text: string } | { error: StewardError }> {
  return decodeUtf8(await readFile(path), file, code);
}

/** readFileSync + strict UTF-8 (BOM stripped); invalid bytes throw the positioned StewardError, I/O errors throw as is. */
export function readUtf8FileSync(path: string, code: StewardErrorCode = 'STEWARD_CONFIG'): string {
  const r = decodeUtf8(readFileSync(path), path, code);
  if ('error' in r) throw r.error;
  return r.text;
}
