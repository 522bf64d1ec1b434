import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import { getWorkspaceLimits, setWorkspaceLimits, type WorkspaceLimits } from "../../../lib/workspaces/store.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

export interface LimitRouteDeps {
  config: Pick<Config, "LLM_RATE_PER_MINUTE" | "LLM_DAILY_TOKEN_BUDGET">;
  pool: pg.Pool;
  auth: Auth;
}

// Postgres `integer` bounds the rate column; the budget is a bigint but must stay an exact JS number.
const MAX_RATE = 2_147_483_647;

const Override = (max: number, description: string) =>
  z
    .number()
    .int()
    .min(0)
    .max(max)
    .nullable()
    .openapi({ description: `${description} null uses the environment default; 0 disables.` });

export const LimitsUpdateSchema = z
  .object({
    llmRatePerMinute: Override(MAX_RATE, "Override of LLM_RATE_PER_MINUTE for this workspace."),
    llmDailyTokenBudget: Override(Number.MAX_SAFE_INTEGER, "Override of LLM_DAILY_TOKEN_BUDGET for this workspace."),
  })
  .openapi("WorkspaceLimitsUpdate");

export const LimitsSchema = z
  .object({
    workspaceId: z.string(),
    overrides: LimitsUpdateSchema,
    defaults: z.object({ llmRatePerMinute: z.number().int(), llmDailyTokenBudget: z.number().int() }),
    effective: z.object({ llmRatePerMinute: z.number().int(), llmDailyTokenBudget: z.number().int() }),
  })
  .openapi("WorkspaceLimits");

function limitsJson(l: WorkspaceLimits, config: LimitRouteDeps["config"]) {
  const defaults = { llmRatePerMinute: config.LLM_RATE_PER_MINUTE, llmDailyTokenBudget: config.LLM_DAILY_TOKEN_BUDGET };
  return {
    workspaceId: l.workspace_id,
    overrides: { llmRatePerMinute: l.llm_rate_per_minute, llmDailyTokenBudget: l.llm_daily_token_budget },
    defaults,
    effective: {
      llmRatePerMinute: l.llm_rate_per_minute ?? defaults.llmRatePerMinute,
      llmDailyTokenBudget: l.llm_daily_token_budget ?? defaults.llmDailyTokenBudget,
    },
  };
}

/** Workspace AI limits: read and set the per-workspace overrides (admin). */
export function registerLimitRoutes(app: ApiRouter, deps: LimitRouteDeps): void {
  const { auth, pool, config } = deps;
  const inWorkspace = workspaceFromParam("workspaceId");

  const read = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}/limits",
    tags: ["limits"],
    summary: "Read the workspace's AI limits: overrides, defaults and what applies (admin)",
    middleware: [auth.requireSession, auth.requireRole("admin", inWorkspace)] as const,
    request: { params: WorkspaceParamsSchema },
    responses: {
      200: { description: "The limits", content: { "application/json": { schema: LimitsSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(read, async (c) => {
    const l = await getWorkspaceLimits(pool, c.var.workspaceId);
    if (!l) throw new AppError("not_found", "Not found.");
    return c.json(limitsJson(l, config), 200);
  });

  const update = createRoute({
    method: "put",
    path: "/api/workspaces/{workspaceId}/limits",
    tags: ["limits"],
    summary: "Set the workspace's AI limit overrides (admin)",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", inWorkspace), limitBody(64 * 1024)] as const,
    request: { params: WorkspaceParamsSchema, body: { required: true, content: { "application/json": { schema: LimitsUpdateSchema } } } },
    responses: {
      200: { description: "The limits now", content: { "application/json": { schema: LimitsSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(update, async (c) => {
    const body = c.req.valid("json");
    const l = await setWorkspaceLimits(pool, c.var.workspaceId, {
      llm_rate_per_minute: body.llmRatePerMinute,
      llm_daily_token_budget: body.llmDailyTokenBudget,
    });
    if (!l) throw new AppError("not_found", "Not found.");
    return c.json(limitsJson(l, config), 200);
  });
}
