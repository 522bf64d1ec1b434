/**
 * Model output is not request input: no middleware has refused NUL or unpaired UTF-16 surrogates
 * in it, and PostgreSQL refuses both in text and jsonb, failing the whole insert. What the AI
 * routes store (chat turns, generation_log rows) passes through here first.
 */

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` with every NUL and unpaired surrogate replaced by U+FFFD, which PostgreSQL text and jsonb store. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, "\uFFFD");
}

/** A JSON value whose strings and keys are all storableText. */
export function storableJson(value: unknown): unknown {
  if (typeof value === "string") return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [storableText(k), storableJson(v)]));
  }
  return value;
}
