import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTokenAuthenticator } from "../../../lib/api-tokens/authenticate.ts";
import { createApp } from "../../app.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "../../testing/api-fixture.ts";
import { testAppDeps } from "../../testing/app-deps.ts";

// API tokens end to end through the handlers app: created by an admin, shown once, stored hashed, accepted as
// `Authorization: Bearer` with the token's role in its workspace only, rate limited, refused with a clear 401
// when malformed, unknown, expired or revoked (on every instance at once).

let clock = Date.now();
let fx: ApiFixture;
let tokensPath: string;

beforeAll(async () => {
  fx = await createApiFixture({ now: () => clock, env: { API_TOKEN_RATE_PER_MINUTE: "5" } });
  tokensPath = `/api/workspaces/${fx.roles.workspace.id}/tokens`;
});
afterAll(() => fx.close());

const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra });

async function newToken(role: "viewer" | "editor" | "admin", body: Record<string, unknown> = {}) {
  const res = await call(fx.app, fx.roles.cookies.admin, "POST", tokensPath, { name: `ci ${role}`, role, ...body });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; token: string; prefix: string; expiresAt: string | null };
}

/** Moves the clock past every token bucket's refill, so rate limits of earlier tests do not carry over. */
const refill = () => {
  clock += 60_000;
};

describe("creating and listing", () => {
  test("an admin creates a token: 201 with the token shown once, stored only as a hash", async () => {
    const created = await newToken("editor", { expiresInDays: 30 });
    expect(created.token).toMatch(/^pbt_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(created.id).toBe(`tok_${created.prefix}`);
    expect(created.expiresAt).toBe(new Date(clock + 30 * 86_400_000).toISOString());

    const list = await call(fx.app, fx.roles.cookies.admin, "GET", tokensPath);
    expect(list.status).toBe(200);
    const text = await list.text();
    expect(text).not.toContain(created.token);
    expect(text).not.toContain(created.token.slice(18));
    expect(JSON.parse(text).tokens).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: created.id, role: "editor", revokedAt: null })]),
    );

    const { rows } = await fx.pool.query("SELECT * FROM api_tokens WHERE id = $1", [created.id]);
    expect(JSON.stringify(rows)).not.toContain(created.token.slice(18));
  });

  test.each([
    [{ name: "", role: "viewer" }, "name"],
    [{ name: "x", role: "owner" }, "role"],
    [{ name: "x", role: "viewer", expiresInDays: 0 }, "expiresInDays"],
    [{ name: "x", role: "viewer", expiresInDays: 100_000 }, "expiresInDays"],
    [{ name: "x", role: "viewer", secret: "mine" }, ""],
  ])("%j is a 400 naming %s", async (body, field) => {
    const res = await call(fx.app, fx.roles.cookies.admin, "POST", tokensPath, body);
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem.code).toBe("validation_failed");
    if (field) expect(problem.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
  });

  test("an editor can neither create nor list tokens", async () => {
    expect((await call(fx.app, fx.roles.cookies.editor, "POST", tokensPath, { name: "x", role: "viewer" })).status).toBe(403);
    expect((await call(fx.app, fx.roles.cookies.editor, "GET", tokensPath)).status).toBe(403);
  });
});

describe("a token is an identity with its role, in its workspace only", () => {
  test("an editor token saves a dashboard, and is recorded as the one who did", async () => {
    refill();
    const t = await newToken("editor");
    const res = await call(
      fx.app,
      null,
      "POST",
      `/api/workspaces/${fx.roles.workspace.id}/dashboards`,
      { spec: dashboardSpec(fx.source.id) },
      bearer(t.token),
    );
    expect(res.status).toBe(201);
    const saved = await res.json();
    expect(saved.createdBy).toBe(`token:${t.id}`);
  });

  test("a viewer token reads but may not write (403 naming its role)", async () => {
    refill();
    const t = await newToken("viewer");
    const list = await call(fx.app, null, "GET", `/api/workspaces/${fx.roles.workspace.id}/dashboards`, undefined, bearer(t.token));
    expect(list.status).toBe(200);
    const write = await call(
      fx.app,
      null,
      "POST",
      `/api/workspaces/${fx.roles.workspace.id}/dashboards`,
      { spec: dashboardSpec(fx.source.id) },
      bearer(t.token),
    );
    expect(write.status).toBe(403);
    expect(await write.json()).toMatchObject({ code: "forbidden", requiredRole: "editor", role: "viewer" });
  });

  test("an admin token of one workspace finds nothing in another (404), whatever its groups would say", async () => {
    refill();
    const t = await newToken("admin");
    const other = fx.roles.otherWorkspace.id;
    for (const path of [`/api/workspaces/${other}/dashboards`, `/api/workspaces/${other}/tokens`, `/api/sources/${fx.otherSource.id}`]) {
      expect((await call(fx.app, null, "GET", path, undefined, bearer(t.token))).status).toBe(404);
    }
    const me = await (await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token))).json();
    expect(me).toMatchObject({ sub: `token:${t.id}`, groups: [], workspaces: [{ id: fx.roles.workspace.id, role: "admin" }] });
    const platform = await call(fx.app, null, "GET", "/api/admin/workspaces", undefined, bearer(t.token));
    expect(platform.status).toBe(403);
  });

  test("a request with a bearer token is judged by it alone: an admin cookie beside a bad token is still 401", async () => {
    const res = await call(fx.app, fx.roles.cookies.admin, "GET", tokensPath, undefined, bearer("pbt_000000000000_nope"));
    expect(res.status).toBe(401);
  });

  test("cross-site refusal does not apply to bearer requests (no browser sends one cross-site), and still applies to cookies", async () => {
    refill();
    const t = await newToken("editor");
    const path = `/api/workspaces/${fx.roles.workspace.id}/dashboards`;
    const evil = { origin: "https://evil.example", "sec-fetch-site": "cross-site" };
    const withToken = await call(fx.app, null, "POST", path, { spec: dashboardSpec(fx.source.id) }, bearer(t.token, evil));
    expect(withToken.status).toBe(201);
    const withCookie = await call(fx.app, fx.roles.cookies.editor, "POST", path, { spec: dashboardSpec(fx.source.id) }, evil);
    expect(withCookie.status).toBe(403);
  });

  test("last use is recorded", async () => {
    refill();
    const t = await newToken("viewer");
    await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token));
    const list = (await (await call(fx.app, fx.roles.cookies.admin, "GET", tokensPath)).json()).tokens as {
      id: string;
      lastUsedAt: string;
    }[];
    expect(list.find((x) => x.id === t.id)?.lastUsedAt).toBe(new Date(clock).toISOString());
  });
});

describe("refusals", () => {
  test.each([
    ["empty", ""],
    ["the scheme alone", "pbt_"],
    ["10,000 characters", "pbt_".padEnd(10_000, "a")],
    ["a session-like JWT", "eyJhbGciOiJIUzI1NiJ9.e30.sig"],
    ["a well-formed token nobody issued", `pbt_0123456789ab_${"A".repeat(43)}`],
    ["SQL", "pbt_' OR 1=1 --"],
    ["latin-1 letters", "pbt_\u00fc\u00e9\u00e0"],
  ])("%s: 401 with a clear problem, never a 5xx", async (_label, token) => {
    const res = await call(fx.app, null, "GET", "/api/me", undefined, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate") ?? "").toMatch(/^Bearer/);
    const problem = await res.json();
    expect(problem.code).toBe("unauthenticated");
    expect(problem.detail).toMatch(/^The API token was refused: /);
    expect(problem.detail).not.toContain(token.slice(4, 40) || "\u0000");
  });

  test("a token with a NUL, or 10,000 characters, is refused by shape before any lookup", async () => {
    const auth = createTokenAuthenticator({ pool: fx.pool, ratePerMinute: () => 0 });
    await expect(auth.authenticate(`pbt_0123456789ab_${"A".repeat(42)}\u0000`)).rejects.toMatchObject({
      code: "unauthenticated",
      detail: expect.stringMatching(/control character/),
    });
    await expect(auth.authenticate("x".repeat(10_000))).rejects.toMatchObject({
      detail: expect.stringMatching(/60 characters; this one has 10000/),
    });
  });

  test("any header value at all is a 401 or a 200, never a 5xx (property)", async () => {
    refill();
    const t = await newToken("viewer");
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 120 }), fc.constant(t.token.slice(0, 59)), fc.constant(`${t.token}x`)),
        async (s) => {
          const value = `Bearer ${s}`.replace(/[\r\n\u0000]/g, "");
          const res = await call(fx.app, null, "GET", "/api/me", undefined, { authorization: value });
          expect(res.status).toBe(401);
        },
      ),
      { numRuns: 60 },
    );
  });

  test("the right prefix with a wrong secret is refused", async () => {
    const t = await newToken("viewer");
    const forged = `${t.token.slice(0, 18)}${"B".repeat(42)}${t.token.endsWith("B") ? "C" : "B"}`;
    const res = await call(fx.app, null, "GET", "/api/me", undefined, bearer(forged));
    expect(res.status).toBe(401);
  });

  test("an expired token is refused saying when it expired", async () => {
    refill();
    const t = await newToken("viewer", { expiresInDays: 1 });
    expect((await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token))).status).toBe(200);
    const was = clock;
    clock += 86_400_000;
    const res = await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token));
    // Back to the present, where the fixture's session cookies (one hour) are still valid.
    clock = was;
    expect(res.status).toBe(401);
    expect((await res.json()).detail).toBe(`The API token was refused: it expired at ${t.expiresAt}.`);
  });

  test("over API_TOKEN_RATE_PER_MINUTE a token gets 429 with Retry-After; the bucket refills with time", async () => {
    refill();
    const t = await newToken("viewer");
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token));
    expect(limited.headers.get("retry-after")).toBe("12");
    expect((await limited.json()).code).toBe("rate_limited");
    // Another token is not limited by this one's use.
    const other = await newToken("viewer");
    expect((await call(fx.app, null, "GET", "/api/me", undefined, bearer(other.token))).status).toBe(200);
    clock += 12_000;
    expect((await call(fx.app, null, "GET", "/api/me", undefined, bearer(t.token))).status).toBe(200);
  });
});

describe("revocation", () => {
  test("a revoked token fails at once, on this instance and on another that shares the config store", async () => {
    refill();
    const t = await newToken("viewer");
    // A second handlers instance: its own revocation set, which never hears of this revocation.
    const other = createApp({
      ...testAppDeps(fx.config, {
        pool: fx.pool,
        log: createLogger({ silent: true }),
        now: () => clock,
        guard: fx.guard,
        queryRunner: fx.runner,
      }),
      oidc: null,
    });
    expect((await call(other, null, "GET", "/api/me", undefined, bearer(t.token))).status).toBe(200);

    const del = await call(fx.app, fx.roles.cookies.admin, "DELETE", `${tokensPath}/${t.id}`);
    expect(del.status).toBe(200);
    expect((await del.json()).revokedAt).toBe(new Date(clock).toISOString());
    // The revocation every process hears of (NOTIFY), which ends the token's open streams (stream-host/app.tokens.test.ts).
    const { rows } = await fx.pool.query("SELECT sub FROM session_revocations WHERE session_id = $1", [t.id]);
    expect(rows).toEqual([{ sub: `token:${t.id}` }]);

    for (const app of [fx.app, other]) {
      const res = await call(app, null, "GET", "/api/me", undefined, bearer(t.token));
      expect(res.status).toBe(401);
      expect((await res.json()).detail).toBe("The API token was refused: it was revoked.");
    }
    // Revoking again answers the same; a token of another workspace is not found.
    expect((await call(fx.app, fx.roles.cookies.admin, "DELETE", `${tokensPath}/${t.id}`)).status).toBe(200);
    expect(
      (await call(fx.app, fx.roles.cookies.outsider, "DELETE", `/api/workspaces/${fx.roles.otherWorkspace.id}/tokens/${t.id}`)).status,
    ).toBe(404);
  });

  test("a token may revoke itself when it is an admin token; it then fails on its next request", async () => {
    refill();
    const t = await newToken("admin");
    expect((await call(fx.app, null, "DELETE", `${tokensPath}/${t.id}`, undefined, bearer(t.token))).status).toBe(200);
    expect((await call(fx.app, null, "GET", tokensPath, undefined, bearer(t.token))).status).toBe(401);
  });
});
