// Test-only: the role table of the documented JSON API (dashboards, sources, query preview, limits),
// run by security.test.ts and checked for completeness by route-coverage.test.ts. Nothing in the app
// imports this file.
import { type Expectation, type RoleCase, type RoleFixture, expectFor } from "../../lib/auth/testing/role-table.ts";
import { type ApiFixture, dashboardSpec } from "./api-fixture.ts";

/** Resources that a PUT or DELETE succeeding for several personas consumes: one fresh id per request. */
export type ConsumedQueue = "putDashboard" | "deleteDashboard" | "putSource" | "deleteSource";

/** The role fixture plus what the API table's paths and bodies are built from. */
export interface ApiRoleFixture extends RoleFixture {
  api: ApiFixture;
  /** A dashboard of the fixture workspace that no case changes. */
  dashboardId: string;
  /** A dashboard of the other workspace. */
  otherDashboardId: string;
  /** An API token of the fixture workspace (revoking it again is not an error). */
  tokenId: string;
  /** The next unused id of `queue`; throws when the queue is empty. */
  take(queue: ConsumedQueue): string;
}

const missing: Expectation = { anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: 404 };
/** A resource of the other workspace: only its own admin (the outsider) gets `ok`. */
const othersOnly = (ok: number): Expectation => ({ anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: ok });

/** A platform-admin route: signed-in personas are members of workspaces, not platform admins. */
const notPlatformAdmin: Expectation = { anonymous: 401, viewer: 403, editor: 403, admin: 403, outsider: 403 };

/** A valid new source on the fixture's metrics database. */
export const sourceBody = (api: ApiFixture) => ({
  name: "added",
  host: api.metrics.host,
  port: api.metrics.port,
  database: api.metrics.database,
  sslmode: "disable",
  secretRef: "METRICS",
});

/** A valid preview of the fixture workspace's source. */
export const previewBody = (api: ApiFixture) => ({
  sourceId: api.source.id,
  sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)",
  time: { from: "now-1h", to: "now" },
});

export const API_ROLE_CASES: RoleCase<ApiRoleFixture>[] = [
  // Dashboards
  { name: "GET dashboards list", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/dashboards`, expect: expectFor("viewer") },
  {
    name: "POST dashboards (create)",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/dashboards`,
    body: (f) => ({ spec: dashboardSpec(f.api.source.id) }),
    expect: expectFor("editor", 201),
  },
  { name: "GET dashboard", method: "GET", path: (f) => `/api/dashboards/${f.dashboardId}`, expect: expectFor("viewer") },
  {
    name: "PUT dashboard",
    method: "PUT",
    path: (f) => `/api/dashboards/${f.take("putDashboard")}`,
    body: (f) => ({ version: 1, spec: dashboardSpec(f.api.source.id, { title: "changed" }) }),
    expect: expectFor("editor"),
  },
  {
    name: "DELETE dashboard",
    method: "DELETE",
    path: (f) => `/api/dashboards/${f.take("deleteDashboard")}`,
    expect: expectFor("editor", 204),
  },
  { name: "GET dashboard (missing)", method: "GET", path: "/api/dashboards/db_missing", expect: missing },
  {
    name: "GET dashboard of another workspace",
    method: "GET",
    path: (f) => `/api/dashboards/${f.otherDashboardId}`,
    expect: othersOnly(200),
  },
  {
    name: "PUT dashboard of another workspace (stale version, so nothing changes)",
    method: "PUT",
    path: (f) => `/api/dashboards/${f.otherDashboardId}`,
    body: (f) => ({ version: 99, spec: dashboardSpec(f.api.otherSource.id) }),
    expect: othersOnly(409),
  },
  {
    name: "DELETE dashboard of another workspace (stale version)",
    method: "DELETE",
    path: (f) => `/api/dashboards/${f.otherDashboardId}?version=99`,
    expect: othersOnly(409),
  },

  // Dashboard history
  { name: "GET dashboard versions", method: "GET", path: (f) => `/api/dashboards/${f.dashboardId}/versions`, expect: expectFor("viewer") },
  { name: "GET dashboard version", method: "GET", path: (f) => `/api/dashboards/${f.dashboardId}/versions/1`, expect: expectFor("viewer") },
  { name: "GET dashboard version (missing)", method: "GET", path: (f) => `/api/dashboards/${f.dashboardId}/versions/999`, expect: missing },
  {
    name: "GET dashboard diff",
    method: "GET",
    path: (f) => `/api/dashboards/${f.dashboardId}/diff?from=1&to=1`,
    expect: expectFor("viewer"),
  },
  {
    name: "POST restore a version (stale version, so nothing changes)",
    method: "POST",
    path: (f) => `/api/dashboards/${f.dashboardId}/versions/1/restore`,
    body: { version: 99 },
    expect: expectFor("editor", 409),
  },
  {
    name: "GET versions of another workspace's dashboard",
    method: "GET",
    path: (f) => `/api/dashboards/${f.otherDashboardId}/versions`,
    expect: othersOnly(200),
  },
  {
    name: "GET diff of another workspace's dashboard",
    method: "GET",
    path: (f) => `/api/dashboards/${f.otherDashboardId}/diff?from=1&to=1`,
    expect: othersOnly(200),
  },
  {
    name: "POST restore on another workspace's dashboard (stale version)",
    method: "POST",
    path: (f) => `/api/dashboards/${f.otherDashboardId}/versions/1/restore`,
    body: { version: 99 },
    expect: othersOnly(409),
  },

  // Dashboard variables (the fixture dashboards declare a custom variable `env`)
  {
    name: "GET a variable's options",
    method: "GET",
    path: (f) => `/api/dashboards/${f.dashboardId}/variables/env/options`,
    expect: expectFor("viewer"),
  },
  {
    name: "GET a variable's options (no such variable)",
    method: "GET",
    path: (f) => `/api/dashboards/${f.dashboardId}/variables/nope/options`,
    expect: missing,
  },
  {
    name: "GET a variable's options on another workspace's dashboard",
    method: "GET",
    path: (f) => `/api/dashboards/${f.otherDashboardId}/variables/env/options`,
    expect: othersOnly(200),
  },

  // Sources
  { name: "GET sources list", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/sources`, expect: expectFor("viewer") },
  {
    name: "POST sources (create)",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/sources`,
    body: (f) => sourceBody(f.api),
    expect: expectFor("admin", 201),
  },
  { name: "GET source", method: "GET", path: (f) => `/api/sources/${f.api.source.id}`, expect: expectFor("viewer") },
  {
    name: "PUT source",
    method: "PUT",
    path: (f) => `/api/sources/${f.take("putSource")}`,
    body: { version: 1, notes: "changed" },
    expect: expectFor("admin"),
  },
  { name: "DELETE source", method: "DELETE", path: (f) => `/api/sources/${f.take("deleteSource")}`, expect: expectFor("admin", 204) },
  { name: "POST source test", method: "POST", path: (f) => `/api/sources/${f.api.source.id}/test`, expect: expectFor("admin") },
  {
    name: "POST source catalog refresh",
    method: "POST",
    path: (f) => `/api/sources/${f.api.source.id}/catalog/refresh`,
    expect: expectFor("admin"),
  },
  { name: "GET source (missing)", method: "GET", path: "/api/sources/src_missing", expect: missing },
  { name: "POST source test (missing)", method: "POST", path: "/api/sources/src_missing/test", expect: missing },
  { name: "GET source of another workspace", method: "GET", path: (f) => `/api/sources/${f.api.otherSource.id}`, expect: othersOnly(200) },
  {
    name: "POST test of another workspace's source",
    method: "POST",
    path: (f) => `/api/sources/${f.api.otherSource.id}/test`,
    expect: othersOnly(200),
  },

  // The guard's verdict as you type
  {
    name: "POST sql check",
    method: "POST",
    path: (f) => `/api/sources/${f.api.source.id}/check`,
    body: { sql: "SELECT * FROM pg_shadow" },
    expect: expectFor("editor"),
  },
  {
    name: "POST sql check of another workspace's source",
    method: "POST",
    path: (f) => `/api/sources/${f.api.otherSource.id}/check`,
    body: { sql: "SELECT 1" },
    expect: { anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: 200 },
  },
  {
    name: "POST sql check (missing source)",
    method: "POST",
    path: "/api/sources/src_missing/check",
    body: { sql: "SELECT 1" },
    expect: missing,
  },

  // Query preview
  {
    name: "POST query-preview",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/query-preview`,
    body: (f) => previewBody(f.api),
    expect: expectFor("editor"),
  },
  {
    name: "POST query-preview naming another workspace's source",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/query-preview`,
    body: (f) => ({ ...previewBody(f.api), sourceId: f.api.otherSource.id }),
    expect: { anonymous: 401, viewer: 403, editor: 404, admin: 404, outsider: 404 },
  },
  {
    name: "POST query-preview in another workspace",
    method: "POST",
    path: (f) => `/api/workspaces/${f.otherWorkspace.id}/query-preview`,
    body: (f) => ({ ...previewBody(f.api), sourceId: f.api.otherSource.id }),
    expect: othersOnly(200),
  },

  // Limits
  { name: "GET limits", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/limits`, expect: expectFor("admin") },
  {
    name: "PUT limits",
    method: "PUT",
    path: (f) => `/api/workspaces/${f.workspace.id}/limits`,
    body: { llmRatePerMinute: 5, llmDailyTokenBudget: null },
    expect: expectFor("admin"),
  },
  { name: "GET limits of a missing workspace", method: "GET", path: "/api/workspaces/ws_missing/limits", expect: missing },

  // API tokens and the audit trail: workspace admins only
  {
    name: "POST tokens (create)",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/tokens`,
    body: { name: "role table", role: "viewer" },
    expect: expectFor("admin", 201),
  },
  { name: "GET tokens", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/tokens`, expect: expectFor("admin") },
  {
    // Revoking is idempotent (200 again), so one token serves every persona.
    name: "DELETE token (revoke)",
    method: "DELETE",
    path: (f) => `/api/workspaces/${f.workspace.id}/tokens/${f.tokenId}`,
    expect: expectFor("admin"),
  },
  {
    name: "DELETE token of a missing workspace",
    method: "DELETE",
    path: "/api/workspaces/ws_missing/tokens/tok_000000000000",
    expect: missing,
  },
  { name: "GET audit", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/audit`, expect: expectFor("admin") },
  { name: "GET audit of a missing workspace", method: "GET", path: "/api/workspaces/ws_missing/audit", expect: missing },

  // Platform administration of workspaces: no persona of the table is a platform admin (PLATFORM_ADMIN_GROUP is
  // unset in the fixture), so even a workspace admin gets 403 (routes/workspaces/routes.test.ts covers the platform admin).
  { name: "GET admin workspaces", method: "GET", path: "/api/admin/workspaces", expect: notPlatformAdmin },
  {
    name: "POST admin workspaces (create)",
    method: "POST",
    path: "/api/admin/workspaces",
    body: { name: "created by the role table", groups: { viewer: "v", editor: "e", admin: "a" } },
    expect: notPlatformAdmin,
  },
  { name: "GET admin workspace", method: "GET", path: (f) => `/api/admin/workspaces/${f.workspace.id}`, expect: notPlatformAdmin },
  {
    name: "PATCH admin workspace (rename)",
    method: "PATCH",
    path: (f) => `/api/admin/workspaces/${f.workspace.id}`,
    body: { name: "renamed by the role table" },
    expect: notPlatformAdmin,
  },
  {
    name: "DELETE admin workspace (forced)",
    method: "DELETE",
    path: (f) => `/api/admin/workspaces/${f.otherWorkspace.id}?force=true`,
    expect: notPlatformAdmin,
  },

  // The document itself is public: it describes the API, it holds no data.
  {
    name: "GET openapi.json",
    method: "GET",
    path: "/api/openapi.json",
    expect: { anonymous: 200, viewer: 200, editor: 200, admin: 200, outsider: 200 },
  },
];
