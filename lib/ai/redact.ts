/**
 * Redaction of prompts and model output before they are stored in generation_log. Prompts are
 * free text and we only need to blank recognisable secret shapes. Over-redacting a log line is
 * cheap; leaking a credential is not.
 *
 * Every rule runs in time linear in the length of the text, whatever the text: a model can be
 * steered into an answer of `a-a-a-…` or `http://aaaa…`, and a rule that backtracks
 * quadratically on it would stall the whole process (every route, probes included). The
 * regular expressions below follow two rules that keep V8's backtracking engine linear:
 *
 * - Quantified parts that follow each other match disjoint character classes, so a character
 *   can only ever be matched by one of them and giving it back cannot make the next part match.
 * - A pattern whose unbounded part could fail after a long scan starts only where that scan
 *   cannot have been made by an earlier attempt (a lookbehind anchors it at the start of its
 *   run of characters); otherwise every unbounded part is the pattern's last element, so a long
 *   scan ends in a match that consumes what it scanned.
 *
 * The shapes that cannot be written that way (credentials in URLs, `key=value` pairs, JWTs,
 * emails) are found by short scans around a fixed anchor (`://`, `.eyJ`, a run start) instead.
 * See docs/ai.md for the list of what is redacted.
 */

type Rule = (text: string) => string;

const isAsciiLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isDigit = (c: number) => c >= 48 && c <= 57;
/** `\w` of a regular expression: ASCII letters, digits, underscore. */
const isWord = (c: number) => isAsciiLetter(c) || isDigit(c) || c === 95;
/** Characters of a URL scheme (`[a-z0-9+.-]`, any case). */
const isSchemeChar = (c: number) => isAsciiLetter(c) || isDigit(c) || c === 43 || c === 46 || c === 45;
/** Characters of one JWT segment (`[A-Za-z0-9_-]`). */
const isJwtChar = (c: number) => isWord(c) || c === 45;
/** `\s` of a regular expression, by code unit (redact.test.ts checks every code unit against `/\s/`). */
const isSpace = (c: number) =>
  c === 32 ||
  (c >= 9 && c <= 13) ||
  c === 0xa0 ||
  c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 ||
  c === 0x2029 ||
  c === 0x202f ||
  c === 0x205f ||
  c === 0x3000 ||
  c === 0xfeff;
/** Where a URL run stops: whitespace, quotes, angle brackets, backquote. */
const isUrlStop = (c: number) => c === 34 || c === 39 || c === 60 || c === 62 || c === 96 || isSpace(c);
/** `\b` before position `i` when `text[i]` is a word character. */
const wordStartsAt = (text: string, i: number) => i === 0 || !isWord(text.charCodeAt(i - 1));

/**
 * Credentials in URLs: `scheme://user:password@host` → `scheme://[credentials]@host` (before emails,
 * which look alike). Everything up to the last `@` of the URL goes: people paste passwords with
 * unescaped `/` or `@`, and an empty user (`redis://:password@host`) is common. A path holding an
 * `@` is over-redacted, which is cheap.
 *
 * A URL run is a maximal run of characters other than whitespace, quotes, `<`, `>` and backquote.
 * Each run is scanned forward once (from its first `://`) for its end and its last `@`; a scheme
 * is read backwards from each `://` up to the previous non-scheme character. At most one
 * replacement per run (it ends at the run's last `@`).
 */
function redactUrlCredentials(text: string): string {
  let out = "";
  let copied = 0;
  let from = 0;
  let runEnd = -1;
  let lastAt = -1;
  for (;;) {
    const colon = text.indexOf("://", from);
    if (colon < 0) break;
    if (colon >= runEnd) {
      lastAt = -1;
      runEnd = colon + 3;
      for (; runEnd < text.length; runEnd++) {
        const c = text.charCodeAt(runEnd);
        if (c === 64) lastAt = runEnd;
        else if (isUrlStop(c)) break;
      }
    }
    if (lastAt < colon + 3) {
      // No `@` after this `://` in its run, so none after any later `://` of the run either.
      from = runEnd;
      continue;
    }
    // The scheme: a letter at a word boundary, then scheme characters up to the `://`. The
    // leftmost such start wins, as it would for a regular expression scanning left to right.
    let first = colon;
    while (first > copied && isSchemeChar(text.charCodeAt(first - 1))) first--;
    let start = -1;
    for (let i = first; i < colon; i++) {
      if (isAsciiLetter(text.charCodeAt(i)) && wordStartsAt(text, i)) {
        start = i;
        break;
      }
    }
    if (start < 0) {
      from = colon + 1;
      continue;
    }
    out += `${text.slice(copied, colon + 3)}[credentials]@`;
    copied = lastAt + 1;
    from = runEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Authorization headers and bearer/basic tokens. `\s+` and the token's class are disjoint. */
const BEARER = /\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi;

/** Key names that mark the value after them as a secret (a key *containing* one of these counts). */
const SECRET_KEY = /password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?/i;
/**
 * A key and its separator, anchored at the start of a run of key characters (`[a-z0-9_-]`):
 * leading dashes, the key from its first word character to the end of the run, an optional
 * closing quote, and `:` or `=` with optional whitespace around it. Adjacent parts match
 * disjoint classes.
 */
const KEY_AND_SEPARATOR = /(?<![a-z0-9_-])(-*)([a-z0-9_][a-z0-9_-]*)(["']?\s*[:=]\s*)/gi;
/** The value after a secret key: a double- or single-quoted string, or a bare word. */
const SECRET_VALUE = /"[^"]*"|'[^']*'|[^\s,;&"']+/y;

/**
 * `key=value` / `key: value` pairs naming a secret (passwords, passphrases, API keys, any *token*,
 * DSN `password=…`): the value becomes `[redacted]`. The key is read once per run of key
 * characters, so a long run (`password_password_…`, `a-a-a-…`) costs one scan, not one per start.
 */
function redactSecretPairs(text: string): string {
  let out = "";
  let copied = 0;
  KEY_AND_SEPARATOR.lastIndex = 0;
  for (let m = KEY_AND_SEPARATOR.exec(text); m; m = KEY_AND_SEPARATOR.exec(text)) {
    if (!SECRET_KEY.test(m[2]!)) continue;
    const valueAt = m.index + m[0].length;
    SECRET_VALUE.lastIndex = valueAt;
    if (!SECRET_VALUE.exec(text)) continue;
    out += `${text.slice(copied, valueAt)}[redacted]`;
    copied = SECRET_VALUE.lastIndex;
    KEY_AND_SEPARATOR.lastIndex = copied;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Well-known API key shapes: OpenAI/Anthropic/Stripe sk-/pk-/rk-, GitHub, GitLab, Slack, Google,
 * AWS access key ids. Each unbounded part ends its alternative: a long scan is a match.
 */
const API_KEY =
  /\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{12,}|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bglpat-[A-Za-z0-9_-]{16,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g;

/**
 * JSON Web Tokens: `eyJ<5+>.eyJ<5+>.<signature>`, three runs of `[A-Za-z0-9_-]` joined by dots,
 * the first starting with `eyJ` at a word boundary. Found from each `.eyJ`: the run before it is
 * scanned backwards for the header, the runs after it forwards, each run at most twice in all.
 */
function redactJwts(text: string): string {
  let out = "";
  let copied = 0;
  let from = 0;
  for (;;) {
    const dot = text.indexOf(".eyJ", from);
    if (dot < 0) break;
    from = dot + 1;
    let first = dot;
    while (first > copied && isJwtChar(text.charCodeAt(first - 1))) first--;
    // The header: the leftmost `eyJ` at a word boundary in the run; later ones are shorter.
    let start = -1;
    for (let i = first; i + 3 <= dot; i++) {
      if (text.startsWith("eyJ", i) && wordStartsAt(text, i)) {
        start = i;
        break;
      }
    }
    if (start < 0 || dot - (start + 3) < 5) continue;
    let payloadEnd = dot + 4;
    while (payloadEnd < text.length && isJwtChar(text.charCodeAt(payloadEnd))) payloadEnd++;
    if (payloadEnd - (dot + 4) < 5 || text.charCodeAt(payloadEnd) !== 46) continue;
    let end = payloadEnd + 1;
    while (end < text.length && isJwtChar(text.charCodeAt(end))) end++;
    out += `${text.slice(copied, start)}[jwt]`;
    copied = end;
    from = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Email addresses, anchored at the start of a run of local-part characters: an address found
 * from a later start in the same run would end at the same `@`, so a run is read once.
 */
const EMAIL = /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;
/** The same address read right where the previous one ended (the domain may stop inside a run). */
const EMAIL_HERE = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/y;

function redactEmails(text: string): string {
  let out = "";
  let copied = 0;
  let from = 0;
  for (;;) {
    let m: RegExpExecArray | null = null;
    if (copied > 0 && from === copied) {
      EMAIL_HERE.lastIndex = from;
      m = EMAIL_HERE.exec(text);
    }
    if (!m) {
      EMAIL.lastIndex = from;
      m = EMAIL.exec(text);
    }
    if (!m) break;
    out += `${text.slice(copied, m.index)}[email]`;
    copied = m.index + m[0].length;
    from = copied;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Long opaque secrets: 32+ characters mixing upper case, lower case and digits (base64 keys), or
 * 32+ hex digits, from the first word character of a run of `[A-Za-z0-9+/_=]` to its end. The
 * lookbehind anchors one attempt per run (a later start in the run would only be shorter).
 */
const OPAQUE = /(?<![A-Za-z0-9+/_=])([+/=]*)([A-Za-z0-9_][A-Za-z0-9+/_=]{31,})/g;
const HEX = /^[0-9a-fA-F]+$/;
const isOpaqueSecret = (m: string) => (/[A-Z]/.test(m) && /[a-z]/.test(m) && /\d/.test(m)) || HEX.test(m);
const redactOpaque = (_: string, lead: string, run: string) => lead + (isOpaqueSecret(run) ? "[secret]" : run);

/**
 * Long digit runs (card, phone, account and ID numbers): 9+ digits, optionally split by single
 * spaces or dashes. Each repetition is an optional separator then a digit (disjoint), so the
 * run is read once; a failed attempt reads fewer than 9 digits.
 */
const DIGITS = /(?<![\d])\+?\d(?:[ -]?\d){8,}(?![\d])/g;

const RULES: Rule[] = [
  redactUrlCredentials,
  (t) => t.replace(BEARER, "$1 [token]"),
  redactSecretPairs,
  (t) => t.replace(API_KEY, "[api-key]"),
  redactJwts,
  redactEmails,
  (t) => t.replace(OPAQUE, redactOpaque),
  (t) => t.replace(DIGITS, "[number]"),
];

/** Returns `text` with emails, tokens, API keys, passwords, URL credentials and long digit runs blanked, in linear time. */
export function redact(text: string): string {
  let out = text;
  for (const rule of RULES) out = rule(out);
  return out;
}
