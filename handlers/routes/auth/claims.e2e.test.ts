// Claims refused at sign-in, end to end: the embedded development identity provider signs ID tokens for accounts
// whose sub, name, email or groups carry a NUL or ill-formed Unicode; the callback answers a 401 problem naming the
// claim (never its value, never a 500), sets no session cookie, writes nothing, and the same browser is still
// signed out. A well-formed account signs in as usual through the same provider.
import { randomBytes } from "node:crypto";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../../../lib/config/parse.ts";
import {
  DEMO_WORKSPACE_GROUPS,
  type DevIdentityProvider,
  type DevUser,
  devIdpEnv,
  startDevIdentityProvider,
} from "../../../lib/dev-idp/index.ts";
import { signInThroughDevIdp } from "../../../lib/dev-idp/testing/sign-in.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createWorkspace } from "../../../lib/workspaces/store.ts";
import { createApp } from "../../app.ts";
import { storeSnapshot } from "../../testing/store-snapshot.ts";
import { testAppDeps } from "../../testing/app-deps.ts";

const APP = "http://pulseboard.test";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let idp: DevIdentityProvider;
let app: Hono;
const logs: Record<string, unknown>[] = [];

const good: DevUser = { id: "claims-good", name: "Good", email: "good@x.test", groups: [DEMO_WORKSPACE_GROUPS.viewer_group] };
/** Hostile text, by what is wrong with it: the forms a directory or a hostile provider could send. */
const HOSTILE: [string, string][] = [
  ["a NUL character", "\u0000"],
  ["a NUL character", "ab\u0000cd"],
  ["a NUL character", "demo-viewers\u0000"],
  ["invalid Unicode", "\ud800"],
  ["invalid Unicode", "x\udc00y"],
  ["invalid Unicode", "\udc00\ud800"],
];
/** One account per claim and hostile value. The account id is the `sub`; a form field cannot carry a lone surrogate. */
const CASES: { claim: string; problem: string; user: DevUser }[] = HOSTILE.flatMap(([problem, value], i) => {
  const base = { ...good, id: `claims-${i}` };
  const cases = [
    { claim: "name", problem, user: { ...base, id: `${base.id}-name`, name: value } },
    { claim: "email", problem, user: { ...base, id: `${base.id}-email`, email: value } },
    { claim: "groups", problem, user: { ...base, id: `${base.id}-groups`, groups: [DEMO_WORKSPACE_GROUPS.viewer_group, value] } },
  ];
  if (problem === "a NUL character") cases.push({ claim: "sub", problem, user: { ...base, id: `${base.id}-sub${value}` } });
  return cases;
});

beforeAll(async () => {
  store = await createTestConfigStore();
  await createWorkspace(store.pool, { name: "Demo", ...DEMO_WORKSPACE_GROUPS });
  idp = await startDevIdentityProvider({
    clientId: "pulseboard-claims",
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: `${APP}/api/auth/callback`,
    users: [good, ...CASES.map((c) => c.user)],
  });
  const { config } = parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: randomBytes(32).toString("base64url"), ...devIdpEnv(idp) });
  const log = createLogger({ write: (line: string) => logs.push(JSON.parse(line)) });
  app = createApp(testAppDeps(config, { pool: store.pool, log }));
});

afterAll(async () => {
  await idp?.stop();
  await store?.close();
});

describe("ID-token claims with a NUL or ill-formed Unicode are refused at sign-in", () => {
  test("a well-formed account signs in through the same provider", async () => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: good.id });
    expect(trace.callbackResponse.status).toBe(302);
    const me = await app.request(`${APP}/api/me`, { headers: { cookie: trace.appJar.header() } });
    expect((await me.json()).sub).toBe(good.id);
  });

  test.each(CASES.map((c) => [c.claim, c.problem, JSON.stringify(c.user.id), c] as const))(
    "%s with %s (account %s): 401 naming the claim, no session, nothing written",
    async (_claim, _problem, _id, c) => {
      const before = await storeSnapshot(store.pool);
      const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: c.user.id });
      const res = trace.callbackResponse;
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const body = await res.json();
      expect(body).toMatchObject({ code: "unauthenticated", reason: "invalid_claim", claim: c.claim });
      expect(body.detail).toBe(
        `Sign-in failed: the identity provider's ${c.claim} claim contains ${c.problem}, which this service does not accept. Ask the identity provider's administrator to correct the account.`,
      );
      // No session: no cookie was set, the login transaction is spent, and the browser is signed out.
      expect(res.headers.getSetCookie().some((line) => line.startsWith("svc_session=") && !line.startsWith("svc_session=;"))).toBe(false);
      expect(trace.appJar.get("svc_session")).toBeUndefined();
      expect((await app.request(`${APP}/api/me`, { headers: { cookie: trace.appJar.header() } })).status).toBe(401);
      expect(await storeSnapshot(store.pool)).toEqual(before);
      // The log names the code and reason only.
      const line = logs.findLast((l) => l.msg === "sign-in callback failed");
      expect(line).toMatchObject({ code: "unauthenticated", reason: "invalid_claim" });
      expect(JSON.stringify(logs)).not.toContain(JSON.stringify(c.user.id).slice(1, -1));
    },
  );

  test("a browser asking for HTML gets the error page, with the same status", async () => {
    const c = CASES.find((x) => x.claim === "groups")!;
    const trace = await signInThroughDevIdp({
      app: { request: (input, init) => app.request(input, { ...init, headers: { ...(init?.headers ?? {}), accept: "text/html" } }) },
      appOrigin: APP,
      userId: c.user.id,
    });
    expect(trace.callbackResponse.status).toBe(401);
    expect(trace.callbackResponse.headers.get("content-type")).toContain("text/html");
    expect(await trace.callbackResponse.text()).toContain("groups claim contains");
  });
});
