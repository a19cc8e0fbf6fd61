/**
 * Keeps secrets out of logs, error messages and metric labels: URL userinfo passwords (Redis,
 * ClickHouse, schema registry, LLM base URL), key material, and unbounded label values.
 */
import { createHash } from 'node:crypto';

/** `scheme://user:password@host` (also `scheme://:password@host`) anywhere in a text. */
// The password runs to the LAST `@` of the authority: a raw `@` in it (ioredis and WHATWG URL accept one) must
// not end the match early and leave the rest of the password in the text. A password stops only at characters
// a URL cannot carry raw (whitespace, `/?#`, `"<>`): `,` and `'` are legal in one, and hiding too much is the
// safe way to fail. The user part stops at quotes and commas too, so a URL without credentials inside JSON does
// not reach into the fields after it; the scheme is bounded (at most 32 characters) so a long run of
// scheme-like text cannot make the match backtrack for seconds.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)([^\s/?#@:"'<>,]*):([^\s/?#"<>]*)@/gi;

/** Replaces the password of every `scheme://user:password@` in `text` with `***` (the user stays). */
export function redactSecrets(text: string): string {
  return text.includes('://') ? text.replace(URL_USERINFO, (_m, scheme: string, user: string) => `${scheme}${user}:***@`) : text;
}

/** A URL for logs and errors: the userinfo password replaced by `***`; undefined passes through. */
export function redactUrl<T extends string | undefined>(url: T): T {
  return (url === undefined ? url : redactSecrets(url)) as T;
}

/** What an error may say about a secret value: its length, never its content. */
export function describeHidden(value: string): string {
  return `value hidden, ${value.length} chars`;
}

/** Prometheus label values are capped at this many characters (a hash suffix marks a cut value). */
export const MAX_LABEL_CHARS = 128;

/**
 * A label value from untrusted input (agent ids): control characters (NUL, newlines, DEL, C1) are
 * dropped and values longer than `max` are cut, with `~` and 12 hex chars of the SHA-256 of the full
 * value appended so distinct long values keep distinct series.
 */
export function safeLabelValue(value: string, max = MAX_LABEL_CHARS): string {
  // eslint-disable-next-line no-control-regex
  const clean = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
  if (clean.length <= max) return clean;
  const hash = createHash('sha256').update(value).digest('hex').slice(0, 12);
  // Do not cut a surrogate pair in half.
  let cut = max - 13;
  const c = clean.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--;
  return `${clean.slice(0, cut)}~${hash}`;
}
