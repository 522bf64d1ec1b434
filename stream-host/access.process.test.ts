// Streams end with access across processes: a real handlers process and two real stream host processes on one
// config store. A platform admin changes a workspace's viewer group, a workspace admin revokes a member's access,
// or a platform admin force-deletes a workspace, each through the handlers' API; the viewer's open streams on both
// stream hosts end with a terminal frame (`forbidden`, or the dashboard's deletion when the workspace went with its
// dashboards) within 5 s of the answer (the change reaches each host by the config store's NOTIFY, never through
// the process that made it), and a reconnect is refused. Streams of
// another workspace on the same hosts keep their panels coming.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { type HandlersProcess, spawnHandlers } from "../handlers/testing/spawn-handlers.ts";
import { type HostProcess, type StreamClient, get, openStream, spawnStreamHost } from "./testing/child.ts";
import { prepareCountingMetricsDb, seedStreamFixture } from "./testing/seed.ts";
import type { SseFrame } from "./testing/sse-parse.ts";

const SESSION_SECRET = "access-process-session-secret-0123456789";
const PLATFORM_ADMINS = "platform-admins";
/** How long after the change's answer an open stream on another process may take to end. */
const END_WITHIN_MS = 5_000;

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsUrl: string;
let metricsDb: Awaited<ReturnType<typeof prepareCountingMetricsDb>>;
let handlers: HandlersProcess;
const hosts: HostProcess[] = [];
type Fixture = Awaited<ReturnType<typeof seedStreamFixture>>;
/** One workspace per test plus `other`, whose streams must continue throughout. */
let fixtures: { group: Fixture; revoke: Fixture; deleted: Fixture; other: Fixture };

const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600 });
const cookieOf = async (sub: string, groups: string[]) => ({ cookie: `svc_session=${await tokens.mint({ sub, groups })}` });

beforeAll(async () => {
  store = await createTestConfigStore();
  metricsUrl = (await createDatabase("access")).url;
  metricsDb = await prepareCountingMetricsDb(metricsUrl);
  const seed = () => seedStreamFixture(store.pool, { metricsUrl, panels: [{ id: "p", view: "plain_v" }], refreshIntervalMs: 300 });
  fixtures = { group: await seed(), revoke: await seed(), deleted: await seed(), other: await seed() };
  const env = {
    ...fixtures.other.env,
    SOURCE_SECRET_REFS: `METRICS:${Object.values(fixtures)
      .map((f) => f.workspace.id)
      .join(",")}`,
  };
  handlers = await spawnHandlers({ DATABASE_URL: store.url, SESSION_SECRET, PLATFORM_ADMIN_GROUP: PLATFORM_ADMINS, ...env });
  for (let i = 0; i < 2; i++) {
    hosts.push(
      await spawnStreamHost({
        DATABASE_URL: store.url,
        SESSION_SECRET,
        STREAM_PORT: String(await freePort()),
        NODE_ENV: "test",
        FRAMEWORK_MANUAL_SIG_HANDLE: "true",
        MIN_REFRESH_INTERVAL_MS: "300",
        DEFAULT_REFRESH_INTERVAL_MS: "300",
        ...env,
      }),
    );
  }
}, 120_000);

afterAll(async () => {
  for (const h of hosts) {
    if (h.child.exitCode === null && h.child.signalCode === null) {
      h.kill("SIGTERM");
      await h.exited;
    }
  }
  handlers?.child.kill("SIGKILL");
  await metricsDb?.close();
  await store?.close();
}, 60_000);

const streamPath = (f: Fixture) => `/api/dashboards/${f.dashboardIds[0]}/stream`;

/** Opens the dashboard of `f` on every stream host and waits for each snapshot. */
async function openOnEveryHost(f: Fixture, cookie: Record<string, string>): Promise<StreamClient[]> {
  const streams = await Promise.all(hosts.map((h) => openStream(h.port, streamPath(f), cookie)));
  for (const s of streams) {
    expect(s.status).toBe(200);
    await s.waitFor((fr) => fr.event === "snapshot");
  }
  return streams;
}

/** A change through the handlers' API, as a browser of our own origin sends it. */
async function api(method: string, path: string, cookie: Record<string, string>, body?: unknown): Promise<Response> {
  return fetch(`${handlers.base}${path}`, {
    method,
    headers: { ...cookie, "content-type": "application/json", "sec-fetch-site": "same-origin" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Every stream ends with `forbidden` (`reason`) and closes, each within END_WITHIN_MS of now. */
async function endWithin(streams: StreamClient[], workspaceId: string, reason: string): Promise<void> {
  await Promise.all(
    streams.map(async (s) => {
      const frame = await s.waitFor((f: SseFrame) => f.event === "forbidden", END_WITHIN_MS);
      expect(JSON.parse(frame.data ?? "null")).toEqual({ workspaceId, reason });
      await s.closed;
    }),
  );
}

/** The other workspace's streams still receive panel results after `marks` (their frame counts before the change). */
async function stillFlowing(streams: StreamClient[], marks: number[]): Promise<void> {
  await Promise.all(
    streams.map(async (s, i) => {
      const deadline = Date.now() + 30_000;
      while (!s.frames.slice(marks[i]).some((f) => f.frame.event === "panel")) {
        if (Date.now() > deadline) throw new Error("the other workspace's stream stopped receiving panels");
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(s.frames.some((f) => f.frame.event === "forbidden")).toBe(false);
    }),
  );
}

describe("an open stream on another process ends when its viewer loses access through the handlers", () => {
  test("a platform admin changes the viewer group (PATCH /api/admin/workspaces/{id}): role_removed", async () => {
    const f = fixtures.group;
    const viewer = await cookieOf("viewer-g", [f.workspace.viewer_group, fixtures.other.workspace.viewer_group]);
    const streams = await openOnEveryHost(f, viewer);
    const others = await openOnEveryHost(fixtures.other, viewer);
    const marks = others.map((s) => s.frames.length);

    const res = await api("PATCH", `/api/admin/workspaces/${f.workspace.id}`, await cookieOf("root", [PLATFORM_ADMINS]), {
      groups: { viewer: "someone-else" },
    });
    expect(res.status).toBe(200);
    await endWithin(streams, f.workspace.id, "role_removed");
    // A reconnect with the same session is the 404 of anyone without a role there, on either host.
    for (const h of hosts) expect((await get(h.port, streamPath(f), viewer)).status).toBe(404);
    await stillFlowing(others, marks);
    for (const s of others) s.close();
  }, 60_000);

  test("a workspace admin revokes a member's access (POST /api/workspaces/{id}/sessions/revoke): access_revoked", async () => {
    const f = fixtures.revoke;
    const viewer = await cookieOf("viewer-r", [f.workspace.viewer_group, fixtures.other.workspace.viewer_group]);
    const streams = await openOnEveryHost(f, viewer);
    const others = await openOnEveryHost(fixtures.other, viewer);
    const marks = others.map((s) => s.frames.length);

    const res = await api(
      "POST",
      `/api/workspaces/${f.workspace.id}/sessions/revoke`,
      await cookieOf("admin-r", [f.workspace.admin_group]),
      {
        sub: "viewer-r",
      },
    );
    expect(res.status).toBe(200);
    await endWithin(streams, f.workspace.id, "access_revoked");
    for (const h of hosts) expect((await get(h.port, streamPath(f), viewer)).status).toBe(404);
    // The same person's stream of the other workspace continues: the revocation was this workspace's only.
    await stillFlowing(others, marks);
    for (const s of others) s.close();
  }, 60_000);

  test("a platform admin force-deletes the workspace (DELETE /api/admin/workspaces/{id}?force=true): the streams end", async () => {
    const f = fixtures.deleted;
    const viewer = await cookieOf("viewer-d", [f.workspace.viewer_group, fixtures.other.workspace.viewer_group]);
    const streams = await openOnEveryHost(f, viewer);
    const others = await openOnEveryHost(fixtures.other, viewer);
    const marks = others.map((s) => s.frames.length);

    const res = await api("DELETE", `/api/admin/workspaces/${f.workspace.id}?force=true`, await cookieOf("root", [PLATFORM_ADMINS]));
    expect(res.status).toBeLessThan(300);
    // Its dashboards go with it: whichever notification a host reads first ends the stream with a terminal frame,
    // the dashboard's deletion or the workspace's.
    await Promise.all(
      streams.map(async (s) => {
        const frame = await s.waitFor((fr: SseFrame) => fr.event === "forbidden" || fr.event === "dashboard", END_WITHIN_MS);
        const data = JSON.parse(frame.data ?? "null");
        if (frame.event === "forbidden") expect(data).toEqual({ workspaceId: f.workspace.id, reason: "workspace_deleted" });
        else expect(data).toEqual({ id: f.dashboardIds[0], deleted: true });
        await s.closed;
      }),
    );
    for (const h of hosts) expect((await get(h.port, streamPath(f), viewer)).status).toBe(404);
    await stillFlowing(others, marks);
    for (const s of others) s.close();
  }, 60_000);
});
