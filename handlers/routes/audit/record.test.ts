import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { recordAudit } from "../../../lib/audit/store.ts";
import { createApp } from "../../app.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "../../testing/api-fixture.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { OPERATION_METHODS, type OpenApiDoc } from "../../testing/openapi-doc.ts";
import { sourceBody } from "../../testing/api.security.cases.ts";
import { AUDITED, NOT_AUDITED } from "./record.ts";

// The audit trail: every change to a workspace's configuration, through the API, by a person or an API token,
// is one entry naming who, what and the versions; admins read it filtered; entries past AUDIT_RETENTION_DAYS go.

const PLATFORM = "platform-admins";
const clock = Date.now();
let fx: ApiFixture;
let ws: string;
let platformCookie: string;

beforeAll(async () => {
  fx = await createApiFixture({ now: () => clock, env: { PLATFORM_ADMIN_GROUP: PLATFORM, AUDIT_RETENTION_DAYS: "30" } });
  ws = fx.roles.workspace.id;
  platformCookie = await fx.roles.mintCookie({ sub: "platform-ann", groups: [PLATFORM] });
});
afterAll(() => fx.close());

interface Entry {
  id: string;
  at: string;
  actor: { kind: string; id: string };
  action: string;
  target: { kind: string; id: string };
  beforeVersion: number | null;
  afterVersion: number | null;
  requestId: string | null;
}

async function trail(query = "", workspaceId = ws): Promise<Entry[]> {
  const res = await call(fx.app, fx.roles.cookies.admin, "GET", `/api/workspaces/${workspaceId}/audit${query}`);
  expect(res.status).toBe(200);
  return (await res.json()).entries;
}

describe("what is recorded", () => {
  test("every mutating route of the OpenAPI document is audited or listed as not changing configuration, and no entry is stale", async () => {
    const doc = (await (await call(fx.app, null, "GET", "/api/openapi.json")).json()) as OpenApiDoc;
    const mutating = Object.entries(doc.paths).flatMap(([path, item]) =>
      OPERATION_METHODS.filter((m) => m !== "get" && item[m]).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    expect(mutating.length).toBeGreaterThan(15);
    const unlisted = mutating.filter((k) => !(k in AUDITED) && !(k in NOT_AUDITED));
    expect(unlisted, "add each to AUDITED (routes/audit/record.ts) or to NOT_AUDITED with the reason").toEqual([]);
    const stale = [...Object.keys(AUDITED), ...Object.keys(NOT_AUDITED)].filter((k) => !mutating.includes(k));
    expect(stale).toEqual([]);
  });

  test("a dashboard's life: create, update, delete, each with who and the versions before and after", async () => {
    const created = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/dashboards`, {
      spec: dashboardSpec(fx.source.id),
    });
    const id = (await created.json()).id as string;
    const requestId = created.headers.get("x-request-id");
    await call(fx.app, fx.roles.cookies.editor, "PUT", `/api/dashboards/${id}`, {
      version: 1,
      spec: dashboardSpec(fx.source.id, { title: "v2" }),
    });
    await call(fx.app, fx.roles.cookies.editor, "DELETE", `/api/dashboards/${id}`);
    const entries = await trail(`?targetId=${id}`);
    expect(entries.map((e) => [e.action, e.beforeVersion, e.afterVersion])).toEqual([
      ["dashboard.delete", 2, null],
      ["dashboard.update", 1, 2],
      ["dashboard.create", null, 1],
    ]);
    for (const e of entries) {
      expect(e.actor).toEqual({ kind: "person", id: fx.roles.users.editor.sub });
      expect(e.target).toEqual({ kind: "dashboard", id });
    }
    expect(entries[2]!.requestId).toBe(requestId);
  });

  test("a source's life, the limits, and an admin's session revocation", async () => {
    const created = await call(fx.app, fx.roles.cookies.admin, "POST", `/api/workspaces/${ws}/sources`, {
      ...sourceBody(fx),
      name: "audited",
    });
    expect(created.status).toBe(201);
    const id = (await created.json()).id as string;
    await call(fx.app, fx.roles.cookies.admin, "PUT", `/api/sources/${id}`, { version: 1, notes: "described" });
    await call(fx.app, fx.roles.cookies.admin, "DELETE", `/api/sources/${id}`);
    expect((await trail(`?targetKind=source&targetId=${id}`)).map((e) => [e.action, e.beforeVersion, e.afterVersion])).toEqual([
      ["source.delete", 2, null],
      ["source.update", 1, 2],
      ["source.create", null, 1],
    ]);
    await call(fx.app, fx.roles.cookies.admin, "PUT", `/api/workspaces/${ws}/limits`, { llmRatePerMinute: 3, llmDailyTokenBudget: null });
    expect(await trail("?action=limits.update")).toEqual([expect.objectContaining({ target: { kind: "limits", id: ws } })]);
    await call(fx.app, fx.roles.cookies.admin, "POST", `/api/workspaces/${ws}/sessions/revoke`, { sub: "someone-leaving" });
    expect(await trail("?action=sessions.revoke")).toEqual([expect.objectContaining({ target: { kind: "user", id: "someone-leaving" } })]);
  });

  test("tokens: their creation and revocation are recorded, and what a token does is recorded as the token", async () => {
    const res = await call(fx.app, fx.roles.cookies.admin, "POST", `/api/workspaces/${ws}/tokens`, { name: "ci", role: "editor" });
    const t = await res.json();
    const made = await call(
      fx.app,
      null,
      "POST",
      `/api/workspaces/${ws}/dashboards`,
      { spec: dashboardSpec(fx.source.id) },
      {
        authorization: `Bearer ${t.token}`,
      },
    );
    expect(made.status).toBe(201);
    await call(fx.app, fx.roles.cookies.admin, "DELETE", `/api/workspaces/${ws}/tokens/${t.id}`);
    expect((await trail(`?targetKind=token&targetId=${t.id}`)).map((e) => e.action)).toEqual(["token.revoke", "token.create"]);
    const byToken = await trail(`?actorKind=token&actorId=${t.id}`);
    expect(byToken).toEqual([expect.objectContaining({ action: "dashboard.create", actor: { kind: "token", id: t.id }, afterVersion: 1 })]);
    // The token's text is in no entry.
    expect(JSON.stringify(await trail("?limit=500"))).not.toContain(t.token);
  });

  test("a workspace's creation, rename and deletion by a platform admin are in that workspace's trail", async () => {
    const created = await call(fx.app, platformCookie, "POST", "/api/admin/workspaces", {
      name: "Audited",
      groups: { viewer: "av", editor: "ae", admin: fx.roles.workspace.admin_group },
    });
    expect(created.status).toBe(201);
    const id = (await created.json()).id as string;
    await call(fx.app, platformCookie, "PATCH", `/api/admin/workspaces/${id}`, { name: "Audited twice" });
    await call(fx.app, platformCookie, "DELETE", `/api/admin/workspaces/${id}`);
    expect(await recordedFor(id)).toEqual(["workspace.delete", "workspace.update", "workspace.create"]);
  });

  test("refused changes are not recorded", async () => {
    const before = (await trail("?limit=500")).length;
    await call(fx.app, fx.roles.cookies.viewer, "POST", `/api/workspaces/${ws}/dashboards`, { spec: dashboardSpec(fx.source.id) });
    await call(fx.app, fx.roles.cookies.editor, "PUT", `/api/dashboards/db_missing`, { version: 1, spec: dashboardSpec(fx.source.id) });
    await call(fx.app, fx.roles.cookies.admin, "PUT", `/api/workspaces/${ws}/limits`, { llmRatePerMinute: -1, llmDailyTokenBudget: null });
    expect((await trail("?limit=500")).length).toBe(before);
  });
});

/** An app on a pool wrapper that counts every query and checkout the app makes (`seen`). */
function countingApp(): { app: ReturnType<typeof createApp>; seen: string[] } {
  const seen: string[] = [];
  const pool = new Proxy(fx.pool, {
    get(target, prop) {
      if (prop === "query" || prop === "connect") {
        return (...args: unknown[]) => {
          const first = args[0] as { text?: unknown } | string | undefined;
          seen.push(prop === "connect" ? "connect" : String(typeof first === "string" ? first : first?.text));
          return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const app = createApp({
    ...testAppDeps(fx.config, { pool, log: createLogger({ silent: true }), now: () => clock, guard: fx.guard, queryRunner: fx.runner }),
    oidc: null,
  });
  return { app, seen };
}

describe("what a refused change costs", () => {
  test("the counting wrapper sees the app's queries (an admin's delete of a source reads and deletes it)", async () => {
    const { app, seen } = countingApp();
    const s = await fx.newSource("counted");
    expect((await call(app, fx.roles.cookies.admin, "DELETE", `/api/sources/${s.id}`)).status).toBe(204);
    expect(seen.some((q) => q.startsWith("DELETE FROM sources"))).toBe(true);
    expect((await trail(`?targetId=${s.id}`)).map((e) => [e.action, e.beforeVersion])).toEqual([["source.delete", s.version]]);
  });

  test.each([
    ["an anonymous DELETE of a dashboard", null, "/api/dashboards/db_anything", 401],
    ["an anonymous DELETE of a source", null, "/api/sources/src_anything", 401],
    ["an anonymous DELETE of a badly encoded id", null, "/api/dashboards/%", 401],
    ["an anonymous DELETE of a token", null, "/api/workspaces/ws_x/tokens/tok_x", 401],
    ["a cross-site DELETE by an editor", "editor", "/api/dashboards/db_anything", 403],
  ] as const)("%s performs no config-store query", async (_name, who, path, status) => {
    const { app, seen } = countingApp();
    const headers: Record<string, string> = who ? { origin: "https://elsewhere.example" } : {};
    const res = await call(app, who ? fx.roles.cookies[who] : null, "DELETE", path, undefined, headers);
    expect(res.status).toBe(status);
    expect(seen).toEqual([]);
  });
});

/** Actions recorded for a workspace that no longer has a role group anyone holds: read straight from the table. */
async function recordedFor(workspaceId: string): Promise<string[]> {
  const { rows } = await fx.pool.query<{ action: string }>("SELECT action FROM audit_log WHERE workspace_id = $1 ORDER BY id DESC", [
    workspaceId,
  ]);
  return rows.map((r) => r.action);
}

describe("reading", () => {
  test("only admins read the trail; other workspaces' entries never show", async () => {
    expect((await call(fx.app, fx.roles.cookies.editor, "GET", `/api/workspaces/${ws}/audit`)).status).toBe(403);
    await call(fx.app, fx.roles.cookies.outsider, "PUT", `/api/workspaces/${fx.roles.otherWorkspace.id}/limits`, {
      llmRatePerMinute: 1,
      llmDailyTokenBudget: null,
    });
    const mine = await trail("?limit=500");
    expect(mine.some((e) => e.actor.id === fx.roles.users.outsider.sub)).toBe(false);
  });

  test("pages go back by entry id", async () => {
    const all = await trail("?limit=500");
    expect(all.length).toBeGreaterThan(4);
    const res = await call(fx.app, fx.roles.cookies.admin, "GET", `/api/workspaces/${ws}/audit?limit=2`);
    const page = await res.json();
    expect(page.entries.map((e: Entry) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));
    const next = await trail(`?limit=2&before=${page.next}`);
    expect(next.map((e) => e.id)).toEqual(all.slice(2, 4).map((e) => e.id));
  });

  test.each([
    ["?action=dashboard.explode", "action"],
    ["?actorKind=robot", "actorKind"],
    ["?since=yesterday", "since"],
    ["?limit=0", "limit"],
    ["?limit=501", "limit"],
    ["?before=1;DROP", "before"],
  ])("%s is a 400 naming %s", async (query, field) => {
    const res = await call(fx.app, fx.roles.cookies.admin, "GET", `/api/workspaces/${ws}/audit${query}`);
    expect(res.status).toBe(400);
    expect((await res.json()).issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
  });

  test("since / until select a window", async () => {
    const all = await trail("?limit=500");
    const at = all[0]!.at;
    expect((await trail(`?since=${encodeURIComponent(at)}`)).every((e) => e.at >= at)).toBe(true);
    expect((await trail(`?until=${encodeURIComponent(at)}`)).every((e) => e.at < at)).toBe(true);
  });
});

describe("retention", () => {
  test("entries older than AUDIT_RETENTION_DAYS are not returned, and the next write sweeps them", async () => {
    const old = clock - 31 * 86_400_000;
    await recordAudit(
      fx.pool,
      { workspaceId: ws, actor: { kind: "person", id: "ancient" }, action: "limits.update", targetId: ws },
      { retentionDays: 0, now: () => old },
    );
    expect((await fx.pool.query("SELECT 1 FROM audit_log WHERE actor_id = 'ancient'")).rowCount).toBe(1);
    expect(await trail("?actorId=ancient")).toEqual([]);
    await call(fx.app, fx.roles.cookies.admin, "PUT", `/api/workspaces/${ws}/limits`, { llmRatePerMinute: 4, llmDailyTokenBudget: null });
    expect((await fx.pool.query("SELECT 1 FROM audit_log WHERE actor_id = 'ancient'")).rowCount).toBe(0);
  });

  test("a change whose record cannot be written is still answered, and the log names its ids", async () => {
    const lines: string[] = [];
    const app = createApp({
      ...testAppDeps(fx.config, {
        pool: fx.pool,
        log: createLogger({ write: (l) => lines.push(l) }),
        now: () => clock,
        guard: fx.guard,
        queryRunner: fx.runner,
      }),
      oidc: null,
    });
    await fx.pool.query("ALTER TABLE audit_log RENAME TO audit_log_away");
    try {
      const res = await call(app, fx.roles.cookies.admin, "PUT", `/api/workspaces/${ws}/limits`, {
        llmRatePerMinute: 5,
        llmDailyTokenBudget: null,
      });
      expect(res.status).toBe(200);
    } finally {
      await fx.pool.query("ALTER TABLE audit_log_away RENAME TO audit_log");
    }
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "audit entry could not be recorded");
    expect(line).toMatchObject({ level: "error", action: "limits.update", workspaceId: ws, actorKind: "person", error: "42P01" });
  });
});
