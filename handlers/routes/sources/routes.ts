import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { type WorkspaceResolver, workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { roleAtLeast } from "../../../lib/auth/roles.ts";
import type { AuthVariables, Role } from "../../../lib/auth/types.ts";
import { CatalogSchema, SourceLimitsSchema as SourceLimitsShape } from "../../../lib/catalog/types.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody, MAX_PG_INTEGER } from "../../../lib/http/input.ts";
import type { QueryRunner } from "../../../lib/query/runner.ts";
import { sourceLimitWarnings } from "../../../lib/query/source-limits.ts";
import {
  catalogStatus,
  countSources,
  createRateLimiter,
  createSource,
  deleteSource,
  getSourceWorkspaceId,
  getSourceInWorkspace,
  listSources,
  type RateLimiter,
  type Source,
  SourceInputSchema,
  SourcePatchSchema,
  sourceLimitReached,
  updateSource,
} from "../../../lib/sources/index.ts";
import { newId } from "../../../lib/store/ids.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

export interface SourceRouteDeps {
  config: Pick<Config, "CATALOG_STALE_AFTER_DAYS" | "SOURCES_PER_WORKSPACE_MAX" | "SOURCE_CONNECT_RATE_PER_MINUTE">;
  pool: pg.Pool;
  auth: Auth;
  runner: Pick<QueryRunner, "testConnection" | "evict" | "forget">;
  /**
   * Per-user limit on what connects to a source host on request (create, connection change, test, catalog
   * refresh); built from SOURCE_CONNECT_RATE_PER_MINUTE (in this process's memory) when omitted.
   */
  connectLimiter?: RateLimiter;
  /** Reads the source's tables and columns, stores the catalog and returns the updated source (lib/catalog). */
  refreshCatalog: (source: Source) => Promise<Source>;
  now: () => number;
}

export const SourceParamsSchema = z.object({
  sourceId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "sourceId", in: "path" }, example: "src_3kT9..." }),
});

// Re-wrapped with this module's z: schemas built before @hono/zod-openapi loaded lack `.openapi()`.
const SourceLimitsSchema = z
  .object(SourceLimitsShape.shape)
  .openapi("SourceLimits", { description: "What a panel statement runs under; tempFileLimit -1 means unlimited (docs/sql-guard.md)" });

const CatalogStatusSchema = z.enum(["never_refreshed", "stale", "fresh"]).openapi({
  description: "never_refreshed refuses every query and blocks generation; stale (older than CATALOG_STALE_AFTER_DAYS) only warns.",
});

/**
 * A source as the API shows it. What is included depends on the caller's role: connection details
 * (host, port, database, sslmode, secretRef) for admins, the catalog and notes for editors and admins
 * (they write SQL against it). Credentials are never stored here, so they can never be returned.
 */
export const SourceViewSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    name: z.string(),
    version: z.number().int().openapi({ description: "Send it back with an update; a stale one gets 409." }),
    catalogStatus: CatalogStatusSchema,
    catalogStale: z.boolean(),
    catalogNeverRefreshed: z.boolean(),
    catalogRefreshedAt: z.string().nullable().openapi({ format: "date-time" }),
    tableCount: z.number().int(),
    schemas: z.array(z.string()).optional(),
    notes: z.string().optional(),
    catalog: CatalogSchema.nullable().optional(),
    host: z.string().optional(),
    port: z.number().int().optional(),
    database: z.string().optional(),
    sslmode: z.string().optional(),
    secretRef: z.string().optional().openapi({ description: "The name of the credentials (SOURCE_SECRET_REFS), never their value." }),
    limits: SourceLimitsSchema.nullable().optional().openapi({
      description: "The role's statement_timeout, temp_file_limit and work_mem as the last catalog refresh read them (admins).",
    }),
    warnings: z.array(z.string()).optional().openapi({
      description: "What to fix in the source role's settings, from the last catalog refresh (admins): an unlimited temp_file_limit.",
    }),
    createdAt: z.string().openapi({ format: "date-time" }),
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Source");

// Re-wrapped with this module's z: schemas built before @hono/zod-openapi loaded lack `.openapi()`.
const CreateSourceSchema = z.object(SourceInputSchema.shape).openapi("CreateSource");
const UpdateSourceSchema = z
  .object({
    ...SourcePatchSchema.shape,
    version: z.number().int().positive().max(MAX_PG_INTEGER).openapi({ description: "The version this edit is based on." }),
  })
  .openapi("UpdateSource");

const ErrorSummarySchema = z.object({ code: z.string(), detail: z.string() });

/** Fields that decide where and as whom a source connects. */
const CONNECTION_FIELDS = ["host", "port", "database", "sslmode", "secretRef"] as const;

/** The role-dependent JSON view of a source. */
export function sourceJson(s: Source, role: Role, opts: { staleAfterDays: number; nowMs: number; withCatalog: boolean }) {
  const status = catalogStatus(s, opts.staleAfterDays, opts.nowMs);
  const view: z.infer<typeof SourceViewSchema> = {
    id: s.id,
    workspaceId: s.workspaceId,
    name: s.name,
    version: s.version,
    catalogStatus: status,
    catalogStale: status === "stale",
    catalogNeverRefreshed: status === "never_refreshed",
    catalogRefreshedAt: s.catalogRefreshedAt ? s.catalogRefreshedAt.toISOString() : null,
    tableCount: s.catalog?.tables.length ?? 0,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
  if (roleAtLeast(role, "editor")) {
    view.schemas = s.schemas;
    view.notes = s.notes;
    if (opts.withCatalog) view.catalog = s.catalog;
  }
  if (role === "admin") {
    view.host = s.host;
    view.port = s.port;
    view.database = s.database;
    view.sslmode = s.sslmode;
    view.secretRef = s.secretRef;
    view.limits = s.catalog?.limits ?? null;
    view.warnings = sourceLimitWarnings(s.catalog?.limits);
  }
  return view;
}

function errorSummary(err: unknown): { code: string; detail: string } {
  if (err instanceof AppError) return { code: err.code, detail: err.detail };
  return { code: "internal", detail: "The catalog could not be refreshed." };
}

/** The role check's workspace of a route under /api/sources/{sourceId}: the source's own (null when there is none). */
export function workspaceOfSource(pool: pg.Pool): WorkspaceResolver {
  return async (c) => {
    const id = c.req.param("sourceId");
    return id ? await getSourceWorkspaceId(pool, id) : null;
  };
}

/** Sources: list/read (viewer+, fields by role), create/update/delete, connection test and catalog refresh (admin). */
export function registerSourceRoutes(app: ApiRouter, deps: SourceRouteDeps): void {
  const { auth, pool, config } = deps;
  // Every request that makes the service connect somewhere an admin chose is a probe of that place: limited per person.
  const limiter =
    deps.connectLimiter ??
    createRateLimiter({
      perMinute: config.SOURCE_CONNECT_RATE_PER_MINUTE,
      now: deps.now,
      what: "source connection attempts (creates, connection changes, tests, catalog refreshes)",
    });
  const connecting = (c: { var: AuthVariables }) => limiter.take(c.var.user.sub);
  const inWorkspace = workspaceFromParam("workspaceId");
  const ofSource = workspaceOfSource(pool);
  const view = (s: Source, role: Role, withCatalog: boolean) =>
    sourceJson(s, role, { staleAfterDays: config.CATALOG_STALE_AFTER_DAYS, nowMs: deps.now(), withCatalog });
  const load = async (workspaceId: string, id: string) => {
    const s = await getSourceInWorkspace(pool, workspaceId, id);
    if (!s) throw new AppError("not_found", "Not found.");
    return s;
  };

  const list = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}/sources",
    tags: ["sources"],
    summary: "List the sources of a workspace with their catalog flags (viewer; details by role)",
    middleware: [auth.requireSession, auth.requireRole("viewer", inWorkspace)] as const,
    request: { params: WorkspaceParamsSchema },
    responses: {
      200: {
        description: "The sources (without catalogs)",
        content: { "application/json": { schema: z.object({ sources: z.array(SourceViewSchema) }) } },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(list, async (c) => {
    const rows = await listSources(pool, c.var.workspaceId);
    return c.json({ sources: rows.map((s) => view(s, c.var.role, false)) }, 200);
  });

  const create = createRoute({
    method: "post",
    path: "/api/workspaces/{workspaceId}/sources",
    tags: ["sources"],
    summary: "Add a source (admin): tests the connection first, then refreshes the catalog once",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", inWorkspace), limitBody(64 * 1024)] as const,
    request: { params: WorkspaceParamsSchema, body: { required: true, content: { "application/json": { schema: CreateSourceSchema } } } },
    responses: {
      201: {
        description: "Created. When the catalog refresh failed the source still exists (never refreshed) and `catalogError` says why.",
        content: { "application/json": { schema: SourceViewSchema.extend({ catalogError: ErrorSummarySchema.optional() }) } },
      },
      ...problems(400, 401, 403, 404, 409, 422, 429, 502, 504),
    },
  });
  app.openapi(create, async (c) => {
    const input = c.req.valid("json");
    const workspaceId = c.var.workspaceId;
    const max = config.SOURCES_PER_WORKSPACE_MAX;
    // Checked before connecting (cheap), and again atomically with the insert.
    if ((await countSources(pool, workspaceId)) >= max) throw sourceLimitReached(max);
    connecting(c);
    const id = newId("src");
    const at = new Date(deps.now());
    // Test before storing: a source that cannot connect (or whose host the policy refuses) is refused and nothing
    // is saved. It is not stored yet, so the test leaves neither a pool nor a metric series behind.
    await deps.runner.testConnection(
      {
        id,
        workspaceId,
        ...input,
        catalog: null,
        catalogRefreshedAt: null,
        version: 1,
        createdAt: at,
        updatedAt: at,
      },
      { stored: false },
    );
    let source = await createSource(pool, workspaceId, input, { id, maxPerWorkspace: max });
    let catalogError: { code: string; detail: string } | undefined;
    try {
      source = await deps.refreshCatalog(source);
    } catch (err) {
      catalogError = errorSummary(err);
    }
    c.header("Location", `/api/sources/${source.id}`);
    return c.json({ ...view(source, c.var.role, true), ...(catalogError ? { catalogError } : {}) }, 201);
  });

  const read = createRoute({
    method: "get",
    path: "/api/sources/{sourceId}",
    tags: ["sources"],
    summary: "Read a source with its catalog (viewer; catalog for editors, connection details for admins)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofSource)] as const,
    request: { params: SourceParamsSchema },
    responses: {
      200: { description: "The source", content: { "application/json": { schema: SourceViewSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(read, async (c) => {
    const s = await load(c.var.workspaceId, c.req.valid("param").sourceId);
    return c.json(view(s, c.var.role, true), 200);
  });

  const update = createRoute({
    method: "put",
    path: "/api/sources/{sourceId}",
    tags: ["sources"],
    summary: "Change a source's fields (admin): new connection settings are tested first; a stale version gets 409",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", ofSource), limitBody(64 * 1024)] as const,
    request: { params: SourceParamsSchema, body: { required: true, content: { "application/json": { schema: UpdateSourceSchema } } } },
    responses: {
      200: {
        description:
          "Saved; the new version. New connection settings were tested first; a changed connection, schema list or time-column overrides re-read the catalog (`catalogError` when that failed).",
        content: { "application/json": { schema: SourceViewSchema.extend({ catalogError: ErrorSummarySchema.optional() }) } },
      },
      ...problems(400, 401, 403, 404, 409, 422, 429, 502, 504),
    },
  });
  app.openapi(update, async (c) => {
    const { version, ...patch } = c.req.valid("json");
    // Only the keys the client sent: the patch schema's defaults must not reset omitted fields.
    const raw = (await c.req.json()) as Record<string, unknown>;
    const sent = Object.fromEntries(Object.entries(patch).filter(([k]) => Object.hasOwn(raw, k))) as Partial<Source>;
    const current = await load(c.var.workspaceId, c.req.valid("param").sourceId);
    const changed = (keys: readonly (keyof Source)[]) =>
      keys.some((k) => k in sent && JSON.stringify(sent[k]) !== JSON.stringify(current[k]));
    // New connection settings are tested before they are stored, exactly as on create.
    const reconnect = changed(CONNECTION_FIELDS);
    if (reconnect && current.version === version) {
      connecting(c);
      await deps.runner.testConnection({ ...current, ...sent });
    }
    let s = await updateSource(pool, c.var.workspaceId, current.id, version, sent);
    // Connections made with the old settings (host, port, database, sslmode, secret_ref) are closed.
    if (reconnect) deps.runner.evict(s.id);
    let catalogError: { code: string; detail: string } | undefined;
    // Another database or schema list means another catalog: re-read it once, like on create. Time-column
    // overrides are applied by the refresh, so a changed one re-reads it too (else the guard's time check
    // would keep the old time column until someone refreshed by hand).
    if (reconnect || changed(["schemas", "timeColumnOverrides"])) {
      try {
        s = await deps.refreshCatalog(s);
      } catch (err) {
        catalogError = errorSummary(err);
      }
    }
    return c.json({ ...view(s, c.var.role, true), ...(catalogError ? { catalogError } : {}) }, 200);
  });

  const remove = createRoute({
    method: "delete",
    path: "/api/sources/{sourceId}",
    tags: ["sources"],
    summary: "Delete a source (admin); refused with 409 while a dashboard panel reads it",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", ofSource)] as const,
    request: { params: SourceParamsSchema },
    responses: { 204: { description: "Deleted" }, ...problems(400, 401, 403, 404, 409) },
  });
  app.openapi(remove, async (c) => {
    const sourceId = c.req.valid("param").sourceId;
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id FROM dashboards
        WHERE workspace_id = $1 AND spec->'panels' @> jsonb_build_array(jsonb_build_object('sourceId', $2::text))
        ORDER BY id`,
      [c.var.workspaceId, sourceId],
    );
    if (rows.length > 0) {
      throw new AppError("conflict", `The source is used by ${rows.length} dashboard(s); remove those panels first.`, {
        dashboards: rows.map((r) => r.id),
      });
    }
    const deleted = await deleteSource(pool, c.var.workspaceId, sourceId);
    if (deleted === null) throw new AppError("not_found", "Not found.");
    c.set("auditBeforeVersion", deleted);
    deps.runner.forget(sourceId);
    return c.body(null, 204);
  });

  const test = createRoute({
    method: "post",
    path: "/api/sources/{sourceId}/test",
    tags: ["sources"],
    summary: "Test the source's connection with its credentials (admin)",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", ofSource)] as const,
    request: { params: SourceParamsSchema },
    responses: {
      200: {
        description: "Connected",
        content: {
          "application/json": {
            schema: z.object({
              ok: z.literal(true),
              elapsedMs: z.number(),
              limits: SourceLimitsSchema,
              warnings: z
                .array(z.string())
                .openapi({ description: "What to fix in the source role's settings: an unlimited temp_file_limit." }),
            }),
          },
        },
      },
      ...problems(401, 403, 404, 422, 429, 502, 504),
    },
  });
  app.openapi(test, async (c) => {
    const s = await load(c.var.workspaceId, c.req.valid("param").sourceId);
    connecting(c);
    // A failed test closes the source's pool (lib/query/runner.ts).
    const { elapsedMs, limits } = await deps.runner.testConnection(s);
    return c.json({ ok: true as const, elapsedMs, limits, warnings: sourceLimitWarnings(limits) }, 200);
  });

  const refresh = createRoute({
    method: "post",
    path: "/api/sources/{sourceId}/catalog/refresh",
    tags: ["sources"],
    summary: "Re-read the source's tables and columns into its catalog (admin)",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", ofSource)] as const,
    request: { params: SourceParamsSchema },
    responses: {
      200: { description: "The source with its new catalog", content: { "application/json": { schema: SourceViewSchema } } },
      ...problems(401, 403, 404, 422, 429, 502, 504),
    },
  });
  app.openapi(refresh, async (c) => {
    const s = await load(c.var.workspaceId, c.req.valid("param").sourceId);
    connecting(c);
    return c.json(view(await deps.refreshCatalog(s), c.var.role, true), 200);
  });
}
