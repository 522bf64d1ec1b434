import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { ALL_VALUE, VARIABLE_NAME } from "../../../lib/dashboards/spec.ts";
import { dashboardWorkspaceId, getDashboard } from "../../../lib/dashboards/store.ts";
import { type VariableOptionsCache, resolveVariables } from "../../../lib/dashboards/variables.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { DashboardParamsSchema } from "../dashboards/routes.ts";

export interface DashboardVariableRouteDeps {
  pool: pg.Pool;
  auth: Auth;
  /** The process's shared options of query variables (lib/dashboards/variables.ts). */
  variableOptions: VariableOptionsCache;
}

export const VariableParamsSchema = DashboardParamsSchema.extend({
  name: z
    .string()
    .regex(VARIABLE_NAME, { error: "must be a variable name" })
    .openapi({ param: { name: "name", in: "path" }, example: "service" }),
});

export const VariableOptionsSchema = z
  .object({
    name: z.string(),
    type: z.enum(["custom", "query"]),
    multi: z.boolean(),
    includeAll: z.boolean().openapi({ description: `Whether "All" may be chosen: the URL value ${ALL_VALUE}, which binds every option.` }),
    options: z.array(z.string()).openapi({
      description:
        "The values a viewer may choose (var-NAME in the stream's URL): a custom variable's values, or a query variable's options from its guarded SQL over the dashboard's saved range, re-run at most once per dashboard cadence.",
    }),
    default: z.array(z.string()).openapi({
      description: `What an absent var-NAME selects: the spec's default where it is still an option (or [${ALL_VALUE}]), else the first option.`,
    }),
  })
  .openapi("VariableOptions");

/** GET /api/dashboards/:dashboardId/variables/:name/options: what the page offers for one variable (viewer). */
export function registerDashboardVariableRoutes(app: ApiRouter, deps: DashboardVariableRouteDeps): void {
  const { auth, pool, variableOptions } = deps;
  const ofDashboard = async (c: { req: { param(name: string): string | undefined } }) => {
    const id = c.req.param("dashboardId");
    return id ? dashboardWorkspaceId(pool, id) : null;
  };

  const options = createRoute({
    method: "get",
    path: "/api/dashboards/{dashboardId}/variables/{name}/options",
    tags: ["dashboards"],
    summary: "List the options of a dashboard variable (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofDashboard)] as const,
    request: { params: VariableParamsSchema },
    responses: {
      200: { description: "The variable's options and default", content: { "application/json": { schema: VariableOptionsSchema } } },
      ...problems(400, 401, 403, 404, 422, 502, 504),
    },
  });
  app.openapi(options, async (c) => {
    const { dashboardId, name } = c.req.valid("param");
    const d = await getDashboard(pool, dashboardId);
    if (!d || d.workspaceId !== c.var.workspaceId) throw new AppError("not_found", "Not found.");
    const variable = (d.spec.variables ?? []).find((v) => v.name === name);
    if (!variable) throw new AppError("not_found", `The dashboard has no variable ${name}.`);
    const optionsOf = variableOptions.optionsOf(d);
    const list = variable.type === "custom" ? (variable.values ?? []) : await optionsOf(variable);
    // The default as the stream resolves an absent var-NAME: one code path for both.
    const resolved = await resolveVariables({ variables: [variable] }, {}, async () => list);
    return c.json(
      {
        name: variable.name,
        type: variable.type,
        multi: variable.multi === true,
        includeAll: variable.includeAll === true,
        options: [...list],
        default: resolved.selection[variable.name] ?? [],
      },
      200,
    );
  });
}
