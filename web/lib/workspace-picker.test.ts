import { expect, test } from "vitest";
import type { Workspace } from "./api.ts";
import { chooseWorkspace } from "./workspace-picker.ts";

const list: Workspace[] = [
  { id: "w1", name: "One", role: "viewer" },
  { id: "w2", name: "Two", role: "admin" },
];

test("the URL wins, then the remembered one, then the first; unknown ids are ignored", () => {
  expect(chooseWorkspace(list, "w2", "w1")?.id).toBe("w2");
  expect(chooseWorkspace(list, null, "w2")?.id).toBe("w2");
  expect(chooseWorkspace(list, "nope", "gone")?.id).toBe("w1");
  expect(chooseWorkspace([], "w1", null)).toBeNull();
});
