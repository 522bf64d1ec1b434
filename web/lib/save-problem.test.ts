import { describe, expect, test } from "vitest";
import { saveProblemLists } from "./save-problem.ts";

describe("saveProblemLists", () => {
  test("a guard refusal lists its panels (the server's `panels` member)", () => {
    const problem = {
      code: "guard_rejected",
      status: 422,
      reason: "function",
      panels: [{ panelId: "errors", reason: "function", message: "Function pg_sleep is not allowed." }],
    };
    expect(saveProblemLists(problem)).toEqual({ refused: problem.panels, issues: [] });
  });

  test("validation issues list their paths", () => {
    const problem = { code: "validation_failed", status: 400, issues: [{ path: "spec.title", message: "Required" }] };
    expect(saveProblemLists(problem)).toEqual({ refused: [], issues: problem.issues });
  });

  test("members of another shape are ignored, never thrown on", () => {
    expect(saveProblemLists({ panels: "x", issues: [null, 1, { path: 2 }] })).toEqual({ refused: [], issues: [] });
    expect(saveProblemLists({ panels: [{ panelId: "a" }] })).toEqual({ refused: [], issues: [] });
  });
});
