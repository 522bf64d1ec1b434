import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { diffSpecs } from "../../../lib/dashboards/diff.ts";
import { parseDashboardSpec, saveDashboard } from "../../../lib/dashboards/save.ts";
import { dashboardWorkspaceId } from "../../../lib/dashboards/store.ts";
import { type DashboardVersionSummary, getVersion, listVersions } from "../../../lib/dashboards/versions.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody, MAX_PG_INTEGER } from "../../../lib/http/input.ts";
import type { Metrics } from "../../../lib/metrics/metrics.ts";
import { countingGuard } from "../../../lib/sql-guard/counting.ts";
import type { Guard } from "../../../lib/sql-guard/verdict.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { type DashboardRouteDeps, DashboardParamsSchema, dashboardSchemas, savedDashboardJson } from "../dashboards/routes.ts";

export interface DashboardVersionRouteDeps {
  /** What a version's save reads of the configuration: the same as a dashboard's save. */
  config: DashboardRouteDeps["config"];
  pool: pg.Pool;
  auth: Auth;
  guard: Guard;
  metrics: Pick<Metrics, "countGuardRejection">;
  /** Wall clock (epoch ms): a restore's points warnings resolve the saved range at it. */
  now: () => number;
}

const VersionNumber = z.coerce.number().int().positive().max(MAX_PG_INTEGER);

export const VersionParamsSchema = DashboardParamsSchema.extend({
  version: VersionNumber.openapi({ param: { name: "version", in: "path" }, example: 3 }),
});

export const VersionMessageSchema = z.string().max(500).openapi({ description: "Why this version was saved; shown in the history." });

export const DashboardVersionSummarySchema = z
  .object({
    version: z.number().int(),
    savedBy: z.string(),
    savedAt: z.string().openapi({ format: "date-time" }),
    message: z.string().nullable(),
    title: z.string(),
    panelCount: z.number().int(),
  })
  .openapi("DashboardVersionSummary");

export const SpecChangeSchema = z
  .object({
    path: z.array(z.string()).openapi({ description: 'Where: e.g. ["panels[cpu]", "sql"]; panels by id, variables by name.' }),
    kind: z.enum(["added", "removed", "changed"]),
    before: z.unknown().optional(),
    after: z.unknown().optional(),
  })
  .openapi("SpecChange");

export const RestoreBodySchema = z
  .object({
    version: z
      .number()
      .int()
      .positive()
      .max(MAX_PG_INTEGER)
      .openapi({ description: "The dashboard's current version, as for an update; a stale one gets 409." }),
    message: VersionMessageSchema.optional(),
  })
  .openapi("RestoreDashboardVersion");

function summaryJson(v: DashboardVersionSummary) {
  return {
    version: v.version,
    savedBy: v.savedBy,
    savedAt: v.savedAt.toISOString(),
    message: v.message,
    title: v.title,
    panelCount: v.panelCount,
  };
}

/**
 * A dashboard's history: its saved versions (viewer), one version's spec (viewer), the diff between two
 * versions (viewer), and restore, which saves an old version's spec as a new version (editor).
 */
export function registerDashboardVersionRoutes(app: ApiRouter, deps: DashboardVersionRouteDeps): void {
  const { auth, pool, config } = deps;
  const retention = config.DASHBOARD_VERSION_RETENTION;
  const s = dashboardSchemas(config.MIN_REFRESH_INTERVAL_MS, { from: config.DEFAULT_TIME_FROM, to: config.DEFAULT_TIME_TO });
  const ofDashboard = async (c: { req: { param(name: string): string | undefined } }) => {
    const id = c.req.param("dashboardId");
    return id ? dashboardWorkspaceId(pool, id) : null;
  };
  const saveDeps = {
    pool,
    guard: countingGuard(deps.guard, deps.metrics),
    versionRetention: retention,
    points: { maxWindowPoints: config.MAX_WINDOW_POINTS, now: deps.now },
  };
  const versionOf = async (dashboardId: string, version: number) => {
    const v = await getVersion(pool, dashboardId, version, retention);
    if (!v) {
      throw new AppError(
        "not_found",
        `Version ${version} of this dashboard does not exist (the history keeps the newest ${retention} versions, DASHBOARD_VERSION_RETENTION).`,
      );
    }
    return v;
  };

  const list = createRoute({
    method: "get",
    path: "/api/dashboards/{dashboardId}/versions",
    tags: ["dashboards"],
    summary: "List a dashboard's saved versions, newest first (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofDashboard)] as const,
    request: { params: DashboardParamsSchema },
    responses: {
      200: {
        description: "The versions kept (at most DASHBOARD_VERSION_RETENTION)",
        content: {
          "application/json": {
            schema: z.object({ versions: z.array(DashboardVersionSummarySchema), retention: z.number().int() }),
          },
        },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(list, async (c) => {
    const versions = await listVersions(pool, c.req.valid("param").dashboardId, retention);
    return c.json({ versions: versions.map(summaryJson), retention }, 200);
  });

  const read = createRoute({
    method: "get",
    path: "/api/dashboards/{dashboardId}/versions/{version}",
    tags: ["dashboards"],
    summary: "Read one saved version with its spec (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofDashboard)] as const,
    request: { params: VersionParamsSchema },
    responses: {
      200: {
        description: "The version",
        content: {
          "application/json": { schema: DashboardVersionSummarySchema.extend({ spec: s.spec }).openapi("DashboardVersion") },
        },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(read, async (c) => {
    const { dashboardId, version } = c.req.valid("param");
    const v = await versionOf(dashboardId, version);
    return c.json({ ...summaryJson(v), spec: v.spec }, 200);
  });

  const diff = createRoute({
    method: "get",
    path: "/api/dashboards/{dashboardId}/diff",
    tags: ["dashboards"],
    summary: "What changed from one saved version to another (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofDashboard)] as const,
    request: {
      params: DashboardParamsSchema,
      query: z.object({
        from: VersionNumber.openapi({ param: { name: "from", in: "query" }, example: 1 }),
        to: VersionNumber.openapi({ param: { name: "to", in: "query" }, example: 3 }),
      }),
    },
    responses: {
      200: {
        description: "The changes from `from` to `to`, in document order",
        content: {
          "application/json": {
            schema: z
              .object({
                from: DashboardVersionSummarySchema,
                to: DashboardVersionSummarySchema,
                changes: z.array(SpecChangeSchema),
              })
              .openapi("DashboardDiff"),
          },
        },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(diff, async (c) => {
    const { dashboardId } = c.req.valid("param");
    const q = c.req.valid("query");
    const from = await versionOf(dashboardId, q.from);
    const to = await versionOf(dashboardId, q.to);
    return c.json({ from: summaryJson(from), to: summaryJson(to), changes: diffSpecs(from.spec, to.spec) }, 200);
  });

  const restore = createRoute({
    method: "post",
    path: "/api/dashboards/{dashboardId}/versions/{version}/restore",
    tags: ["dashboards"],
    summary: "Save an earlier version's spec as a new version (editor); its panels must still pass the guard",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("editor", ofDashboard), limitBody(4 * 1024)] as const,
    request: {
      params: VersionParamsSchema,
      body: { required: true, content: { "application/json": { schema: RestoreBodySchema } } },
    },
    responses: {
      200: { description: "Restored: the new version", content: { "application/json": { schema: s.saved } } },
      ...problems(400, 401, 403, 404, 409, 422),
    },
  });
  app.openapi(restore, async (c) => {
    const { dashboardId, version } = c.req.valid("param");
    const body = c.req.valid("json");
    const old = await versionOf(dashboardId, version);
    try {
      const saved = await saveDashboard(saveDeps, {
        workspaceId: c.var.workspaceId,
        userSub: c.var.user.sub,
        dashboardId,
        baseVersion: body.version,
        // Parsed under today's rules: an old version may predate one (a raised refresh floor, a variable rule).
        spec: parseDashboardSpec(old.spec, config.MIN_REFRESH_INTERVAL_MS),
        message: body.message ?? `Restored version ${version}`,
      });
      return c.json(savedDashboardJson(saved, config), 200);
    } catch (err) {
      // The old spec is checked like any save: a panel whose source was deleted since cannot come back.
      if (err instanceof AppError && err.code === "guard_rejected") {
        throw new AppError("guard_rejected", `Version ${version} cannot be restored as it is. ${err.detail}`, err.extra);
      }
      throw err;
    }
  });
}
