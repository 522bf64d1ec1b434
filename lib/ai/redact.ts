/**
 * Redaction of prompts before they are stored in generation_log. Regular expressions are the
 * right tool here (unlike SQL): prompts are free text and we only need to blank recognisable
 * secret shapes. Over-redacting a log line is cheap; leaking a credential is not.
 */
const RULES: { pattern: RegExp; replace: string | ((...m: string[]) => string) }[] = [
  // Credentials in URLs: scheme://user:password@host → scheme://[credentials]@host (before emails, which look alike).
  // Everything up to the last @ of the URL goes: people paste passwords with unescaped / or @, and
  // an empty user (redis://:password@host) is common. A path holding an @ is over-redacted, which is cheap.
  { pattern: /\b([a-z][a-z0-9+.-]*:\/\/)[^\s"'<>`]*@/gi, replace: "$1[credentials]@" },
  // Authorization headers and bearer/basic tokens.
  { pattern: /\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, replace: "$1 [token]" },
  // key=value / key: value pairs naming a secret (passwords, passphrases, API keys, any *token*, DSN password=…).
  {
    pattern:
      /\b((?:[a-z0-9_-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)[a-z0-9_-]*)["']?\s*[:=]\s*)(?:"[^"]*"|'[^']*'|[^\s,;&"']+)/gi,
    replace: "$1[redacted]",
  },
  // Well-known API key shapes: OpenAI/Anthropic/Stripe sk-/pk-/rk-, GitHub, GitLab, Slack, Google, AWS access key ids.
  {
    pattern:
      /\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{12,}|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bglpat-[A-Za-z0-9_-]{16,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
    replace: "[api-key]",
  },
  // JSON Web Tokens.
  { pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, replace: "[jwt]" },
  // Email addresses.
  { pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, replace: "[email]" },
  // Long opaque secrets: 32+ chars mixing upper, lower and digits (base64 keys), or 32+ hex digits.
  {
    pattern: /\b[A-Za-z0-9+/_=]{32,}/g,
    replace: (m: string) =>
      (/[A-Z]/.test(m) && /[a-z]/.test(m) && /\d/.test(m)) || /^[0-9a-fA-F]{32,}$/.test(m) ? "[secret]" : m,
  },
  // Long digit runs (card, phone, account and ID numbers): 9+ digits, optionally split by spaces or dashes.
  { pattern: /(?<![\d])\+?\d(?:[ -]?\d){8,}(?![\d])/g, replace: "[number]" },
];

/** Returns `text` with emails, tokens, API keys, passwords, URL credentials and long digit runs blanked. */
export function redact(text: string): string {
  let out = text;
  for (const rule of RULES) out = out.replace(rule.pattern, rule.replace as string);
  return out;
}
