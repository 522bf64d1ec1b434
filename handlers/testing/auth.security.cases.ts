// Test-only: the role table of the session and workspace routes, run by auth.security.test.ts and
// checked for completeness by handlers/route-coverage.test.ts. Nothing in the app imports this file.
import { type RoleCase, expectFor, expectSignedIn } from "../../lib/auth/testing/role-table.ts";

export const AUTH_ROLE_CASES: RoleCase[] = [
  { method: "GET", path: "/api/me", expect: expectSignedIn() },
  { method: "GET", path: "/api/workspaces", expect: expectSignedIn() },
  { method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}`, name: "GET /api/workspaces/:id", expect: expectFor("viewer") },
  {
    method: "GET",
    path: "/api/workspaces/ws_does_not_exist",
    name: "GET /api/workspaces/:missing",
    expect: { anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: 404 },
  },
  {
    method: "POST",
    path: "/api/auth/logout",
    spendsSession: true,
    expect: { anonymous: 204, viewer: 204, editor: 204, admin: 204, outsider: 204 },
  },
  { method: "POST", path: "/api/auth/sessions/revoke", spendsSession: true, expect: expectSignedIn() },
  {
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/sessions/revoke`,
    name: "POST /api/workspaces/:id/sessions/revoke",
    body: { sub: "role-table-someone-else" },
    expect: expectFor("admin"),
  },
  {
    method: "POST",
    path: "/api/workspaces/ws_does_not_exist/sessions/revoke",
    name: "POST /api/workspaces/:missing/sessions/revoke",
    body: { sub: "role-table-someone-else" },
    expect: { anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: 404 },
  },
  // Revoking a person's sessions everywhere is for a platform admin only (no persona of the table is one).
  {
    method: "POST",
    path: "/api/admin/sessions/revoke",
    body: { sub: "role-table-someone-else" },
    expect: { anonymous: 401, viewer: 403, editor: 403, admin: 403, outsider: 403 },
  },
];
