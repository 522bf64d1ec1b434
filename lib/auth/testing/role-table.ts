import type { Hono } from "hono";
import type pg from "pg";
import { test } from "vitest";
import { createWorkspace, type Workspace } from "../../workspaces/store.ts";
import type { SessionTokens } from "../session.ts";
import type { Role, SessionUser } from "../types.ts";

/**
 * Test helpers for the role table (used by every route's security test). Test-only: nothing in the
 * app imports this file.
 */
export const PERSONAS = ["anonymous", "viewer", "editor", "admin", "outsider"] as const;
/** anonymous: no cookie; viewer/editor/admin: that role in the fixture workspace; outsider: admin of another workspace only. */
export type Persona = (typeof PERSONAS)[number];
export type Expectation = Record<Persona, number>;

export interface RoleFixture {
  workspace: Workspace;
  otherWorkspace: Workspace;
  cookieName: string;
  users: Record<Exclude<Persona, "anonymous">, SessionUser>;
  /** `Cookie` header value per persona; null for anonymous. */
  cookies: Record<Persona, string | null>;
  /** A `Cookie` header value with a new session for `user`. */
  mintCookie(user: SessionUser): Promise<string>;
}

/** Seeds a workspace with one group per role, a second workspace, and mints a session for each persona. */
export async function seedRoleFixture(pool: pg.Pool, sessions: Pick<SessionTokens, "mint">, cookieName: string): Promise<RoleFixture> {
  const suffix = Math.random().toString(36).slice(2, 8);
  const workspace = await createWorkspace(pool, {
    name: `Role table ${suffix}`,
    viewer_group: `rt-${suffix}-viewers`,
    editor_group: `rt-${suffix}-editors`,
    admin_group: `rt-${suffix}-admins`,
  });
  const otherWorkspace = await createWorkspace(pool, {
    name: `Other ${suffix}`,
    viewer_group: `other-${suffix}-viewers`,
    editor_group: `other-${suffix}-editors`,
    admin_group: `other-${suffix}-admins`,
  });
  const users = {
    viewer: { sub: `viewer-${suffix}`, name: "Vera Viewer", groups: [workspace.viewer_group] },
    editor: { sub: `editor-${suffix}`, name: "Ed Editor", groups: [workspace.editor_group] },
    admin: { sub: `admin-${suffix}`, name: "Ada Admin", groups: [workspace.admin_group] },
    outsider: { sub: `outsider-${suffix}`, name: "Otto Outsider", groups: [otherWorkspace.admin_group] },
  };
  const cookie = async (u: SessionUser) => `${cookieName}=${await sessions.mint(u)}`;
  return {
    workspace,
    otherWorkspace,
    cookieName,
    users,
    mintCookie: cookie,
    cookies: {
      anonymous: null,
      viewer: await cookie(users.viewer),
      editor: await cookie(users.editor),
      admin: await cookie(users.admin),
      outsider: await cookie(users.outsider),
    },
  };
}

/**
 * Expected statuses for a workspace route that needs `min`: anonymous 401, a member of another
 * workspace 404 (existence is not leaked), a weaker role 403, `min` and above `ok`.
 */
export function expectFor(min: Role, ok = 200): Expectation {
  const rank = { viewer: 0, editor: 1, admin: 2 } as const;
  return {
    anonymous: 401,
    outsider: 404,
    viewer: rank.viewer >= rank[min] ? ok : 403,
    editor: rank.editor >= rank[min] ? ok : 403,
    admin: ok,
  };
}

/** Expected statuses for a route any signed-in user may call. */
export function expectSignedIn(ok = 200): Expectation {
  return { anonymous: 401, viewer: ok, editor: ok, admin: ok, outsider: ok };
}

/**
 * One route of a role table. `F` is the fixture the table's paths and bodies are built from: the role
 * fixture, or one extended with the resources a table seeds (so a case list can be a plain constant in
 * a non-test module that other tests, such as the route coverage check, import).
 */
export interface RoleCase<F extends RoleFixture = RoleFixture> {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** A path, or one built from the fixture (e.g. `(f) => \`/api/workspaces/${f.workspace.id}/dashboards\``). */
  path: string | ((f: F) => string);
  /** JSON body; a function gets the fixture and may build a fresh body per request. */
  body?: Record<string, unknown> | unknown[] | string | number | boolean | null | ((f: F, persona: Persona) => unknown);
  expect: Expectation;
  /** Shown in the test name; defaults to the method and path. */
  name?: string;
  /**
   * The route ends the sessions it is called with (logout, sign out everywhere): each request is sent
   * with a new session of a user of its own who has the persona's groups, so the fixture's cookies
   * stay valid for the cases after it.
   */
  spendsSession?: boolean;
}

let spentSessions = 0;

/** Sends `rc` to the app as `persona` (a same-origin request: no Origin header, like a script). */
export async function requestAs<F extends RoleFixture>(
  app: Pick<Hono, "request">,
  f: F,
  persona: Persona,
  rc: RoleCase<F>,
): Promise<Response> {
  const path = typeof rc.path === "function" ? rc.path(f) : rc.path;
  const headers: Record<string, string> = { accept: "application/json" };
  const cookie =
    rc.spendsSession && persona !== "anonymous"
      ? await f.mintCookie({ ...f.users[persona], sub: `${f.users[persona].sub}-spent-${++spentSessions}` })
      : f.cookies[persona];
  if (cookie) headers.cookie = cookie;
  let body: string | undefined;
  if (rc.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(typeof rc.body === "function" ? rc.body(f, persona) : rc.body);
  }
  return app.request(path, { method: rc.method, headers, body });
}

/**
 * Registers one test per route and persona. `setup` is called lazily inside each test (after
 * beforeAll), so it may return the app and fixture the file built.
 */
export function roleTable<F extends RoleFixture>(cases: RoleCase<F>[], setup: () => { app: Pick<Hono, "request">; fixture: F }): void {
  const rows = cases.flatMap((rc) =>
    PERSONAS.map(
      (persona) =>
        [
          `${rc.name ?? `${rc.method} ${typeof rc.path === "string" ? rc.path : rc.path.toString().replace(/^\(?\w*\)?\s*=>\s*/, "")}`} as ${persona} → ${rc.expect[persona]}`,
          rc,
          persona,
        ] as const,
    ),
  );
  test.each(rows)("%s", async (_label, rc, persona) => {
    const { app, fixture } = setup();
    const res = await requestAs(app, fixture, persona, rc);
    const text = await res.text();
    if (res.status !== rc.expect[persona]) {
      throw new Error(`${rc.method} as ${persona}: expected ${rc.expect[persona]}, got ${res.status}: ${text.slice(0, 300)}`);
    }
    if (res.status >= 400 && !(res.headers.get("content-type") ?? "").includes("application/problem+json")) {
      throw new Error(`${rc.method} as ${persona}: error ${res.status} is not problem+json`);
    }
  });
}
