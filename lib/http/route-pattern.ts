import type { Context } from "hono";
import { matchedRoutes } from "hono/route";

/**
 * The pattern of the route that answered (`/api/dashboards/:dashboardId`), read after `next()`; the
 * literal `unmatched` when no route did (a 404 of an unknown path). Never the raw path, whose ids and
 * text are the caller's.
 */
export function routePatternOf(c: Context): string {
  let routes: ReturnType<typeof matchedRoutes>;
  try {
    routes = matchedRoutes(c);
  } catch {
    return "unmatched";
  }
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i]!;
    if (r.method !== "ALL") return r.path;
  }
  return "unmatched";
}
