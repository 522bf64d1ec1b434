import { z } from "zod";
import { parseTimeExpression } from "../time/expressions.ts";

export { MAX_RELATIVE_MS, parseTimeExpression, resolveTime, TimeExpressionError } from "../time/expressions.ts";

export const PANEL_TYPES = ["timeseries", "stat", "table", "bar"] as const;

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

export const PanelSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, { error: "must be letters, digits, _ or -" }),
  title: z.string().min(1).max(200),
  type: z.enum(PANEL_TYPES),
  sourceId: z.string().min(1).max(64),
  sql: z.string().min(1).max(20000),
  unit: z.string().max(32).optional(),
  options: z.record(z.string(), z.unknown()).optional(),
});

/** A dashboard's time range: two time expressions. */
export const TimeRangeSchema = z.object({ from: TimeExpressionSchema, to: TimeExpressionSchema });

/** The dashboard spec (docs/api.md, dashboards); `minRefreshMs` is enforced by `dashboardSpecSchema`. */
export const DashboardSpecBaseSchema = z.object({
  title: z.string().min(1).max(200),
  refreshIntervalMs: z.number().int().positive().max(MAX_REFRESH_INTERVAL_MS).optional(),
  time: TimeRangeSchema,
  panels: z.array(PanelSchema).max(50),
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
  return (spec: Pick<z.infer<typeof DashboardSpecBaseSchema>, "refreshIntervalMs" | "panels">, ctx: z.RefinementCtx) => {
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

export type Panel = z.infer<typeof PanelSchema>;
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
