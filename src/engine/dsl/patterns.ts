/** Named patterns for matches_regex(field, "NAME"); RE2 syntax. Config `namedPatterns` may add or override. */
export const BUILTIN_PATTERNS: Readonly<Record<string, string>> = {
  SSN_PATTERN: '\\b\\d{3}-\\d{2}-\\d{4}\\b',
  CREDIT_CARD_PATTERN: '\\b(?:\\d[ -]?){12,18}\\d\\b',
  EMAIL_PATTERN: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}',
  PHONE_PATTERN: '(?:\\+\\d{1,3}[ .-]?)?(?:\\(\\d{3}\\)|\\d{3})[ .-]?\\d{3}[ .-]?\\d{4}\\b',
  IPV4_PATTERN: '\\b(?:(?:25[0-5]|2[0-4]\\d|1?\\d?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1?\\d?\\d)\\b',
  AWS_KEY_PATTERN: '\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b',
  IBAN_PATTERN: '\\b[A-Z]{2}\\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\\b',
  GITHUB_TOKEN_PATTERN: '\\bgh[pousr]_[A-Za-z0-9]{36,255}\\b',
  PRIVATE_KEY_PATTERN: '-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----',
  JWT_PATTERN: '\\beyJ[A-Za-z0-9_-]+\\.eyJ[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+',
};

/** Names that look like a pattern reference; an unknown one is an author error, not a literal regex. */
export const PATTERN_NAME_RE = /^[A-Z][A-Z0-9_]*_PATTERN$/;
