import type { Context, MiddlewareHandler } from "hono";
import type pg from "pg";
import { type AuditAction, type AuditInput, type AuditRetention, actorOf, recordAudit } from "../../../lib/audit/store.ts";
import type { AuthVariables } from "../../../lib/auth/types.ts";
import { routePatternOf } from "../../../lib/http/route-pattern.ts";
import type { Logger } from "../../../lib/log/logger.ts";

type Body = Record<string, unknown> | null;

/**
 * What a route tells the audit trail that only it knows: the version of the row a DELETE removed (its answer is
 * an empty 204). The route reads it from its own delete, after its session and role checks, so a refused
 * request costs the config store nothing.
 */
export interface AuditVariables {
  auditBeforeVersion?: number;
}

type Ctx = Context<{ Variables: AuthVariables & AuditVariables }>;

/** How one mutating route's success is recorded: its action, its target, and the target's versions. */
interface AuditedRoute {
  action: AuditAction;
  /** The id of what changed: a path parameter, or a member of the response body. */
  target: (c: Ctx, body: Body) => unknown;
  /** The workspace the change belongs to; default the one requireRole resolved. */
  workspace?: (c: Ctx, body: Body) => unknown;
  /**
   * How the target's versions are known: the response carries the new `version` (created; updated, whose
   * earlier one is that minus one; unchanged, where both are it), or a delete's route sets the version it
   * removed (`auditBeforeVersion`). Absent: the target has no version.
   */
  versioned?: "created" | "updated" | "unchanged" | "deleted";
}

const param = (name: string) => (c: Ctx) => c.req.param(name);
const member = (name: string) => (_c: Ctx, body: Body) => body?.[name];

/**
 * Every route that changes a workspace's configuration, by `METHOD pattern`. handlers/routes/audit/record.test.ts
 * checks it against the OpenAPI document: each mutating route is here or in NOT_AUDITED with its reason.
 */
export const AUDITED: Record<string, AuditedRoute> = {
  "POST /api/workspaces/:workspaceId/dashboards": { action: "dashboard.create", target: member("id"), versioned: "created" },
  "PUT /api/dashboards/:dashboardId": { action: "dashboard.update", target: param("dashboardId"), versioned: "updated" },
  "POST /api/dashboards/:dashboardId/chat/apply": { action: "dashboard.update", target: param("dashboardId"), versioned: "updated" },
  // A restore saves an earlier version's spec as a new version: an update like any other.
  "POST /api/dashboards/:dashboardId/versions/:version/restore": {
    action: "dashboard.update",
    target: param("dashboardId"),
    versioned: "updated",
  },
  "DELETE /api/dashboards/:dashboardId": {
    action: "dashboard.delete",
    target: param("dashboardId"),
    versioned: "deleted",
  },
  "POST /api/workspaces/:workspaceId/sources": { action: "source.create", target: member("id"), versioned: "created" },
  "PUT /api/sources/:sourceId": { action: "source.update", target: param("sourceId"), versioned: "updated" },
  "DELETE /api/sources/:sourceId": { action: "source.delete", target: param("sourceId"), versioned: "deleted" },
  "POST /api/sources/:sourceId/catalog/refresh": { action: "source.catalog_refresh", target: param("sourceId"), versioned: "unchanged" },
  "PUT /api/workspaces/:workspaceId/limits": { action: "limits.update", target: param("workspaceId") },
  "POST /api/admin/workspaces": { action: "workspace.create", target: member("id"), workspace: member("id") },
  "PATCH /api/admin/workspaces/:workspaceId": { action: "workspace.update", target: param("workspaceId"), workspace: param("workspaceId") },
  "DELETE /api/admin/workspaces/:workspaceId": {
    action: "workspace.delete",
    target: param("workspaceId"),
    workspace: param("workspaceId"),
  },
  "POST /api/workspaces/:workspaceId/sessions/revoke": { action: "sessions.revoke", target: member("sub") },
  "POST /api/workspaces/:workspaceId/tokens": { action: "token.create", target: member("id") },
  "DELETE /api/workspaces/:workspaceId/tokens/:tokenId": { action: "token.revoke", target: param("tokenId") },
};

/** Mutating routes that change no workspace's configuration, with the reason. */
export const NOT_AUDITED: Record<string, string> = {
  "POST /api/auth/logout": "ends the caller's own session; it belongs to no workspace",
  "POST /api/auth/sessions/revoke": "ends the caller's own sessions; it belongs to no workspace",
  "POST /api/admin/sessions/revoke": "a platform admin's revocation across every workspace: it belongs to no one workspace's trail",
  "POST /api/workspaces/:workspaceId/query-preview": "runs a read-only query; nothing is stored",
  "POST /api/sources/:sourceId/check": "the guard's verdict on a statement; nothing is run or stored",
  "POST /api/sources/:sourceId/test": "tests a connection; nothing is stored",
  "POST /api/workspaces/:workspaceId/generate": "drafts a dashboard for the caller to save; the generation log records the call",
  "POST /api/sources/:sourceId/draft": "drafts notes for the caller to save; the generation log records the call",
  "POST /api/dashboards/:dashboardId/chat": "a message in the caller's own chat history",
  "DELETE /api/dashboards/:dashboardId/chat": "clears the caller's own chat history",
};

const int = (v: unknown): number | null => (typeof v === "number" && Number.isSafeInteger(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === "string" && v.length > 0 ? v : null);

/**
 * Records every successful change of an AUDITED route in the audit trail, after the route answered: who
 * (the person or the API token), what, and the target's versions. A record that cannot be written is
 * logged with its ids (the change itself has happened and is not undone).
 */
export function auditChanges(deps: { pool: pg.Pool; retention: AuditRetention; log: Logger }): MiddlewareHandler<{
  Variables: AuthVariables & AuditVariables;
}> {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return next();
    // Nothing is read before the route runs: its own checks come first, and a refused request costs no query.
    await next();
    if (c.res.status < 200 || c.res.status >= 300) return;
    const route = AUDITED[`${c.req.method} ${routePatternOf(c)}`];
    const user = c.get("user");
    if (!route || !user) return;
    let body: Body = null;
    if ((c.res.headers.get("content-type") ?? "").includes("application/json")) {
      body = (await c.res
        .clone()
        .json()
        .catch(() => null)) as Body;
    }
    const version = int(body?.version);
    const workspaceId = str(route.workspace ? route.workspace(c, body) : c.get("workspaceId"));
    const targetId = str(route.target(c, body));
    if (!workspaceId || !targetId) return;
    const entry: AuditInput = {
      workspaceId,
      actor: actorOf(user),
      action: route.action,
      targetId,
      beforeVersion:
        route.versioned === "updated" && version !== null
          ? version - 1
          : route.versioned === "unchanged"
            ? version
            : route.versioned === "deleted"
              ? (c.get("auditBeforeVersion") ?? null)
              : null,
      afterVersion: route.versioned === "deleted" ? null : route.versioned ? version : null,
      requestId: c.get("requestId") ?? null,
    };
    try {
      await recordAudit(deps.pool, entry, deps.retention);
    } catch (err) {
      deps.log.error("audit entry could not be recorded", {
        workspaceId: entry.workspaceId,
        actorKind: entry.actor.kind,
        actorId: entry.actor.id,
        action: entry.action,
        targetId: entry.targetId,
        requestId: entry.requestId,
        error: (err as { code?: unknown }).code ?? "unknown",
      });
    }
  };
}
