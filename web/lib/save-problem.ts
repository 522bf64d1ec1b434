import type { Problem } from "./api.ts";

/** One panel the guard refused on save, as the API reports it in the problem's `panels`. */
export interface RefusedPanel {
  panelId: string;
  reason: string;
  message: string;
}

/**
 * What a refused save lists: the panels the guard refused (422 `guard_rejected`, member `panels`) and the
 * spec's validation issues (400, member `issues`, each with a path). Members of another shape are ignored.
 */
export function saveProblemLists(problem: Problem): { refused: RefusedPanel[]; issues: { path: string; message: string }[] } {
  const refused = Array.isArray(problem.panels)
    ? problem.panels.filter(
        (p): p is RefusedPanel =>
          typeof p === "object" &&
          p !== null &&
          typeof p.panelId === "string" &&
          typeof p.reason === "string" &&
          typeof p.message === "string",
      )
    : [];
  const issues = Array.isArray(problem.issues)
    ? problem.issues.filter(
        (i): i is { path: string; message: string } =>
          typeof i === "object" && i !== null && typeof i.path === "string" && typeof i.message === "string",
      )
    : [];
  return { refused, issues };
}
