/**
 * Test-only: the regular expressions lib/ai/redact.ts used before its linear-time rewrite. They
 * backtrack quadratically on long hostile input (`a-a-a-…`), so they are only ever run on short
 * strings, as the reference the rewrite must agree with character for character.
 */
const RULES: { pattern: RegExp; replace: string | ((m: string) => string) }[] = [
  { pattern: /\b([a-z][a-z0-9+.-]*:\/\/)[^\s"'<>`]*@/gi, replace: "$1[credentials]@" },
  { pattern: /\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, replace: "$1 [token]" },
  {
    pattern:
      /\b((?:[a-z0-9_-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)[a-z0-9_-]*)["']?\s*[:=]\s*)(?:"[^"]*"|'[^']*'|[^\s,;&"']+)/gi,
    replace: "$1[redacted]",
  },
  {
    pattern:
      /\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{12,}|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bglpat-[A-Za-z0-9_-]{16,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
    replace: "[api-key]",
  },
  { pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, replace: "[jwt]" },
  { pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, replace: "[email]" },
  {
    pattern: /\b[A-Za-z0-9+/_=]{32,}/g,
    replace: (m: string) => ((/[A-Z]/.test(m) && /[a-z]/.test(m) && /\d/.test(m)) || /^[0-9a-fA-F]{32,}$/.test(m) ? "[secret]" : m),
  },
  { pattern: /(?<![\d])\+?\d(?:[ -]?\d){8,}(?![\d])/g, replace: "[number]" },
];

/** The previous redact(): same contract, quadratic time. Short inputs only. */
export function referenceRedact(text: string): string {
  if (text.length > 2000) throw new Error("the reference redaction is quadratic: short inputs only");
  let out = text;
  for (const rule of RULES) out = out.replace(rule.pattern, rule.replace as string);
  return out;
}
