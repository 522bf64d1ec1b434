// The drain on ECS: a real stream host process watches a local HTTP server standing in for the ECS task
// metadata endpoint (ECS_CONTAINER_METADATA_URI_V4). When the task's desired status flips to STOPPED, every
// open stream gets its terminal frame before any signal is sent; SIGTERM then finishes the sequence.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort } from "../lib/embedded/postgres.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { type HostProcess, get, openStream } from "./testing/child.ts";
import { prepareCountingMetricsDb } from "./testing/seed.ts";
import { startSeededHost } from "./testing/seeded-host.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsDb: Awaited<ReturnType<typeof prepareCountingMetricsDb>>;
let metricsUrl: string;
const children: HostProcess[] = [];
const servers: http.Server[] = [];

beforeAll(async () => {
  store = await createTestConfigStore();
  metricsUrl = (await createDatabase("metrics")).url;
  metricsDb = await prepareCountingMetricsDb(metricsUrl);
});

afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.kill("SIGKILL");
  for (const s of servers) s.close();
  await metricsDb.close();
  await store.close();
});

/** The ECS agent's task metadata endpoint as far as the stream host uses it: GET <uri>/task. */
async function fakeMetadataEndpoint() {
  let desired = "RUNNING";
  let requests = 0;
  const server = http.createServer((req, res) => {
    if (req.url === "/v4/task-abc/task") {
      requests++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ Cluster: "c", TaskARN: "arn:task", KnownStatus: "RUNNING", DesiredStatus: desired }));
      return;
    }
    res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    uri: `http://127.0.0.1:${port}/v4/task-abc`,
    requests: () => requests,
    stop: () => {
      desired = "STOPPED";
    },
  };
}

function start(env: Record<string, string>) {
  return startSeededHost({ store, metricsUrl, panels: [{ id: "fast", view: "fast_v" }], env, children });
}

describe("drain when the ECS task is being stopped", () => {
  test("DesiredStatus STOPPED: readiness 503 draining and every stream framed and closed before any signal; SIGTERM then exits 0", async () => {
    const metadata = await fakeMetadataEndpoint();
    const { host, path, cookie } = await start({ ECS_CONTAINER_METADATA_URI_V4: metadata.uri, TASK_STOP_POLL_MS: "100" });
    expect(host.logs.find((l) => l.msg === "stream host listening")).toMatchObject({ taskStopWatch: true });
    const streams = await Promise.all(Array.from({ length: 6 }, () => openStream(host.port, path, cookie)));
    for (const s of streams) await s.waitFor((f) => f.event === "panel");
    // The watcher is polling and the task is running: still serving.
    const before = metadata.requests();
    while (metadata.requests() < before + 2) await new Promise((r) => setTimeout(r, 20));
    expect((await get(host.port, "/api/ready")).status).toBe(200);
    expect(host.logs.some((l) => l.msg === "draining")).toBe(false);

    metadata.stop();
    const retries: number[] = [];
    for (const s of streams) {
      const frame = await s.waitFor((f) => f.event === "draining");
      expect(frame.retry).toBeGreaterThanOrEqual(2000);
      expect(frame.retry).toBeLessThanOrEqual(10000);
      retries.push(frame.retry!);
      await s.closed;
      expect(s.frames.at(-1)?.frame.event).toBe("draining");
    }
    expect(new Set(retries).size).toBeGreaterThan(1);
    expect(host.logs.find((l) => l.msg === "draining")).toMatchObject({ trigger: "ecs_task_stopping" });
    const ready = await get(host.port, "/api/ready");
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body).status).toBe("draining");
    // No signal was sent: the process still serves (health 200, a late stream gets the terminal frame at once).
    expect(host.child.exitCode).toBeNull();
    expect((await get(host.port, "/api/health")).status).toBe(200);
    const late = await openStream(host.port, path, cookie);
    expect(late.status).toBe(200);
    expect((await late.waitFor(() => true)).event).toBe("draining");
    // The drain ran to its end (pools released) and waits for the signal to exit.
    await host.waitForLog((l) => l.msg === "config store released");
    expect(host.logs.some((l) => l.msg === "exiting")).toBe(false);

    host.kill("SIGTERM");
    const { code } = await host.exited;
    expect(code).toBe(0);
    expect(host.logs.find((l) => l.msg === "exiting")).toMatchObject({ code: 0, why: "drained" });
    // The signal finished the drain; it was not treated as a second signal.
    expect(host.logs.filter((l) => l.msg === "draining")).toHaveLength(1);
  });

  test("an unreachable metadata endpoint is logged once and SIGTERM still drains", async () => {
    const { host, path, cookie } = await start({
      ECS_CONTAINER_METADATA_URI_V4: `http://127.0.0.1:${await freePort()}/v4/gone`,
      TASK_STOP_POLL_MS: "100",
    });
    const s = await openStream(host.port, path, cookie);
    await s.waitFor((f) => f.event === "panel");
    await host.waitForLog((l) => l.msg === "task metadata unavailable");
    expect((await get(host.port, "/api/ready")).status).toBe(200);
    host.kill("SIGTERM");
    await s.waitFor((f) => f.event === "draining");
    expect((await host.exited).code).toBe(0);
    expect(host.logs.filter((l) => l.msg === "task metadata unavailable")).toHaveLength(1);
  });
});
