import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { ZodError } from "zod";
import { type AuthVariables, ROLES } from "../lib/auth/types.ts";
import { AppError, ERROR_STATUS, type ErrorCode } from "../lib/http/errors.ts";
import type { InputIssue } from "../lib/http/input.ts";
import type { AuditVariables } from "./routes/audit/record.ts";

export const OPENAPI_PATH = "/api/openapi.json";

/**
 * The Hono env of every API route: what the session and role middleware set (lib/auth/types.ts), and what a route
 * tells the audit trail (routes/audit/record.ts).
 */
export type ApiEnv = { Variables: AuthVariables & AuditVariables };

/** The router every /api route of the handlers app is declared on (createApiRouter). */
export type ApiRouter = OpenAPIHono<ApiEnv>;

/** One invalid input field: a dotted path (`spec.panels.0.sql`) and what is wrong with it. */
export const FieldIssueSchema = z
  .object({
    path: z.string().openapi({
      description:
        "Dotted path of the field in the body (`spec.panels.0.sql`), or the name of the path or query parameter; empty for the body as a whole.",
    }),
    message: z.string(),
  })
  .openapi("FieldIssue");

const PanelRefusalSchema = z.object({ panelId: z.string(), reason: z.string(), message: z.string() });
const VariableRefusalSchema = z.object({ variable: z.string(), reason: z.string(), message: z.string() });

/**
 * The problem+json envelope (RFC 9457) of every error of the API: `code` is stable, `detail` is for people.
 * The optional members are the extras some codes carry; each is listed with the codes that send it.
 */
export const ProblemSchema = z
  .looseObject({
    type: z.string().openapi({ example: "about:blank#validation_failed" }),
    title: z.string(),
    status: z.number().int(),
    code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    detail: z.string(),
    requestId: z.string().optional().openapi({ description: "Also sent as the X-Request-Id header; quote it when reporting a problem." }),
    issues: z.array(FieldIssueSchema).optional().openapi({
      description:
        "`validation_failed` (400, an invalid dashboard spec included, by whichever route it came) and `source_host_refused` (422): every refused field, in one envelope for bodies, path and query parameters.",
    }),
    reason: z.string().optional().openapi({
      description:
        "`guard_rejected`: the guard's reason (empty, comment, structure, keyword, function, catalog, time); `source_host_refused`: which host rule refused; `identity_provider_unavailable`: the failed check's code.",
    }),
    field: z
      .string()
      .optional()
      .openapi({ description: "The one field a `not_found` (a body's sourceId) or `source_host_refused` (host) is about." }),
    limit: z
      .number()
      .int()
      .optional()
      .openapi({ description: "`bad_request` for a body over a size limit, `result_too_large` (MAX_RESULT_BYTES): the limit in bytes." }),
    requiredRole: z.enum(ROLES).optional().openapi({ description: "`forbidden` by role: the role the route needs." }),
    role: z.enum(ROLES).optional().openapi({ description: "`forbidden` by role: the role you hold in the workspace." }),
    id: z.string().optional().openapi({ description: "`conflict` on a workspace create: the id already taken." }),
    sourceId: z.string().optional().openapi({ description: "`catalog_missing`: the source whose catalog was never refreshed." }),
    secretRef: z
      .string()
      .optional()
      .openapi({ description: "`grant_missing`: the secret_ref this workspace has no grant for (its name, never a value)." }),
    timeoutSeconds: z.number().optional().openapi({ description: "`query_timeout`: QUERY_TIMEOUT_SECONDS." }),
    variable: z
      .string()
      .optional()
      .openapi({ description: "`source_credentials_missing`: the variable or file name that could not be read." }),
    panels: z.array(PanelRefusalSchema).optional().openapi({ description: "`guard_rejected` on a dashboard save: every refused panel." }),
    variables: z
      .array(VariableRefusalSchema)
      .optional()
      .openapi({ description: "`guard_rejected` on a dashboard save: every query variable whose SQL was refused." }),
    currentVersion: z.number().int().optional().openapi({ description: "`version_conflict`: the version stored now." }),
    baseVersion: z.number().int().optional().openapi({ description: "`version_conflict`: the version the refused edit was based on." }),
    dashboards: z
      .array(z.string())
      .optional()
      .openapi({ description: "`conflict` on a source delete: the dashboards whose panels read it." }),
    sqlstate: z.string().optional().openapi({ description: "`query_failed`: PostgreSQL's SQLSTATE code." }),
    retryAfterSeconds: z
      .number()
      .int()
      .optional()
      .openapi({ description: "`rate_limited` and `over_budget` of the AI routes: as the Retry-After header." }),
    missing: z.string().optional().openapi({ description: "`ai_not_configured`: the variable to set." }),
    cause: z
      .string()
      .optional()
      .openapi({ description: "`source_unavailable`: a short code of what failed (ECONNREFUSED, host_not_found, …), never an address." }),
  })
  .openapi("Problem");

type ProblemResponse = {
  description: string;
  headers?: Record<string, { description: string; schema: { type: "integer" } }>;
  content: { "application/problem+json": { schema: typeof ProblemSchema } };
};

const RETRY_AFTER = { "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer" as const } } };

/**
 * The 503 of every route that reads the config store: it is down or not answering (a connection error
 * or timeout, coded at the one error handler), with Retry-After in seconds.
 */
export const CONFIG_STORE_UNAVAILABLE: ProblemResponse = {
  description:
    "The configuration store is down or not answering (`config_store_unavailable`), with Retry-After; a hung store is given up within its timeouts",
  headers: RETRY_AFTER,
  content: { "application/problem+json": { schema: ProblemSchema } },
};

type ProblemStatus = 400 | 401 | 403 | 404 | 409 | 422 | 429 | 502 | 503 | 504;

/**
 * Response entries for the problem statuses a route can answer, for `createRoute({ responses })`, plus
 * the 503 `config_store_unavailable` every such route can answer (each reads the config store).
 */
export function problems(...statuses: Exclude<ProblemStatus, 503>[]) {
  return { ...problemsOnly(...statuses), 503: CONFIG_STORE_UNAVAILABLE };
}

/** The problem entries of `statuses` alone, for a route that never reads the config store. */
export function problemsOnly(...statuses: ProblemStatus[]) {
  const out: Record<number, ProblemResponse> = {};
  for (const s of statuses) out[s] = problemResponse(PROBLEM_DESCRIPTIONS[s], s === 429 || s === 503);
  return out;
}

/** One problem+json response entry with its own description (and Retry-After when the answer carries one). */
export function problemResponse(description: string, retryAfter = false): ProblemResponse {
  return {
    description,
    ...(retryAfter ? { headers: RETRY_AFTER } : {}),
    content: { "application/problem+json": { schema: ProblemSchema } },
  };
}

const PROBLEM_DESCRIPTIONS: Record<ProblemStatus, string> = {
  400: "Invalid input (`validation_failed`, `issues` names each field), a body over its size limit (`bad_request`, with `limit`) or a result over MAX_RESULT_BYTES (`result_too_large`)",
  401: "No valid session (`unauthenticated`)",
  403: "Role too weak (`forbidden`) or a cross-site request (`cross_site_request`)",
  404: "No such resource in a workspace you belong to (`not_found`)",
  409: "The resource changed since the version you sent (`version_conflict`), is in use (`conflict`) or a limit is reached (`source_limit_reached`)",
  422: "Refused by the SQL guard (`guard_rejected`, with `reason`), a source host the host policy refuses (`source_host_refused`, with `field`) or a secret_ref not granted (`grant_missing`)",
  429: "Too many requests (`rate_limited`), with Retry-After",
  502: "The metrics store could not be reached (`source_unavailable`)",
  503: "A dependency is unavailable",
  504: "The query exceeded QUERY_TIMEOUT_SECONDS (`query_timeout`)",
};

/** Turns a zod error into field issues with dotted paths. */
export function fieldIssues(error: ZodError): InputIssue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

/**
 * The router every documented route is registered on. Invalid input becomes one `validation_failed`
 * problem (400) naming each bad field (`issues: [{path, message}]`, the envelope of the input rules in
 * lib/http/input.ts too), through the app's single onError.
 */
export function createApiRouter(): ApiRouter {
  return new OpenAPIHono<ApiEnv>({
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
