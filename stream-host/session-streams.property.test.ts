// STREAMS_PER_SESSION_MAX under random sequences of opens and closes by several sessions (fast-check), through the
// real stream route on the real config store: a stream is admitted exactly when its session holds fewer than the cap,
// a refusal is 429 `rate_limited` with Retry-After naming the variable, a closed stream gives its place back, and
// other sessions are never affected.
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { SESSION_SECRET, createTestHost, flush, panel, seedDashboard, spec } from "./testing/fixture.ts";
import { webStreamReader } from "./testing/sse-parse.ts";

const SEED = 20261127;
const SESSIONS = 3;

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let seeded: Awaited<ReturnType<typeof seedDashboard>>;
beforeAll(async () => {
  store = await createTestConfigStore();
  seeded = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
});
afterAll(() => store.close());

type Step = { kind: "open"; session: number } | { kind: "close"; i: number };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("open" as const), session: fc.integer({ min: 0, max: SESSIONS - 1 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("close" as const), i: fc.nat() }) },
);

test("a stream is admitted exactly while its session holds fewer than STREAMS_PER_SESSION_MAX; closing gives the place back", async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(step, { minLength: 5, maxLength: 30 }), async (max, steps) => {
      const t = createTestHost({ url: store.url, pool: store.pool, env: { STREAMS_PER_SESSION_MAX: String(max) } });
      const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
      // Sessions of one person: the cap is per session, not per person.
      const cookies = await Promise.all(
        Array.from(
          { length: SESSIONS },
          async () => `svc_session=${await tokens.mint({ sub: "tabs", groups: [seeded.workspace.viewer_group] })}`,
        ),
      );
      const open: { session: number; reader: ReturnType<typeof webStreamReader> }[] = [];
      const held = (s: number) => open.filter((o) => o.session === s).length;
      try {
        for (const st of steps) {
          if (st.kind === "open") {
            const res = await t.app.request(`/api/dashboards/${seeded.dashboardId}/stream`, { headers: { cookie: cookies[st.session]! } });
            if (held(st.session) < max) {
              expect(res.status).toBe(200);
              const reader = webStreamReader(res.body!);
              expect((await reader.next())?.event).toBe("snapshot");
              open.push({ session: st.session, reader });
            } else {
              expect(res.status).toBe(429);
              expect(res.headers.get("retry-after")).toBe("5");
              const body = await res.json();
              expect(body.code).toBe("rate_limited");
              expect(body.detail).toContain("STREAMS_PER_SESSION_MAX");
            }
          } else if (open.length > 0) {
            const [gone] = open.splice(st.i % open.length, 1);
            await gone!.reader.cancel();
            await flush();
          }
          expect(t.host.hub.subscribersOf(seeded.dashboardId)).toBe(open.length);
        }
      } finally {
        for (const o of open) await o.reader.cancel();
        await flush();
        await t.host.beginDrain();
      }
    }),
    { seed: SEED, numRuns: 25 },
  );
}, 120_000);
