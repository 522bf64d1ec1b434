import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { routePath } from "hono/route";
import { AppError } from "./errors.ts";

/**
 * Input rules every request of the handlers app passes before any route sees it (docs/api.md, "Input
 * rules"): no string (path segment, query key or value, JSON key or value) may hold NUL (U+0000) or an
 * unpaired UTF-16 surrogate, which PostgreSQL cannot store in text or jsonb; JSON bodies nest at most
 * MAX_JSON_DEPTH levels (deeper values overflow the stack of JSON.stringify and jsonb) and are at most
 * MAX_JSON_BODY_BYTES long. Checked in one place so that no route can forget it.
 */

/** Bytes of the largest body any route accepts (a dashboard of 50 panels); routes may set lower limits. */
export const MAX_JSON_BODY_BYTES = 2 * 1024 * 1024;
/** Levels of nested arrays and objects a JSON body may have; a dashboard spec with panel options needs about 8. */
export const MAX_JSON_DEPTH = 32;

/**
 * The largest PostgreSQL `integer` (int4). Versions of dashboards and sources are stored as one, so a
 * client's version above it can never match and would make PostgreSQL fail the statement instead.
 */
export const MAX_PG_INTEGER = 2_147_483_647;

/** Why a string is refused, or null when PostgreSQL can store it. */
export function refusedCharacter(s: string): string | null {
  // Tested first: most strings have neither, and the regex below is the costlier test.
  if (s.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (LONE_SURROGATE.test(s)) return "must not contain an unpaired UTF-16 surrogate (U+D800 to U+DFFF)";
  return null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** One refused input field, in the envelope of the app's other validation errors. */
export interface InputIssue {
  path: string;
  message: string;
}

/**
 * The first refused string or nesting in a parsed JSON value, or null. Iterative, so a hostile nesting
 * depth cannot overflow this walk either. Paths are dotted (`spec.panels.0.title`).
 */
export function jsonValueIssue(value: unknown, maxDepth = MAX_JSON_DEPTH): InputIssue | null {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === "string") {
      const why = refusedCharacter(v);
      if (why) return { path: pathName(path), message: why };
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (path.length >= maxDepth)
      return { path: pathName(path), message: `must not nest arrays and objects deeper than ${maxDepth} levels` };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: [...path, String(i)] });
      continue;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i];
      const why = refusedCharacter(key);
      if (why) return { path: pathName([...path, KEY_PLACEHOLDER]), message: `has a key that ${why}` };
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return null;
}

/** Shown instead of a key that cannot be printed safely (it holds refused characters or is long). */
const KEY_PLACEHOLDER = "(key)";
const PRINTABLE_KEY = /^[\x21-\x7e]{1,64}$/;

function pathName(path: string[]): string {
  // Keys are client text: only short printable ASCII keys are echoed back.
  return path.map((p) => (p === KEY_PLACEHOLDER || PRINTABLE_KEY.test(p) ? p : "(key)")).join(".");
}

/** The refusal of a body over `maxBytes`: 400 `bad_request` with the limit, the same from every route. */
function bodyTooLarge(maxBytes: number): AppError {
  return new AppError("bad_request", `The request body is larger than ${maxBytes} bytes.`, { limit: maxBytes });
}

/**
 * Middleware: a route's own body-size limit, below MAX_JSON_BODY_BYTES (a query preview takes 64 KiB,
 * a chat question 512 KiB). Over it is 400 `bad_request` naming the limit, before anything parses the body.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw bodyTooLarge(maxBytes);
    },
  });
}

/** Request parts that carry no client input worth a check, or must answer unconditionally (probes). */
const EXEMPT_PATHS = new Set(["/api/health", "/api/ready", "/api/metrics"]);
const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Middleware: refuses a request whose path parameters, query string or JSON body break the input rules
 * with 400 `validation_failed` naming the field (`issues: [{path, message}]`, as the zod validation of
 * the routes does). Put it before every route; it reads a copy of the body, so routes and their own
 * body limits read the request as sent.
 */
export function rejectRefusedInput(opts: { maxBodyBytes?: number; maxDepth?: number } = {}): MiddlewareHandler {
  const maxBodyBytes = opts.maxBodyBytes ?? MAX_JSON_BODY_BYTES;
  const maxDepth = opts.maxDepth ?? MAX_JSON_DEPTH;
  return async (c, next) => {
    const url = new URL(c.req.url);
    if (EXEMPT_PATHS.has(url.pathname)) return next();

    const pattern = routePath(c, -1).split("/");
    const segments = url.pathname.split("/");
    segments.forEach((raw, i) => {
      const why = refusedCharacter(decodeSegment(raw));
      if (!why) return;
      const name = pattern.length === segments.length && pattern[i]?.startsWith(":") ? pattern[i].slice(1) : "(path)";
      throw refused("param", { path: name, message: why });
    });

    for (const [key, value] of url.searchParams) {
      const keyWhy = refusedCharacter(key);
      if (keyWhy) throw refused("query", { path: KEY_PLACEHOLDER, message: `has a key that ${keyWhy}` });
      const why = refusedCharacter(value);
      if (why) throw refused("query", { path: PRINTABLE_KEY.test(key) ? key : KEY_PLACEHOLDER, message: why });
    }

    if (BODY_METHODS.has(c.req.method) && c.req.raw.body) {
      const text = await readCopy(c.req.raw, maxBodyBytes);
      if (text === null) throw bodyTooLarge(maxBodyBytes);
      let parsed: unknown;
      let isJson = true;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON: the route's own parsing refuses it (or does not read a body at all).
        isJson = false;
      }
      const issue = isJson ? jsonValueIssue(parsed, maxDepth) : null;
      if (issue) throw refused("body", issue);
    }
    return next();
  };
}

function refused(where: "param" | "query" | "body", issue: InputIssue): AppError {
  return new AppError("validation_failed", `Invalid request ${where}: ${issue.path || "(root)"}: ${issue.message}`, { issues: [issue] });
}

/** A path segment as the router hands it to a route (percent-decoded), or as sent when it does not decode. */
function decodeSegment(raw: string): string {
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The body of a copy of `req` as text, or null when it is longer than `maxBytes` (read no further). */
async function readCopy(req: Request, maxBytes: number): Promise<string | null> {
  const declared = req.headers.get("content-length");
  if (declared !== null && !req.headers.has("transfer-encoding") && Number(declared) > maxBytes) return null;
  const reader = req.clone().body!.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      // Not awaited: cancelling one branch of a tee settles only once the other (the route's) is cancelled too.
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
