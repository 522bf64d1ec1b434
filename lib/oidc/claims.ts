// What a claim of an ID token or a session may hold: text PostgreSQL can store. Checked at sign-in (login.ts) and
// again on every session check (lib/auth/session.ts).
/** A lone UTF-16 surrogate: text that came from invalid UTF-8 or was cut mid-character. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when `s` is well-formed Unicode (String.prototype.isWellFormed, which the compile target lacks). */
export function isWellFormedText(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/**
 * What is wrong with a claim's text, or null: a NUL character (PostgreSQL refuses it in text, so a session carrying
 * one would fail every query it reaches), or ill-formed Unicode.
 */
export function claimTextProblem(s: string): "a NUL character" | "invalid Unicode" | null {
  if (s.includes("\0")) return "a NUL character";
  if (!isWellFormedText(s)) return "invalid Unicode";
  return null;
}
