// The revocation routes' limits under random sequences (fast-check), through the real routes of the OpenAPI
// document on the real config store with an injected clock:
// - rate: no caller ever gets more revocations accepted than the token bucket allows (SESSION_REVOKE_RATE_PER_MINUTE
//   at once, then that many per minute), a refusal is 429 with Retry-After and records nothing, coming back after
//   Retry-After succeeds, and callers do not share a bucket;
// - cap: the revocations kept never exceed SESSION_REVOCATIONS_MAX (a person's own sign out everywhere aside),
//   refusals come only at the cap, and once the entries expire the next write sweeps their rows and makes room.
import fc from "fast-check";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createRevocationSet, type RevocationSet } from "../../../lib/auth/revocations.ts";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { type RoleFixture, seedRoleFixture } from "../../../lib/auth/testing/role-table.ts";
import { parseConfig } from "../../../lib/config/parse.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createApp } from "../../app.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import type { OpenApiDoc } from "../../testing/openapi-doc.ts";

const SEED = 20261127;
const SECRET = "revocation-limits-secret-0123456789abcdef";
const PLATFORM = "platform-admins";
const TABLES = ["session_revocations", "user_session_revocations", "workspace_session_revocations"];

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let fixture: RoleFixture;
/** The routes that revoke someone else's sessions, read from the app's own OpenAPI document. */
let adminRoutes: string[];
const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 24 * 3600 });

beforeAll(async () => {
  store = await createTestConfigStore();
  fixture = await seedRoleFixture(store.pool, sessions, "svc_session");
  const doc = (await (await appWith({}, () => Date.now()).app.request("/api/openapi.json")).json()) as OpenApiDoc;
  adminRoutes = Object.keys(doc.paths).filter((p) => p.endsWith("/sessions/revoke") && p !== "/api/auth/sessions/revoke");
});
afterAll(() => store.close());

function appWith(env: Record<string, string>, now: () => number): { app: Hono; revocations: RevocationSet } {
  const config = parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, PLATFORM_ADMIN_GROUP: PLATFORM, ...env }).config;
  const revocations = createRevocationSet({ now, loaded: true });
  const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }), now });
  return { app: createApp({ ...deps, oidc: null, revocations }), revocations };
}

const pathOf = (route: string) => route.replace("{workspaceId}", fixture.workspace.id);

let run = 0;
/**
 * Callers who may use every revocation route (a platform admin who is also an admin of the fixture's workspace),
 * signed in now by the app's clock with the app's session lifetime.
 */
async function callers(n: number, now: () => number, ttlSeconds = 43_200) {
  run++;
  const tokens = createSessionTokens({ secret: SECRET, ttlSeconds, now });
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const sub = `limits-caller-${run}-${i}`;
      return { sub, cookie: `svc_session=${await tokens.mint({ sub, groups: [PLATFORM, fixture.workspace.admin_group] })}` };
    }),
  );
}

const post = (app: Hono, path: string, cookie: string, body: unknown) =>
  app.request(path, { method: "POST", headers: { cookie, "content-type": "application/json" }, body: JSON.stringify(body) });

async function rows(): Promise<number> {
  let n = 0;
  for (const t of TABLES) n += (await store.pool.query(`SELECT count(*)::int AS n FROM ${t}`)).rows[0].n;
  return n;
}

async function clear(): Promise<void> {
  await store.pool.query(`TRUNCATE ${TABLES.join(", ")}`);
}

describe("revocation limits under random sequences", () => {
  test("the routes under test are the document's", () => {
    expect(adminRoutes.sort()).toEqual(["/api/admin/sessions/revoke", "/api/workspaces/{workspaceId}/sessions/revoke"]);
  });

  test("rate: per caller, never more accepted than the bucket allows; a refusal records nothing and says when to come back", async () => {
    const stepArb = fc.record({
      caller: fc.integer({ min: 0, max: 2 }),
      route: fc.integer({ min: 0, max: 1 }),
      advanceMs: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 45_000 }) }),
    });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(stepArb, { minLength: 5, maxLength: 25 }), async (rate, steps) => {
        await clear();
        let t = Date.now();
        const { app } = appWith({ SESSION_REVOKE_RATE_PER_MINUTE: String(rate) }, () => t);
        const who = await callers(3, () => t);
        const accepted: number[][] = [[], [], []];
        const lastRefusal: (number | null)[] = [null, null, null];
        let victims = 0;
        for (const s of steps) {
          t += s.advanceMs;
          const before = await rows();
          const res = await post(app, pathOf(adminRoutes[s.route]!), who[s.caller]!.cookie, { sub: `victim-${run}-${victims++}` });
          if (res.status === 200) {
            accepted[s.caller]!.push(t);
            lastRefusal[s.caller] = null;
          } else {
            expect(res.status).toBe(429);
            expect((await res.json()).code).toBe("rate_limited");
            const retry = Number(res.headers.get("retry-after"));
            expect(Number.isInteger(retry) && retry >= 1 && retry <= Math.ceil(60 / rate)).toBe(true);
            expect(await rows()).toBe(before);
            lastRefusal[s.caller] = retry;
            // A caller's first revocation is never refused: buckets are not shared.
            expect(accepted[s.caller]!.length).toBeGreaterThan(0);
          }
          // The token bucket's bound over every window of this caller's accepted revocations.
          const times = accepted[s.caller]!;
          for (let i = 0; i < times.length; i++) {
            for (let j = i; j < times.length; j++) {
              expect(j - i + 1).toBeLessThanOrEqual(rate + Math.floor(((times[j]! - times[i]!) * rate) / 60_000));
            }
          }
        }
        // Burst: a fresh caller's first `rate` revocations at one instant are all accepted, the next is not.
        const [fresh] = await callers(1, () => t);
        for (let i = 0; i < rate; i++)
          expect((await post(app, pathOf(adminRoutes[0]!), fresh!.cookie, { sub: `burst-${run}-${i}` })).status).toBe(200);
        expect((await post(app, pathOf(adminRoutes[0]!), fresh!.cookie, { sub: `burst-${run}-x` })).status).toBe(429);
        // Coming back after Retry-After succeeds.
        for (const [i, retry] of lastRefusal.entries()) {
          if (retry === null) continue;
          t += retry * 1000;
          expect((await post(app, pathOf(adminRoutes[0]!), who[i]!.cookie, { sub: `after-${run}-${i}` })).status).toBe(200);
        }
      }),
      { seed: SEED, numRuns: 20 },
    );
  }, 120_000);

  test("cap: kept revocations never exceed SESSION_REVOCATIONS_MAX, refusals only at it, and expired ones are swept to make room", async () => {
    const MAX = 100;
    const TTL_SECONDS = 60;
    const stepArb = fc.record({
      // Repeats of a sub replace its entry; new subs add one.
      sub: fc.integer({ min: 0, max: 140 }),
      kind: fc.constantFrom("workspace", "everywhere", "self"),
    });
    let refusedInAll = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 100, maxLength: 160 }), async (steps) => {
        await clear();
        let t = Date.now();
        const { app, revocations } = appWith(
          { SESSION_REVOCATIONS_MAX: String(MAX), SESSION_REVOKE_RATE_PER_MINUTE: "100000", SESSION_TTL_SECONDS: String(TTL_SECONDS) },
          () => t,
        );
        const [caller] = await callers(1, () => t, TTL_SECONDS);
        const own = createSessionTokens({ secret: SECRET, ttlSeconds: TTL_SECONDS, now: () => t });
        let selves = 0;
        let refused = 0;
        for (const s of steps) {
          const sizeBefore = revocations.size;
          let res: Response;
          if (s.kind === "self") {
            const self = `svc_session=${await own.mint({ sub: `self-${run}-${selves++}`, groups: [] })}`;
            res = await post(app, "/api/auth/sessions/revoke", self, {});
            // A person's own sign out everywhere is never refused.
            expect(res.status).toBe(200);
          } else {
            const route = s.kind === "workspace" ? adminRoutes.find((r) => r.includes("{workspaceId}"))! : "/api/admin/sessions/revoke";
            res = await post(app, pathOf(route), caller!.cookie, { sub: `capped-${run}-${s.sub}` });
            if (res.status !== 200) {
              expect(res.status).toBe(429);
              expect((await res.json()).detail).toContain("SESSION_REVOCATIONS_MAX");
              expect(sizeBefore).toBeGreaterThanOrEqual(MAX);
              expect(revocations.size).toBe(sizeBefore);
              refused++;
            }
          }
          expect(revocations.size).toBeLessThanOrEqual(MAX + selves);
        }
        // The store keeps what memory keeps (a repeat replaces its row, as it replaces its entry).
        expect(await rows()).toBe(revocations.size);
        // Once every entry's sessions would have expired, the next revocation is accepted and its write sweeps the
        // expired rows of its table.
        t += TTL_SECONDS * 1000 + 1;
        const [later] = await callers(1, () => t, TTL_SECONDS);
        const res = await post(app, pathOf("/api/admin/sessions/revoke"), later!.cookie, { sub: `after-expiry-${run}` });
        expect(res.status).toBe(200);
        expect(revocations.size).toBe(1);
        const { rows: left } = await store.pool.query("SELECT sub FROM user_session_revocations");
        expect(left).toEqual([{ sub: `after-expiry-${run}` }]);
        refusedInAll += refused;
      }),
      // Each run is some 150 requests on the real store: few runs, and no shrinking of a failure's long sequence.
      { seed: SEED, numRuns: 6, endOnFailure: true },
    );
    // The sequences did reach the cap.
    expect(refusedInAll).toBeGreaterThan(0);
  }, 180_000);
});
