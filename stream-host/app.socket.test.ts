// The stream path over real sockets (served by @hono/node-server, as in production): frames written
// straight to Node's response, a subscriber that stops reading dropped, a disconnect noticed.
import http from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import { type ServerType, serve } from "@hono/node-server";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { openStream } from "./testing/child.ts";
import { createTestHost, flush, panel, seedDashboard, spec, textResult } from "./testing/fixture.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.close();
});

async function listen(app: { fetch: (req: Request, env?: unknown) => Response | Promise<Response> }) {
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Waits for a server-side state change that follows a socket event (no gate exists across the socket). */
async function eventually(cond: () => boolean) {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}

test("frames reach real sockets as SSE; a closed connection is noticed and its subscriber removed", async () => {
  const t = createTestHost({ url: store.url, pool: store.pool });
  const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a"), panel("b")]));
  const srv = await listen(t.app);
  try {
    const cookie = await t.cookieFor([workspace.viewer_group]);
    const path = `/api/dashboards/${dashboardId}/stream`;
    const a = await openStream(srv.port, path, { cookie });
    const b = await openStream(srv.port, path, { cookie });
    expect(a.status).toBe(200);
    expect(a.headers["content-type"]).toBe("text/event-stream");
    expect(a.headers["cache-control"]).toBe("no-cache, no-transform");
    expect(a.headers["x-accel-buffering"]).toBe("no");
    await a.waitFor((f) => f.event === "snapshot");
    await b.waitFor((f) => f.event === "snapshot");

    t.clock.runNext();
    await flush();
    for (const s of [a, b]) {
      const ids = [];
      for (const id of ["a", "b"])
        ids.push(JSON.parse((await s.waitFor((f) => f.event === "panel" && f.data!.includes(`"${id}"`))).data!).panelId);
      expect(ids).toEqual(["a", "b"]);
    }
    // Both panel frames of the tick went out together, in one chunk.
    expect(new Set(a.frames.filter((f) => f.frame.event === "panel").map((f) => f.at)).size).toBe(1);

    a.close();
    await eventually(() => t.host.hub.subscribersOf(dashboardId) === 1);
    expect(await t.registry.getSingleMetricAsString("svc_sse_subscribers")).toContain(`{dashboard="${dashboardId}"} 1`);
    b.close();
    await eventually(() => t.host.hub.dashboards === 0);
    expect(await t.registry.metrics()).not.toContain(dashboardId);
  } finally {
    await srv.close();
  }
});

test("a subscriber whose socket stops draining is dropped rather than buffered without bound", async () => {
  const big = "x".repeat(512 * 1024);
  const t = createTestHost({
    url: store.url,
    pool: store.pool,
    host: { maxBufferedBytes: 256 * 1024 },
    runPanel: async () => textResult([[big]]),
  });
  const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
  const srv = await listen(t.app);
  try {
    const cookie = await t.cookieFor([workspace.viewer_group]);
    const path = `/api/dashboards/${dashboardId}/stream`;
    const stuck = await openStream(srv.port, path, { cookie });
    await stuck.waitFor((f) => f.event === "snapshot");
    stuck.pause();
    const live = await openStream(srv.port, path, { cookie });
    await live.waitFor((f) => f.event === "snapshot");
    t.clock.runNext();
    // Tick after tick until the kernel's buffers are full and ours passes the bound.
    for (let i = 0; i < 200 && t.host.hub.subscribersOf(dashboardId) === 2; i++) {
      await flush();
      await new Promise((r) => setTimeout(r, 5));
      t.clock.advance(5000);
    }
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(1);
    // Once it reads again it finds its connection closed after what had been buffered.
    stuck.resume();
    await stuck.closed;
    // The subscriber that reads keeps streaming.
    const before = live.frames.length;
    t.clock.advance(5000);
    await live.waitFor(() => live.frames.length > before);
    live.close();
  } finally {
    await srv.close();
  }
});

test("STREAM_COMPRESSION=deflate over a real socket: the body is one zlib stream, decoded frame by frame as it arrives, ending whole after the drain frame", async () => {
  const t = createTestHost({ url: store.url, pool: store.pool, env: { STREAM_COMPRESSION: "deflate" } });
  const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a"), panel("b")]));
  const srv = await listen(t.app);
  try {
    const headers = { cookie: await t.cookieFor([workspace.viewer_group]), "accept-encoding": "gzip, deflate" };
    const path = `/api/dashboards/${dashboardId}/stream`;
    const a = await openStream(srv.port, path, headers);
    const raw = rawBody(srv.port, path, headers);
    expect(a.headers["content-encoding"]).toBe("deflate");
    expect(a.headers.vary).toBe("accept-encoding");
    expect(a.headers["cache-control"]).toBe("no-cache, no-transform");
    expect(a.headers["x-accel-buffering"]).toBe("no");
    await a.waitFor((f) => f.event === "snapshot");
    await eventually(() => t.host.hub.subscribersOf(dashboardId) === 2);

    t.clock.runNext();
    await flush();
    for (const id of ["a", "b"]) await a.waitFor((f) => f.event === "panel" && JSON.parse(f.data!).panelId === id);

    // The terminal frame is decoded on arrival, before the connection closes.
    t.deps.drain.start();
    const flushed = t.host.beginDrain();
    const terminal = await a.waitFor((f) => f.event === "draining");
    expect(terminal.retry).toBeGreaterThanOrEqual(2000);
    await a.closed;
    await flushed;
    // inflateSync checks the whole stream: header, every block, the final block and the Adler-32 trailer.
    const text = zlib.inflateSync(await raw).toString();
    expect(text.startsWith("event: snapshot\n")).toBe(true);
    expect(text.match(/event: panel\n/g)).toHaveLength(2);
    expect(text).toMatch(/retry: \d+\nevent: draining\ndata: \{"retryMs":\d+\}\n\n$/);
    await t.host.settle();
  } finally {
    await srv.close();
  }
});

/** The raw bytes of a response body over a fresh connection, as the server sent them (undecoded). */
function rawBody(port: number, path: string, headers: Record<string, string>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve(Buffer.concat(parts)));
    });
    req.on("error", reject);
  });
}
