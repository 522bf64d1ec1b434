// Test-only: the role table of the AI routes, run by handlers/routes/ai/security.test.ts against an app without AI
// configuration (so a permitted model route answers 503 and the model is never called), and checked
// for completeness by handlers/route-coverage.test.ts. Nothing in the app imports this file.
import type { seedAiFixture } from "./ai-harness.ts";
import { type RoleCase, expectFor } from "../../lib/auth/testing/role-table.ts";

/** The role fixture plus the source and dashboard seedAiFixture creates in its workspace. */
export type AiRoleFixture = Awaited<ReturnType<typeof seedAiFixture>>;

export const AI_ROLE_CASES: RoleCase<AiRoleFixture>[] = [
  {
    method: "POST",
    path: (x) => `/api/workspaces/${x.workspace.id}/generate`,
    body: (f) => ({ prompt: "traffic", sourceId: f.sourceId }),
    expect: expectFor("editor", 503),
  },
  { method: "POST", path: (f) => `/api/sources/${f.sourceId}/draft`, body: {}, expect: expectFor("admin", 503) },
  { method: "POST", path: (f) => `/api/dashboards/${f.dashboardId}/chat`, body: { message: "hi" }, expect: expectFor("viewer", 503) },
  { method: "GET", path: (f) => `/api/dashboards/${f.dashboardId}/chat`, expect: expectFor("viewer", 200) },
  { method: "DELETE", path: (f) => `/api/dashboards/${f.dashboardId}/chat`, expect: expectFor("viewer", 200) },
  {
    method: "POST",
    path: (f) => `/api/dashboards/${f.dashboardId}/chat/apply`,
    body: { messageId: "1" },
    expect: expectFor("editor", 404),
  },
  { method: "GET", path: (x) => `/api/workspaces/${x.workspace.id}/generation-log`, expect: expectFor("admin", 200) },
];
