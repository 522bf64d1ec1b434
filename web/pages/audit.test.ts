import { describe, expect, test } from "vitest";
import { auditQuery, versionText } from "./audit.ts";
import { tokenState } from "./tokens.ts";

describe("the audit page's query", () => {
  test("empty fields are left out, text is trimmed, instants become ISO in UTC, before asks for the next page", () => {
    const local = "2026-11-27T10:30:00";
    const q = auditQuery({ action: "dashboard.update", actorKind: "", actorId: "  tok_1  ", since: local, until: "" }, "42");
    expect([...q]).toEqual([
      ["action", "dashboard.update"],
      ["actorId", "tok_1"],
      ["since", new Date(local).toISOString()],
      ["before", "42"],
    ]);
  });

  test("an instant that does not parse is not sent", () => {
    expect(auditQuery({ since: "not a time" }).toString()).toBe("");
  });
});

test.each([
  [{ beforeVersion: 3, afterVersion: 4 }, "version 3 → 4"],
  [{ beforeVersion: 2, afterVersion: 2 }, "version 2"],
  [{ beforeVersion: null, afterVersion: 1 }, "created as version 1"],
  [{ beforeVersion: 5, afterVersion: null }, "deleted at version 5"],
  [{ beforeVersion: null, afterVersion: null }, ""],
])("versions %o read %s", (e, text) => {
  expect(versionText(e)).toBe(text);
});

test("a token's state: revoked wins, then expired at its instant, else active", () => {
  const now = Date.parse("2026-11-27T12:00:00Z");
  expect(tokenState({ revokedAt: "2026-11-01T00:00:00Z", expiresAt: null }, now)).toBe("revoked");
  expect(tokenState({ revokedAt: null, expiresAt: "2026-11-27T12:00:00Z" }, now)).toBe("expired");
  expect(tokenState({ revokedAt: null, expiresAt: "2026-11-27T12:00:01Z" }, now)).toBe("active");
  expect(tokenState({ revokedAt: null, expiresAt: null }, now)).toBe("active");
});
