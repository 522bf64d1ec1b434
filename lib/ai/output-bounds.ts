import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH } from "../http/input.ts";

/**
 * Model output is held to the limits of a request body: nesting at most MAX_JSON_DEPTH levels of arrays and objects,
 * and at most MAX_JSON_BODY_BYTES of JSON text. An editor who can steer the model could otherwise make it answer what
 * no request may carry (a proposal nested thousands of levels deep), and whatever walks the value afterwards
 * (validation, redaction, storage) would have to survive it.
 */
export const MODEL_OUTPUT_LIMITS = { maxDepth: MAX_JSON_DEPTH, maxBytes: MAX_JSON_BODY_BYTES } as const;

/**
 * Why `value` is past the limits, or null. Iterative, so no nesting can overflow it, and it stops as soon as a limit
 * is passed. The size counts the bytes of the value's JSON text (UTF-8 of strings and keys, plus punctuation).
 */
export function modelOutputIssue(value: unknown, limits: { maxDepth: number; maxBytes: number } = MODEL_OUTPUT_LIMITS): string | null {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  let bytes = 0;
  const tooBig = () => `is larger than ${limits.maxBytes} bytes of JSON`;
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (typeof v === "string") bytes += Buffer.byteLength(v) + 2;
    else if (v === null || typeof v !== "object") bytes += String(v).length;
    else {
      if (depth >= limits.maxDepth) return `nests arrays and objects deeper than ${limits.maxDepth} levels`;
      bytes += 2;
      if (Array.isArray(v)) {
        for (const item of v) stack.push({ value: item, depth: depth + 1 });
        bytes += v.length;
      } else {
        for (const [key, item] of Object.entries(v as Record<string, unknown>)) {
          bytes += Buffer.byteLength(key) + 4;
          stack.push({ value: item, depth: depth + 1 });
        }
      }
    }
    if (bytes > limits.maxBytes) return tooBig();
  }
  return null;
}

/** Strips a Markdown code fence around JSON, as small local models often add one. */
export function unfence(text: string): string {
  const m = /^\s*```[a-zA-Z]*\s*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return m ? m[1]! : text;
}

/**
 * Why the model's answer text is past the limits, or null: its size, then, when it is JSON (a Markdown fence around
 * it removed), what modelOutputIssue says of the parsed value. Text that is not JSON is left to schema validation.
 */
export function modelOutputTextIssue(text: string, limits: { maxDepth: number; maxBytes: number } = MODEL_OUTPUT_LIMITS): string | null {
  if (Buffer.byteLength(text) > limits.maxBytes) return `is larger than ${limits.maxBytes} bytes of JSON`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(unfence(text));
  } catch {
    return null;
  }
  return modelOutputIssue(parsed, limits);
}

/** Shown in place of a part of a stored value nested past the limit (redaction and storage never go deeper). */
export const TOO_DEEP_MARKER = `[nested deeper than ${MAX_JSON_DEPTH} levels: left out]`;
