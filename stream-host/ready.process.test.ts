// A readiness flood against a real stream host process: 200 concurrent GET /api/ready share one SELECT 1,
// counted where it runs (pg_stat_activity of the config store), and the pool is never touched by them.
import http from "node:http";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type HostProcess, get, spawnStreamHost } from "./testing/child.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { READINESS_APPLICATION_NAME } from "../lib/probes/ready.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let host: HostProcess;
let writers: pg.Pool;

beforeAll(async () => {
  store = await createTestConfigStore();
  await store.pool.query("CREATE TABLE readiness_hold (x int)");
  writers = new pg.Pool({ connectionString: store.url, max: 3 });
  // The host's connections run SERIALIZABLE READ ONLY DEFERRABLE transactions: a statement waits for a safe
  // snapshot (state `active` in pg_stat_activity) while a serializable writer is open, so a test can hold
  // every SELECT 1 at the database and count the ones that reached it.
  const url = new URL(store.url);
  url.searchParams.set(
    "options",
    "-c default_transaction_isolation=serializable -c default_transaction_deferrable=on -c default_transaction_read_only=on",
  );
  host = await spawnStreamHost({
    DATABASE_URL: url.toString(),
    STREAM_PORT: String(await freePort()),
    NODE_ENV: "test",
    PG_POOL_MAX: "10",
    READINESS_CHECK_TIMEOUT_MS: "60000",
    FRAMEWORK_MANUAL_SIG_HANDLE: "true",
  });
});

afterAll(async () => {
  if (host && host.child.exitCode === null) host.kill("SIGKILL");
  await writers?.end();
  await store.close();
});

/** Opens a serializable writer that holds every deferrable snapshot until `release`. */
async function hold() {
  const writer = await writers.connect();
  await writer.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
  await writer.query("INSERT INTO readiness_hold VALUES (1)");
  return {
    release: async () => {
      await writer.query("COMMIT");
      writer.release();
    },
  };
}

/** The host's statements running at the database right now, by application_name. */
async function activeSelectOne(): Promise<{ readiness: number; other: number }> {
  const { rows } = await store.pool.query(
    `SELECT count(*) FILTER (WHERE application_name = $1)::int AS readiness,
            count(*) FILTER (WHERE application_name <> $1)::int AS other
       FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query = 'SELECT 1'`,
    [READINESS_APPLICATION_NAME],
  );
  return rows[0];
}

async function until(pred: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 2000; i++) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${what} not seen`);
}

/** Sends one GET and resolves once the request has been written to the socket. */
function sendReady(port: number) {
  let sent!: () => void;
  const written = new Promise<void>((r) => {
    sent = r;
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/api/ready", agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("finish", sent);
    req.on("error", reject);
  });
  return { written, answer };
}

test("200 concurrent readiness requests: exactly one SELECT 1 in flight at the database, none after they were answered", async () => {
  expect((await get(host.port, "/api/ready")).status).toBe(200);
  const first = await hold();
  const requests = Array.from({ length: 200 }, () => sendReady(host.port));
  await Promise.all(requests.map((r) => r.written));
  // A request sent after the 200 were written is answered only after the host read theirs.
  expect((await get(host.port, "/api/health")).status).toBe(200);
  await until(async () => (await activeSelectOne()).readiness === 1, "the held SELECT 1");
  expect(await activeSelectOne()).toEqual({ readiness: 1, other: 0 });

  // A second writer opens before the first commits: any SELECT 1 issued from here on would wait for it.
  const second = await hold();
  await first.release();
  const answers = await Promise.all(requests.map((r) => r.answer));
  for (const a of answers) {
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body).checks.database).toEqual({ status: "ok" });
  }
  // All 200 were answered by the one statement: nothing else reached the database.
  expect(await activeSelectOne()).toEqual({ readiness: 0, other: 0 });
  // A finished check is not reused: the next request runs its own SELECT 1, which the second writer holds.
  const next = sendReady(host.port);
  await until(async () => (await activeSelectOne()).readiness === 1, "the next SELECT 1");
  await second.release();
  expect((await next.answer).status).toBe(200);
});
