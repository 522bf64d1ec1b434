import { z } from "zod";
import { MAX_PANEL_SQL_LENGTH } from "./limits.ts";
import { parseTimeExpression } from "../time/expressions.ts";

export { MAX_RELATIVE_MS, parseTimeExpression, resolveTime, TimeExpressionError } from "../time/expressions.ts";

export const PANEL_TYPES = ["timeseries", "stat", "table", "bar", "gauge"] as const;

/** Columns of the layout grid (Grafana's 24). */
export const GRID_COLUMNS = 24;

/**
 * The slowest refresh cadence a dashboard may ask for: one day. Timers cannot wait longer than 2^31-1 ms
 * (Node fires a longer one at once), so without a ceiling a huge value would make the poller spin.
 */
export const MAX_REFRESH_INTERVAL_MS = 86_400_000;

/**
 * A time expression: now, now-<n><s|m|h|d|w> reaching back at most 3660 days, or an ISO-8601 instant
 * between 1970 and 9999 (lib/time/expressions.ts).
 */
export const TimeExpressionSchema = z
  .string()
  .max(64)
  .superRefine((s, ctx) => {
    const parsed = parseTimeExpression(s);
    if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.reason });
  });

/** A panel's place on the 24-column grid: column x (0-23), row y, width w in columns, height h in rows. */
export const GridPosSchema = z
  .object({
    x: z
      .number()
      .int()
      .min(0)
      .max(GRID_COLUMNS - 1),
    y: z.number().int().min(0).max(10_000),
    w: z.number().int().min(1).max(GRID_COLUMNS),
    h: z.number().int().min(1).max(100),
  })
  .refine((g) => g.x + g.w <= GRID_COLUMNS, { error: `x + w must not exceed ${GRID_COLUMNS} columns` });

/** A threshold: from `value` up (null: from minus infinity), drawn in `color` (a CSS colour name or #hex). */
export const ThresholdSchema = z.object({
  value: z.number().finite().nullable(),
  color: z
    .string()
    .max(32)
    .regex(/^(#[0-9A-Fa-f]{3,8}|[a-z]{3,20})$/, { error: "must be a colour name or #hex" }),
});

/** Legend values a time series may show beside each series. */
export const LEGEND_VALUES = ["last", "min", "max", "mean"] as const;

/**
 * Display options of a panel. The named keys are checked; other keys are kept as they are so that specs
 * written before a key existed still load.
 */
export const PanelOptionsSchema = z
  .object({
    decimals: z.number().int().min(0).max(10).optional(),
    min: z.number().finite().optional(),
    max: z.number().finite().optional(),
    thresholds: z.array(ThresholdSchema).max(20).optional(),
    legend: z
      .object({
        show: z.boolean().optional(),
        values: z.array(z.enum(LEGEND_VALUES)).max(LEGEND_VALUES.length).optional(),
      })
      .optional(),
  })
  .catchall(z.unknown());

/** A variable's name, as written `$name` or `${name}` in panel SQL. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** The value that selects every option of a variable with `includeAll` (Grafana's URL spelling). */
export const ALL_VALUE = "$__all";

/** Most options a variable offers: a custom list's length, and what a query variable keeps of its rows. */
export const MAX_VARIABLE_OPTIONS = 1000;

/** Longest option value. */
export const MAX_VARIABLE_VALUE_LENGTH = 1000;

const VariableValueSchema = z
  .string()
  .max(MAX_VARIABLE_VALUE_LENGTH)
  .refine((v) => !v.includes("\u0000"), { error: "must not contain a NUL character" });

/**
 * A dashboard variable: `custom` lists its values; `query` takes its options from the first column of a
 * guarded statement on a source. Bound as parameters, never spliced into SQL.
 */
export const VariableSchema = z.object({
  name: z
    .string()
    .regex(VARIABLE_NAME, { error: "must start with a letter or _ and hold only letters, digits and _ (at most 64)" })
    .refine((n) => !n.startsWith("__"), { error: "must not start with __ (reserved for $__ macros)" }),
  label: z.string().min(1).max(200).optional(),
  type: z.enum(["custom", "query"]),
  values: z.array(VariableValueSchema).min(1).max(MAX_VARIABLE_OPTIONS).optional(),
  sourceId: z.string().min(1).max(64).optional(),
  sql: z.string().min(1).max(MAX_PANEL_SQL_LENGTH).optional(),
  default: z.union([VariableValueSchema, z.array(VariableValueSchema).min(1).max(MAX_VARIABLE_OPTIONS)]).optional(),
  multi: z.boolean().optional(),
  includeAll: z.boolean().optional(),
});

export const PanelSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, { error: "must be letters, digits, _ or -" }),
  title: z.string().min(1).max(200),
  type: z.enum(PANEL_TYPES),
  sourceId: z.string().min(1).max(64),
  sql: z.string().min(1).max(MAX_PANEL_SQL_LENGTH),
  unit: z.string().max(32).optional(),
  options: PanelOptionsSchema.optional(),
  gridPos: GridPosSchema.optional(),
});

/** A dashboard's time range: two time expressions. */
export const TimeRangeSchema = z.object({ from: TimeExpressionSchema, to: TimeExpressionSchema });

/** The dashboard spec (docs/api.md, dashboards); `minRefreshMs` is enforced by `dashboardSpecSchema`. */
export const DashboardSpecBaseSchema = z.object({
  title: z.string().min(1).max(200),
  refreshIntervalMs: z.number().int().positive().max(MAX_REFRESH_INTERVAL_MS).optional(),
  time: TimeRangeSchema,
  panels: z.array(PanelSchema).max(50),
  variables: z.array(VariableSchema).max(20).optional(),
});

/** The spec schema with the server-side refresh floor and unique panel ids. */
export function dashboardSpecSchema(minRefreshMs: number) {
  return DashboardSpecBaseSchema.superRefine(refineSpec(minRefreshMs));
}

/**
 * The spec of a new dashboard: as dashboardSpecSchema, except that `time` may be left out and then is
 * DEFAULT_TIME_FROM / DEFAULT_TIME_TO.
 */
export function newDashboardSpecSchema(minRefreshMs: number, defaultTime: { from: string; to: string }) {
  return DashboardSpecBaseSchema.extend({ time: TimeRangeSchema.default(defaultTime) }).superRefine(refineSpec(minRefreshMs));
}

function refineSpec(minRefreshMs: number) {
  return (
    spec: Pick<z.infer<typeof DashboardSpecBaseSchema>, "refreshIntervalMs" | "panels" | "variables" | "time">,
    ctx: z.RefinementCtx,
  ) => {
    refineTime(spec.time, ctx);
    refineVariables(spec.variables ?? [], ctx);
    if (spec.refreshIntervalMs !== undefined && spec.refreshIntervalMs < minRefreshMs) {
      ctx.addIssue({
        code: "custom",
        path: ["refreshIntervalMs"],
        message: `must not be below MIN_REFRESH_INTERVAL_MS (${minRefreshMs})`,
      });
    }
    const seen = new Set<string>();
    spec.panels.forEach((p, i) => {
      if (seen.has(p.id)) ctx.addIssue({ code: "custom", path: ["panels", i, "id"], message: `duplicate panel id ${p.id}` });
      seen.add(p.id);
    });
  };
}

/** A range that ends before it starts, when both ends say so without a clock: two instants, or two offsets from now. */
function refineTime(time: { from: string; to: string }, ctx: z.RefinementCtx): void {
  const from = parseTimeExpression(time.from);
  const to = parseTimeExpression(time.to);
  if (!from.ok || !to.ok || from.value.kind !== to.value.kind) return;
  const after =
    from.value.kind === "absolute" && to.value.kind === "absolute"
      ? from.value.at > to.value.at
      : from.value.kind === "relative" && to.value.kind === "relative" && from.value.offsetMs < to.value.offsetMs;
  if (after) ctx.addIssue({ code: "custom", path: ["time", "from"], message: `must not be after time.to (${time.to})` });
}

/**
 * What a variable list must hold beyond each entry's shape: unique names; `values` for custom and only for custom,
 * `sourceId` and `sql` for query and only for query; values listed once, never `$__all`; a default that is one of the
 * values (when they are known before running anything), several only with `multi`, `$__all` only with `includeAll`.
 */
function refineVariables(variables: readonly Variable[], ctx: z.RefinementCtx): void {
  const names = new Set<string>();
  variables.forEach((v, i) => {
    const issue = (field: string, message: string) => ctx.addIssue({ code: "custom", path: ["variables", i, field], message });
    if (names.has(v.name)) issue("name", `duplicate variable name ${v.name}`);
    names.add(v.name);
    if (v.type === "custom") {
      if (v.values === undefined) issue("values", "a custom variable lists its values");
      if (v.sourceId !== undefined) issue("sourceId", "only a query variable has a source");
      if (v.sql !== undefined) issue("sql", "only a query variable has SQL");
    } else {
      if (v.sourceId === undefined) issue("sourceId", "a query variable names its source");
      if (v.sql === undefined) issue("sql", "a query variable has the SQL that lists its options");
      if (v.values !== undefined) issue("values", "a query variable takes its values from its SQL; values is for custom variables");
    }
    const values = v.values ?? [];
    const seen = new Set<string>();
    for (const value of values) {
      if (value === ALL_VALUE) issue("values", `${ALL_VALUE} is reserved for "All" (includeAll)`);
      else if (seen.has(value)) issue("values", `value ${JSON.stringify(value.slice(0, 64))} is listed twice`);
      seen.add(value);
    }
    if (v.default === undefined) return;
    const defaults = typeof v.default === "string" ? [v.default] : v.default;
    if (typeof v.default !== "string" && v.multi !== true && defaults.length > 1) issue("default", "several values need multi: true");
    for (const d of defaults) {
      if (d === ALL_VALUE) {
        if (v.includeAll !== true) issue("default", `${ALL_VALUE} needs includeAll: true`);
        else if (defaults.length > 1) issue("default", `${ALL_VALUE} stands alone`);
      } else if (v.type === "custom" && v.values !== undefined && !seen.has(d)) {
        issue("default", `${JSON.stringify(d.slice(0, 64))} is not one of the values`);
      }
    }
  });
}

export type Panel = z.infer<typeof PanelSchema>;
export type Variable = z.infer<typeof VariableSchema>;
export type GridPos = z.infer<typeof GridPosSchema>;
export type PanelOptions = z.infer<typeof PanelOptionsSchema>;
export type DashboardSpec = z.infer<typeof DashboardSpecBaseSchema>;

/** The effective refresh cadence: the dashboard's value or the default, clamped to the floor and the one-day ceiling on read. */
export function effectiveRefreshMs(
  spec: Pick<DashboardSpec, "refreshIntervalMs">,
  cfg: { DEFAULT_REFRESH_INTERVAL_MS: number; MIN_REFRESH_INTERVAL_MS: number },
): number {
  return Math.min(
    Math.max(spec.refreshIntervalMs ?? cfg.DEFAULT_REFRESH_INTERVAL_MS, cfg.MIN_REFRESH_INTERVAL_MS),
    MAX_REFRESH_INTERVAL_MS,
  );
}
