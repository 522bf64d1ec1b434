import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiToken } from "../lib/api-tokens/store.ts";
import { PERSONAS, type Persona } from "../lib/auth/testing/role-table.ts";
import type { Role } from "../lib/auth/types.ts";
import { saveDashboard } from "../lib/dashboards/save.ts";
import type { Source } from "../lib/sources/index.ts";
import { type ApiFixture, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";
import { API_ROLE_CASES, type ApiRoleFixture, type ConsumedQueue } from "./testing/api.security.cases.ts";

// The role table of the JSON API (testing/api.security.cases.ts) again, with API tokens instead of session
// cookies: a viewer, editor and admin token of the fixture workspace, and an admin token of the other workspace
// in the outsider's place. A token must get exactly what a person of its role gets, route by route.

let fx: ApiFixture;
let fixture: ApiRoleFixture;
const bearers = {} as Record<Persona, string | null>;
const queues: Record<ConsumedQueue, string[]> = { putDashboard: [], deleteDashboard: [], putSource: [], deleteSource: [] };

async function newDashboard(workspaceId: string, source: Source): Promise<string> {
  // A custom variable, as in security.test.ts, so that the role table can read its options.
  const spec = dashboardSpec(source.id, { variables: [{ name: "env", type: "custom" as const, values: ["prod", "staging"] }] });
  const d = await saveDashboard({ pool: fx.pool, guard: fx.guard }, { workspaceId, userSub: "seed", spec });
  return d.id;
}

async function token(workspaceId: string, role: Role): Promise<{ id: string; token: string }> {
  const t = await createApiToken(fx.pool, {
    workspaceId,
    name: `table ${role}`,
    role,
    createdBy: "seed",
    expiresAt: null,
    createdAt: new Date(),
  });
  return { id: t.stored.id, token: t.token };
}

beforeAll(async () => {
  // The table sends far more than a minute's worth of requests per token.
  fx = await createApiFixture({ env: { API_TOKEN_RATE_PER_MINUTE: "0" } });
  const ws = fx.roles.workspace.id;
  for (let i = 0; i < PERSONAS.length; i++) {
    queues.putDashboard.push(await newDashboard(ws, fx.source));
    queues.deleteDashboard.push(await newDashboard(ws, fx.source));
    queues.putSource.push((await fx.newSource(`put ${i}`)).id);
    queues.deleteSource.push((await fx.newSource(`delete ${i}`)).id);
  }
  bearers.anonymous = null;
  bearers.viewer = (await token(ws, "viewer")).token;
  bearers.editor = (await token(ws, "editor")).token;
  bearers.admin = (await token(ws, "admin")).token;
  bearers.outsider = (await token(fx.roles.otherWorkspace.id, "admin")).token;
  fixture = {
    ...fx.roles,
    api: fx,
    dashboardId: await newDashboard(ws, fx.source),
    otherDashboardId: await newDashboard(fx.roles.otherWorkspace.id, fx.otherSource),
    tokenId: (await token(ws, "viewer")).id,
    take(queue) {
      const id = queues[queue].shift();
      if (!id) throw new Error(`queue ${queue} is empty`);
      return id;
    },
  };
});
afterAll(() => fx.close());

describe("role table with API tokens", () => {
  const rows = API_ROLE_CASES.flatMap((rc) =>
    PERSONAS.map((persona) => [`${rc.name ?? rc.method} as a ${persona} token → ${rc.expect[persona]}`, rc, persona] as const),
  );
  test.each(rows)("%s", async (_label, rc, persona) => {
    const path = typeof rc.path === "function" ? rc.path(fixture) : rc.path;
    const headers: Record<string, string> = { accept: "application/json" };
    const bearer = bearers[persona];
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    let body: string | undefined;
    if (rc.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(typeof rc.body === "function" ? rc.body(fixture, persona) : rc.body);
    }
    const res = await fx.app.request(path, { method: rc.method, headers, body });
    const text = await res.text();
    expect(res.status, text.slice(0, 300)).toBe(rc.expect[persona]);
  });
});
