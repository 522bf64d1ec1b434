import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../../../lib/config/parse.ts";
import { type DevIdentityProvider, DEMO_WORKSPACE_GROUPS, devIdpEnv, startDevIdentityProvider } from "../../../lib/dev-idp/index.ts";
import { signInThroughDevIdp } from "../../../lib/dev-idp/testing/sign-in.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createWorkspace } from "../../../lib/workspaces/store.ts";
import { createApp } from "../../app.ts";

// returnTo through a real HTTP server: Node refuses to write a header value with DEL or a character
// above U+00FF, so before returnTo was encoded a sign-in started with returnTo=/%7F ended in a raw
// text 500 from the server layer (not even the app's problem+json), and /日本 in a generic 500.

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let idp: DevIdentityProvider;
let server: ServerType;
let origin: string;
let app: Hono | undefined;
const errors: unknown[] = [];

beforeAll(async () => {
  store = await createTestConfigStore();
  await createWorkspace(store.pool, { name: "Demo", ...DEMO_WORKSPACE_GROUPS });
  // The redirect URI must name the server's port, so the server starts first and serves the app once it exists.
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: (req) => app!.fetch(req), hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  idp = await startDevIdentityProvider({
    clientId: "pulseboard-return-to",
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: `${origin}/api/auth/callback`,
  });
  const { config } = parseConfig({
    DATABASE_URL: store.url,
    SESSION_SECRET: randomBytes(32).toString("base64url"),
    ...devIdpEnv(idp),
    READINESS_CHECK_TIMEOUT_MS: "2000",
  });
  const log = createLogger({ silent: true });
  const deps = testAppDeps(config, { pool: store.pool, log: { ...log, error: (msg, fields) => errors.push({ msg, ...fields }) } });
  app = createApp(deps);
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await idp?.stop();
  await store?.close();
});

/** The app as a browser reaches it: over HTTP, redirects not followed. */
const overHttp = { request: (url: string, init?: RequestInit) => fetch(url, { ...init, redirect: "manual" }) };

describe("returnTo through the real server", () => {
  test.each([
    ["/\u007f", "/"],
    ["/dashboards/\u0085x", "/"],
    ["/caf\u00e9", "/caf%C3%A9"],
    ["/\u65e5\u672c?tab=\u05d0", "/%E6%97%A5%E6%9C%AC?tab=%D7%90"],
    ["/\u200f\u202eevil", "/%E2%80%8F%E2%80%AEevil"],
  ])("signing in with returnTo %j lands on %s", async (returnTo, location) => {
    const trace = await signInThroughDevIdp({ app: overHttp, appOrigin: origin, userId: "demo-editor", returnTo });
    expect(trace.callbackResponse.status).toBe(302);
    expect(trace.callbackResponse.headers.get("location")).toBe(location);
    expect(trace.callbackResponse.headers.getSetCookie().some((c) => c.startsWith("svc_session=") && !c.startsWith("svc_session=;"))).toBe(
      true,
    );
    expect(errors).toEqual([]);
  });

  test("a NUL in returnTo is refused at login with a 400 problem naming it", async () => {
    const res = await fetch(`${origin}/api/auth/login?returnTo=/%00`, { redirect: "manual", headers: { accept: "application/json" } });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect((await res.json()).issues).toEqual([{ path: "returnTo", message: expect.stringMatching(/NUL/) }]);
  });
});
