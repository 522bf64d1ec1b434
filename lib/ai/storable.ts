/**
 * Model output is not request input: no middleware has refused NUL or unpaired UTF-16 surrogates
 * in it, and PostgreSQL refuses both in text and jsonb, failing the whole insert. What the AI
 * routes store (chat turns, generation_log rows) passes through here first.
 */

import { MAX_JSON_DEPTH } from "../http/input.ts";
import { TOO_DEEP_MARKER } from "./output-bounds.ts";

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` with every NUL and unpaired surrogate replaced by U+FFFD, which PostgreSQL text and jsonb store. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, "\uFFFD");
}

/**
 * A JSON value whose strings and keys are all storableText. The recursion is bounded: a part nested past
 * MAX_JSON_DEPTH is stored as a marker, never walked.
 */
export function storableJson(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return storableText(value);
  if (value && typeof value === "object" && depth >= MAX_JSON_DEPTH) return TOO_DEEP_MARKER;
  if (Array.isArray(value)) return value.map((v) => storableJson(v, depth + 1));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [storableText(k), storableJson(v, depth + 1)]),
    );
  }
  return value;
}
