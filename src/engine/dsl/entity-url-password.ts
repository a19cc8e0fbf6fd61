/**
 * The `secret` detector's password-in-a-URL part (docs/dsl.md "Entities"): `scheme://user:password@host`, with
 * templates, masks and demo passwords left out. Split from entities.ts, which calls it from hasSecret.
 */
import { RE2JS } from 're2js';
import { isAlnum, isDigit, isLetter } from './entity-chars.js';

function isSchemeChar(c: number): boolean {
  return isAlnum(c) || c === 43 || c === 45 || c === 46; // + - .
}

// A password that is a template or a mask, not a credential: <password>, ${DB_PASS}, $PGPASSWORD, {{ pass }},
// %PASS%, [password], ****, xxxx, "...". RE2, as every pattern run on trace text should be.
const URL_PASSWORD_PLACEHOLDER = RE2JS.compile('^(?:<[^>]*>|\\$\\{[^}]*\\}|\\$[A-Za-z_][A-Za-z0-9_]*|\\{\\{.*\\}\\}|%[A-Za-z_][A-Za-z0-9_]*%|\\[[^\\]]*\\]|\\*+|[xX]+|\\.{3}|…)$');
// Passwords of examples, tutorials and local dev setups (docker-compose, README snippets): no one's secret, and
// blocking them blocks ordinary coding and devops answers. Compared case-insensitively with the whole password.
const URL_DEMO_PASSWORDS = new Set(['password', 'passwd', 'pass', 'pwd', 'secret', 'changeme', 'example', 'test', 'admin', 'root', 'guest', 'mypassword', 'yourpassword', 'my_password', 'your_password']);

/** A placeholder, mask or demo password: a template, `****`, one of URL_DEMO_PASSWORDS, or the user name again. */
function isDemoUrlPassword(user: string, password: string): boolean {
  const p = password.toLowerCase();
  return URL_DEMO_PASSWORDS.has(p) || p === user.toLowerCase() || URL_PASSWORD_PLACEHOLDER.test(password);
}
// Characters of a URL's userinfo read at most (an ordinary one is far shorter).
const MAX_USERINFO = 256;

/**
 * A password in a URL's userinfo: `scheme://user:password@host` (postgres, mysql, mongodb+srv, redis with an empty
 * user, amqp, https…). Each `://` reads forward to the first '@', '/', '?', '#' (before the colon or after a port) or
 * space, and the next `://` starts after a '/', so the reads never overlap: linear. Placeholders (`<password>`, `${DB_PASS}`, `****`) and demo passwords
 * (`user:password`, `postgres:postgres`, `guest:guest`) are not secrets.
 */
export function hasUrlPassword(text: string): boolean {
  for (let k = text.indexOf('://'); k >= 0; k = text.indexOf('://', k + 3)) {
    let s = k;
    while (s > 0 && k - s < 32 && isSchemeChar(text.charCodeAt(s - 1))) s--;
    if (k - s < 2 || !isLetter(text.charCodeAt(s))) continue;
    let colon = -1;
    // Digits only since the colon, at least one, in a web URL (http, https, ws, wss: the schemes with fragments): a
    // port, not a password. Database and broker URLs have no fragments, so "postgres://app:2024#Xk9…@db" and
    // "postgres://john.doe:2024#Spring!x@db" stay passwords (reviews of 2d820d8 and d14e3fa).
    let port = false;
    const web = isWebScheme(text, s, k);
    let e = k + 3;
    let bracket = text.charCodeAt(e) === 91; // [IPv6]: its colons are not the userinfo's
    const stop = Math.min(text.length, e + MAX_USERINFO);
    for (; e < stop; e++) {
      const c = text.charCodeAt(e);
      if (bracket) {
        if (c === 93) bracket = false;
        else if (c <= 32) break;
        continue;
      }
      // '#' ends the URL before the colon and after a port ("localhost:3000#token=…&email=jane@x" is a
      // fragment), else it is part of the password: generated ones carry it unescaped ("app:Xk9#mP2vL8q@db").
      if (c === 64 || c === 47 || c === 63 || (c === 35 && (colon < 0 || port)) || c <= 32) break; // @ / ? # space
      if (c === 58 && colon < 0) colon = e;
      else if (colon >= 0) port = web && isDigit(c) && (port || e === colon + 1);
    }
    if (colon < 0 || text.charCodeAt(e) !== 64 || e === colon + 1) continue;
    const host = text.charCodeAt(e + 1);
    if (!(isAlnum(host) || host === 91)) continue; // a host name, an address or [IPv6]
    if (!isDemoUrlPassword(text.slice(k + 3, colon), text.slice(colon + 1, e))) return true;
  }
  return false;
}

/** Whether text[from, to) is http, https, ws or wss (any case): the URL schemes that carry fragments. */
function isWebScheme(text: string, from: number, to: number): boolean {
  const n = to - from;
  if (n < 2 || n > 5) return false;
  const w = text.slice(from, to).toLowerCase();
  return w === 'http' || w === 'https' || w === 'ws' || w === 'wss';
}
