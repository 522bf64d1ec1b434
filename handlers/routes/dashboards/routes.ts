import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { dashboardSpecSchema, effectiveRefreshMs, newDashboardSpecSchema } from "../../../lib/dashboards/spec.ts";
import type { Metrics } from "../../../lib/metrics/metrics.ts";
import { countingGuard } from "../../../lib/sql-guard/counting.ts";
import { type SavedDashboard, deleteDashboard, saveDashboard } from "../../../lib/dashboards/save.ts";
import type { Guard } from "../../../lib/sql-guard/verdict.ts";
import { type Dashboard, dashboardWorkspaceId, getDashboard, listDashboards } from "../../../lib/dashboards/store.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody, MAX_PG_INTEGER } from "../../../lib/http/input.ts";
import { type ApiRouter, problems } from "../../openapi.ts";

// 50 panels of up to 20,000 characters of SQL, with room for titles and options.
const MAX_DASHBOARD_BODY = 2 * 1024 * 1024;

export interface DashboardRouteDeps {
  config: Pick<
    Config,
    | "MIN_REFRESH_INTERVAL_MS"
    | "DEFAULT_REFRESH_INTERVAL_MS"
    | "DEFAULT_TIME_FROM"
    | "DEFAULT_TIME_TO"
    | "DASHBOARD_VERSION_RETENTION"
    | "MAX_WINDOW_POINTS"
  >;
  pool: pg.Pool;
  auth: Auth;
  guard: Guard;
  /** Guard refusals of a save are counted in svc_sql_validation_rejections_total. */
  metrics: Pick<Metrics, "countGuardRejection">;
  /** Wall clock (epoch ms): a save's points warnings resolve the saved range at it. */
  now: () => number;
}

const IdSchema = z.string().min(1).max(64);
export const WorkspaceParamsSchema = z.object({
  workspaceId: IdSchema.openapi({ param: { name: "workspaceId", in: "path" }, example: "ws_demo" }),
});
export const DashboardParamsSchema = z.object({
  dashboardId: IdSchema.openapi({ param: { name: "dashboardId", in: "path" }, example: "db_3kT9..." }),
});

export const DashboardSummarySchema = z
  .object({
    id: z.string(),
    title: z.string(),
    version: z.number().int(),
    panelCount: z.number().int(),
    updatedBy: z.string(),
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("DashboardSummary");

/** Builds the dashboard schemas for a refresh floor (MIN_REFRESH_INTERVAL_MS is configuration). */
export function dashboardSchemas(minRefreshMs: number, defaultTime: { from: string; to: string } = { from: "now-24h", to: "now" }) {
  const spec = dashboardSpecSchema(minRefreshMs).openapi("DashboardSpec", {
    description: `refreshIntervalMs must not be below MIN_REFRESH_INTERVAL_MS (${minRefreshMs}); time expressions are now, now-<n><s|m|h|d|w> or ISO-8601 instants.`,
  });
  const dashboard = z
    .object({
      id: z.string(),
      workspaceId: z.string(),
      version: z.number().int().openapi({ description: "Send it back with an update; a stale one gets 409." }),
      spec,
      effectiveRefreshIntervalMs: z
        .number()
        .int()
        .openapi({ description: "The cadence pollers use: the spec's value or the default, never below the floor." }),
      createdBy: z.string(),
      updatedBy: z.string(),
      createdAt: z.string().openapi({ format: "date-time" }),
      updatedAt: z.string().openapi({ format: "date-time" }),
    })
    .openapi("Dashboard");
  const saved = dashboard
    .extend({
      warnings: z.array(PanelPointsWarningSchema).openapi({
        description:
          "Panels whose fixed time bucket gives more points per series over the saved range than the browser keeps (MAX_WINDOW_POINTS); the save went through. Empty when none.",
      }),
    })
    .openapi("SavedDashboard");
  // A new dashboard may leave `time` out: it then gets DEFAULT_TIME_FROM / DEFAULT_TIME_TO.
  const newSpec = newDashboardSpecSchema(minRefreshMs, defaultTime).openapi("NewDashboardSpec", {
    description: `As DashboardSpec; \`time\` defaults to {from: "${defaultTime.from}", to: "${defaultTime.to}"} (DEFAULT_TIME_FROM / DEFAULT_TIME_TO).`,
  });
  const message = z.string().max(500).optional().openapi({ description: "Why this version was saved; shown in the history." });
  const createBody = z.object({ spec: newSpec, message }).openapi("CreateDashboard");
  const updateBody = z
    .object({
      version: z.number().int().positive().max(MAX_PG_INTEGER).openapi({ description: "The version this edit is based on." }),
      spec,
      message,
    })
    .openapi("UpdateDashboard");
  return { spec, dashboard, saved, createBody, updateBody };
}

/** A save's points warning of one panel (lib/dashboards/points.ts). */
export const PanelPointsWarningSchema = z
  .object({
    panelId: z.string(),
    pointsPerSeries: z.number().int().openapi({ description: "Points per series the saved range holds at the panel's bucket width." }),
    kept: z.number().int().openapi({ description: "Points per series the browser keeps (MAX_WINDOW_POINTS)." }),
    rangeMs: z.number().int(),
    stepMs: z.number().int(),
    message: z.string().openapi({
      example: "1,440 points per series over 24 h; 720 are kept (MAX_WINDOW_POINTS). Use $__interval or a coarser bucket.",
    }),
  })
  .openapi("PanelPointsWarning");

/** The JSON shape of a dashboard. */
export function dashboardJson(d: Dashboard, cfg: DashboardRouteDeps["config"]) {
  return {
    id: d.id,
    workspaceId: d.workspaceId,
    version: d.version,
    spec: d.spec,
    effectiveRefreshIntervalMs: effectiveRefreshMs(d.spec, cfg),
    createdBy: d.createdBy,
    updatedBy: d.updatedBy,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}

/** The JSON shape of a saved dashboard: the dashboard and the save's warnings. */
export function savedDashboardJson(d: SavedDashboard, cfg: DashboardRouteDeps["config"]) {
  return { ...dashboardJson(d, cfg), warnings: d.warnings };
}

/** Dashboards: list and create in a workspace (viewer / editor), read, update and delete by id (viewer / editor). */
export function registerDashboardRoutes(app: ApiRouter, deps: DashboardRouteDeps): void {
  const { auth, pool, config } = deps;
  const s = dashboardSchemas(config.MIN_REFRESH_INTERVAL_MS, { from: config.DEFAULT_TIME_FROM, to: config.DEFAULT_TIME_TO });
  const inWorkspace = workspaceFromParam("workspaceId");
  const ofDashboard = async (c: { req: { param(name: string): string | undefined } }) => {
    const id = c.req.param("dashboardId");
    return id ? dashboardWorkspaceId(pool, id) : null;
  };
  const saveDeps = {
    pool,
    guard: countingGuard(deps.guard, deps.metrics),
    versionRetention: config.DASHBOARD_VERSION_RETENTION,
    points: { maxWindowPoints: config.MAX_WINDOW_POINTS, now: deps.now },
  };

  const list = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}/dashboards",
    tags: ["dashboards"],
    summary: "List the dashboards of a workspace (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", inWorkspace)] as const,
    request: { params: WorkspaceParamsSchema },
    responses: {
      200: {
        description: "The dashboards",
        content: { "application/json": { schema: z.object({ dashboards: z.array(DashboardSummarySchema) }) } },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(list, async (c) => {
    const rows = await listDashboards(pool, c.var.workspaceId);
    return c.json({ dashboards: rows.map((r) => ({ ...r, updatedAt: r.updatedAt.toISOString() })) }, 200);
  });

  const create = createRoute({
    method: "post",
    path: "/api/workspaces/{workspaceId}/dashboards",
    tags: ["dashboards"],
    summary: "Create a dashboard (editor); every panel's SQL must pass the guard",
    middleware: [
      auth.rejectCrossSite,
      auth.requireSession,
      auth.requireRole("editor", inWorkspace),
      limitBody(MAX_DASHBOARD_BODY),
    ] as const,
    request: { params: WorkspaceParamsSchema, body: { required: true, content: { "application/json": { schema: s.createBody } } } },
    responses: {
      201: { description: "Created", content: { "application/json": { schema: s.saved } } },
      ...problems(400, 401, 403, 404, 422),
    },
  });
  app.openapi(create, async (c) => {
    const { spec, message } = c.req.valid("json");
    const saved = await saveDashboard(saveDeps, { workspaceId: c.var.workspaceId, userSub: c.var.user.sub, spec, message });
    c.header("Location", `/api/dashboards/${saved.id}`);
    return c.json(savedDashboardJson(saved, config), 201);
  });

  const read = createRoute({
    method: "get",
    path: "/api/dashboards/{dashboardId}",
    tags: ["dashboards"],
    summary: "Read a dashboard with its version (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofDashboard)] as const,
    request: { params: DashboardParamsSchema },
    responses: {
      200: { description: "The dashboard", content: { "application/json": { schema: s.dashboard } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(read, async (c) => {
    const d = await getDashboard(pool, c.req.valid("param").dashboardId);
    if (!d || d.workspaceId !== c.var.workspaceId) throw new AppError("not_found", "Not found.");
    return c.json(dashboardJson(d, config), 200);
  });

  const update = createRoute({
    method: "put",
    path: "/api/dashboards/{dashboardId}",
    tags: ["dashboards"],
    summary: "Replace a dashboard's spec (editor); a stale version gets 409",
    middleware: [
      auth.rejectCrossSite,
      auth.requireSession,
      auth.requireRole("editor", ofDashboard),
      limitBody(MAX_DASHBOARD_BODY),
    ] as const,
    request: { params: DashboardParamsSchema, body: { required: true, content: { "application/json": { schema: s.updateBody } } } },
    responses: {
      200: { description: "Saved; the new version", content: { "application/json": { schema: s.saved } } },
      ...problems(400, 401, 403, 404, 409, 422),
    },
  });
  app.openapi(update, async (c) => {
    const { version, spec, message } = c.req.valid("json");
    const saved = await saveDashboard(saveDeps, {
      workspaceId: c.var.workspaceId,
      userSub: c.var.user.sub,
      dashboardId: c.req.valid("param").dashboardId,
      baseVersion: version,
      spec,
      message,
    });
    return c.json(savedDashboardJson(saved, config), 200);
  });

  const remove = createRoute({
    method: "delete",
    path: "/api/dashboards/{dashboardId}",
    tags: ["dashboards"],
    summary: "Delete a dashboard (editor); with ?version=N only if it is still at that version",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("editor", ofDashboard)] as const,
    request: {
      params: DashboardParamsSchema,
      query: z.object({
        version: z.coerce
          .number()
          .int()
          .positive()
          .max(MAX_PG_INTEGER)
          .optional()
          .openapi({ param: { name: "version", in: "query" } }),
      }),
    },
    responses: { 204: { description: "Deleted" }, ...problems(400, 401, 403, 404, 409) },
  });
  app.openapi(remove, async (c) => {
    const deleted = await deleteDashboard(pool, {
      dashboardId: c.req.valid("param").dashboardId,
      workspaceId: c.var.workspaceId,
      baseVersion: c.req.valid("query").version,
    });
    c.set("auditBeforeVersion", deleted);
    return c.body(null, 204);
  });
}
