import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Env } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { ZodError } from "zod";
import { ERROR_STATUS, type ErrorCode } from "../lib/http/errors.ts";
import { AppError } from "../lib/http/errors.ts";

export const OPENAPI_PATH = "/api/openapi.json";

/** One invalid input field: a dotted path (`spec.panels.0.sql`) and what is wrong with it. */
export const FieldIssueSchema = z.object({ path: z.string(), message: z.string() }).openapi("FieldIssue");

/** The problem+json envelope (RFC 9457) every error of the API uses; `code` is stable, `detail` is for people. */
export const ProblemSchema = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    detail: z.string(),
    requestId: z.string().optional().openapi({ description: "Also sent as the X-Request-Id header; quote it when reporting a problem." }),
    reason: z.string().optional().openapi({ description: "For guard rejections: the guard's reason (empty, comment, structure, keyword, function, catalog, time)." }),
    issues: z.array(FieldIssueSchema).optional(),
  })
  .openapi("Problem");

type ProblemResponse = {
  description: string;
  headers?: Record<string, { description: string; schema: { type: "integer" } }>;
  content: { "application/problem+json": { schema: typeof ProblemSchema } };
};

/**
 * The 503 of every route that reads the config store: it is down or not answering (a connection error
 * or timeout, coded at the one error handler), with Retry-After in seconds.
 */
export const CONFIG_STORE_UNAVAILABLE: ProblemResponse = {
  description:
    "The configuration store is down or not answering (`config_store_unavailable`), with Retry-After; a hung store is given up within its timeouts",
  headers: { "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer" } } },
  content: { "application/problem+json": { schema: ProblemSchema } },
};

/**
 * Response entries for the problem statuses a route can answer, for `createRoute({ responses })`, plus
 * the 503 `config_store_unavailable` every such route can answer (each reads the config store).
 */
export function problems(...statuses: (400 | 401 | 403 | 404 | 409 | 422 | 429 | 502 | 504)[]) {
  return { ...problemsOnly(...statuses), 503: CONFIG_STORE_UNAVAILABLE };
}

/** The problem entries of `statuses` alone, for a route that never reads the config store. */
export function problemsOnly(...statuses: (400 | 401 | 403 | 404 | 409 | 422 | 429 | 502 | 504)[]) {
  const out: Record<number, ProblemResponse> = {};
  for (const s of statuses) {
    out[s] = { description: PROBLEM_DESCRIPTIONS[s], content: { "application/problem+json": { schema: ProblemSchema } } };
  }
  return out;
}

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid input (`validation_failed` names the field) or a result over MAX_RESULT_BYTES (`result_too_large`)",
  401: "No valid session (`unauthenticated`)",
  403: "Role too weak (`forbidden`) or a cross-site request (`cross_site_request`)",
  404: "No such resource in a workspace you belong to (`not_found`)",
  409: "The resource changed since the version you sent (`version_conflict`), is in use (`conflict`) or a limit is reached (`source_limit_reached`)",
  422: "Refused by the SQL guard (`guard_rejected`, with `reason`), an invalid spec (`spec_invalid`), a source host the host policy refuses (`source_host_refused`, with `field`) or a secret_ref not granted (`grant_missing`)",
  429: "Too many requests (`rate_limited`), with Retry-After",
  502: "The metrics store could not be reached (`source_unavailable`)",
  504: "The query exceeded QUERY_TIMEOUT_SECONDS (`query_timeout`)",
};

/** Refuses request bodies over `maxBytes` (400 `bad_request`) before anything parses them. */
export function maxBody(maxBytes: number) {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new AppError("bad_request", `The request body is larger than ${maxBytes} bytes.`, { limit: maxBytes });
    },
  });
}

/** Turns a zod error into field issues with dotted paths. */
export function fieldIssues(error: ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

/**
 * The router every documented JSON route is registered on. Invalid input becomes one
 * `validation_failed` problem (400) naming each bad field, through the app's single onError.
 */
export function createApiRouter<E extends Env = Env>(): OpenAPIHono<E> {
  return new OpenAPIHono<E>({
    defaultHook: (result) => {
      if (result.success) return;
      const issues = fieldIssues(result.error);
      const where = result.target === "json" ? "body" : result.target;
      throw new AppError(
        "validation_failed",
        `Invalid request ${where}: ${issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; ")}`,
        { issues },
      );
    },
  });
}

/**
 * Serves the OpenAPI 3.1 document at /api/openapi.json, generated from the same zod schemas that
 * validate requests, so the document cannot drift from the code.
 */
export function registerOpenApiDocument(api: OpenAPIHono<any>, opts: { version: string; cookieName: string }): void {
  api.openAPIRegistry.registerComponent("securitySchemes", "session", {
    type: "apiKey",
    in: "cookie",
    name: opts.cookieName,
    description: "The session cookie set by /api/auth/callback (or minted with `npm run session:mint`).",
  });
  api.openAPIRegistry.registerPath({
    method: "get",
    path: OPENAPI_PATH,
    tags: ["meta"],
    summary: "This document (public)",
    security: [],
    responses: { 200: { description: "OpenAPI 3.1", content: { "application/json": { schema: z.looseObject({ openapi: z.string() }) } } } },
  });
  let cached: unknown;
  api.get(OPENAPI_PATH, (c) => {
    cached ??= api.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "Pulseboard API",
        version: opts.version,
        description:
          "Live dashboards over guarded SQL. Errors are application/problem+json with a stable `code`; every response carries X-Request-Id. Mutating requests from another site are refused.",
      },
      security: [{ session: [] }],
    });
    return c.json(cached);
  });
}
