import { chmod, mkdtemp, rm } from "node:fs/promises";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import pg from "pg";
import { requestId } from "hono/request-id";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../config/parse.ts";
import { type EmbeddedPostgresHandle, freePort, startEmbeddedPostgres } from "../embedded/postgres.ts";
import { createDrainState } from "../lifecycle/drain-state.ts";
import { createConfigStorePool } from "../store/pool.ts";
import { registerHealth } from "./health.ts";
import { READINESS_APPLICATION_NAME, createReadiness, registerReady } from "./ready.ts";

// A PostgreSQL of this file's own, so it can be stopped and restarted under the probe.
let server: EmbeddedPostgresHandle;
let dir: string;
let idp: Server;
let idpUrl: string;
let idpHits = 0;
let idpMode: "ok" | "503" | "hang" = "ok";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-probe-pg-"));
  await chmod(dir, 0o755);
  server = await startEmbeddedPostgres({ dataDir: join(dir, "data"), password: "probe-S3cret-pw" });
  idp = createServer((req, res) => {
    idpHits++;
    if (idpMode === "hang") return; // never answers
    if (idpMode === "503") {
      res.writeHead(503).end("down");
      return;
    }
    if (req.url === "/realm/.well-known/openid-configuration") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ issuer: `${idpUrl}` }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => idp.listen(0, "127.0.0.1", r));
  idpUrl = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/realm`;
}, 120_000);

afterAll(async () => {
  idp.closeAllConnections();
  idp.close();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

function setup(
  env: Record<string, string>,
  opts: { url?: string; now?: () => number; connect?: (config: pg.ClientConfig) => pg.Client } = {},
) {
  const { config } = parseConfig({
    DATABASE_URL: opts.url ?? server.url("postgres"),
    // Long enough for a first connection on a busy machine; the hung-dependency tests wait it out.
    READINESS_CHECK_TIMEOUT_MS: "1000",
    ...env,
  });
  const pool = createConfigStorePool({ connectionString: config.DATABASE_URL, max: 2 });
  const drain = createDrainState();
  const connect = opts.connect;
  const readiness = createReadiness({
    pool,
    config,
    drain,
    now: opts.now,
    connect: connect && (() => connect({ connectionString: config.DATABASE_URL, application_name: READINESS_APPLICATION_NAME })),
  });
  const app = new Hono();
  app.use(requestId());
  registerHealth(app, { version: config.APP_VERSION ?? "1.2.3", commit: config.GIT_COMMIT ?? "unknown" });
  registerReady(app, readiness);
  const close = async () => {
    await readiness.close();
    await pool.end();
  };
  return { app, pool, drain, readiness, close };
}

const FULL = {
  OIDC_ISSUER: "",
  OIDC_CLIENT_ID: "pulseboard",
  AI_PROVIDER: "compat",
  AI_MODEL: "local-model",
  AI_COMPAT_BASE_URL: "http://127.0.0.1:9/v1",
  AI_COMPAT_API_KEY: "sk-local",
};

async function ready(app: Hono) {
  const res = await app.request("/api/ready");
  const raw = await res.text();
  return {
    status: res.status,
    raw,
    body: JSON.parse(raw),
    cache: res.headers.get("cache-control"),
    requestId: res.headers.get("x-request-id"),
  };
}

describe("GET /api/health", () => {
  test("200 with version and commit unknown; no-store; touches no dependency", async () => {
    // The pool points at a closed port: health must not care.
    const { app, pool, close } = setup({}, { url: "postgres://u:p@127.0.0.1:1/none" });
    const res = await app.request("/api/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(await res.json()).toEqual({ status: "ok", version: "1.2.3", commit: "unknown" });
    expect(pool.totalCount).toBe(0);
    await close();
  });

  test("APP_VERSION and GIT_COMMIT override; stays 200 while draining", async () => {
    const { app, close, drain } = setup({ APP_VERSION: "9.9.9", GIT_COMMIT: "abc123" });
    drain.start();
    const res = await app.request("/api/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", version: "9.9.9", commit: "abc123" });
    await close();
  });
});

describe("GET /api/ready", () => {
  test("ready when all three answer", async () => {
    idpMode = "ok";
    const { app, close } = setup({ ...FULL, OIDC_ISSUER: idpUrl });
    const r = await ready(app);
    expect(r.status, r.raw).toBe(200);
    expect(r.cache).toBe("no-store");
    expect(r.requestId).toBeTruthy();
    expect(r.body).toEqual({
      status: "ready",
      checks: { database: { status: "ok" }, identityProvider: { status: "ok" }, aiProvider: { status: "ok" } },
    });
    await close();
  });

  test("degraded naming the unset OIDC and AI variables while the database is ok", async () => {
    const { app, close } = setup({});
    const r = await ready(app);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      status: "degraded",
      checks: {
        database: { status: "ok" },
        identityProvider: { status: "failed", reason: "OIDC_ISSUER" },
        aiProvider: { status: "failed", reason: "AI_PROVIDER" },
      },
    });
    await close();
  });

  test.each([
    [{ AI_PROVIDER: "gateway" }, "AI_MODEL"],
    [{ AI_PROVIDER: "gateway", AI_MODEL: "openai/gpt-5" }, "AI_GATEWAY_API_KEY"],
    [{ AI_PROVIDER: "compat", AI_MODEL: "m" }, "AI_COMPAT_BASE_URL"],
    [{ AI_PROVIDER: "compat", AI_MODEL: "m", AI_COMPAT_BASE_URL: "http://x/v1" }, "AI_COMPAT_API_KEY"],
  ])("AI configuration %j names %s without calling a model", async (env, reason) => {
    const { app, close } = setup(env);
    expect((await ready(app)).body.checks.aiProvider).toEqual({ status: "failed", reason });
    await close();
  });

  test("an unreachable issuer is a code reason; a 503 issuer is http_503; a hung one TIMEOUT", async () => {
    const t = 0;
    const closed = setup({ ...FULL, OIDC_ISSUER: `http://127.0.0.1:${await freePort()}/realm` }, { now: () => t });
    expect((await ready(closed.app)).body).toMatchObject({
      status: "degraded",
      checks: { identityProvider: { status: "failed", reason: "ECONNREFUSED" } },
    });
    await closed.close();

    idpMode = "503";
    const down = setup({ ...FULL, OIDC_ISSUER: idpUrl }, { now: () => t });
    expect((await ready(down.app)).body.checks.identityProvider).toEqual({ status: "failed", reason: "http_503" });
    await down.close();

    idpMode = "hang";
    const hung = setup({ ...FULL, OIDC_ISSUER: idpUrl }, { now: () => t });
    expect((await ready(hung.app)).body.checks.identityProvider).toEqual({ status: "failed", reason: "TIMEOUT" });
    await hung.close();
    idpMode = "ok";
  });

  test("the issuer check is cached 60 s on success and 5 s on failure (injected clock, counted requests)", async () => {
    let t = 1_000_000;
    idpMode = "ok";
    const { app, close } = setup({ ...FULL, OIDC_ISSUER: idpUrl }, { now: () => t });
    idpHits = 0;
    await ready(app);
    expect(idpHits).toBe(1);
    t += 59_999;
    await ready(app);
    expect(idpHits).toBe(1);
    t += 1;
    await ready(app);
    expect(idpHits).toBe(2);

    idpMode = "503";
    t += 60_000;
    expect((await ready(app)).body.checks.identityProvider.reason).toBe("http_503");
    expect(idpHits).toBe(3);
    t += 4_999;
    await ready(app);
    expect(idpHits).toBe(3);
    idpMode = "ok";
    t += 1;
    expect((await ready(app)).body.checks.identityProvider).toEqual({ status: "ok" });
    expect(idpHits).toBe(4);
    await close();
  });

  test("draining answers 503 draining from the instant the flag is set", async () => {
    const { app, close, drain } = setup({ ...FULL, OIDC_ISSUER: idpUrl });
    expect((await ready(app)).status).toBe(200);
    drain.start();
    const r = await ready(app);
    expect(r.status).toBe(503);
    expect(r.body.status).toBe("draining");
    await close();
  });

  test.each([
    ["no issuer configured", false, { status: "failed", reason: "OIDC_ISSUER" }],
    ["an issuer that answers", true, { status: "ok" }],
  ])("while draining, identityProvider is what readiness reported before the drain (%s)", async (_name, withIssuer, expected) => {
    const { app, close, drain } = setup({ ...FULL, ...(withIssuer ? { OIDC_ISSUER: idpUrl } : {}) });
    const before = await ready(app);
    expect(before.body.checks.identityProvider).toEqual(expected);
    drain.start();
    const r = await ready(app);
    expect(r.body.status).toBe("draining");
    expect(r.body.checks.identityProvider).toEqual(expected);
    await close();
  });

  test("draining before any check reports the identity provider's configuration, without a request", async () => {
    const { app, close, drain } = setup({});
    drain.start();
    const r = await ready(app);
    expect(r.body.checks.identityProvider).toEqual({ status: "failed", reason: "OIDC_ISSUER" });
    await close();
  });

  test("a wrong password is not_ready with 28P01, and the body never contains host, user, password or URL", async () => {
    const url = server.url("postgres").replace("probe-S3cret-pw", "wrong-pass-XYZ");
    const { app, close } = setup({}, { url });
    const r = await ready(app);
    expect(r.status).toBe(503);
    expect(r.body.status).toBe("not_ready");
    expect(r.body.checks.database).toEqual({ status: "failed", reason: "28P01" });
    for (const secret of ["127.0.0.1", "postgres", "wrong-pass-XYZ", "probe-S3cret-pw", String(server.port), "postgres://"]) {
      expect(r.raw).not.toContain(secret);
    }
    await close();
  });

  test("a stopped config store is not_ready with a code reason, and readiness recovers without a restart", async () => {
    const { app, close } = setup({});
    expect((await ready(app)).status).toBe(200);
    await server.stop();
    const down = await ready(app);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe("not_ready");
    expect(down.body.checks.database.status).toBe("failed");
    expect(down.body.checks.database.reason).toMatch(/^(ECONNREFUSED|57P01|57P03|ECONNRESET|TIMEOUT)$/);
    expect(down.raw).not.toContain("127.0.0.1");
    server = await startEmbeddedPostgres({ dataDir: join(dir, "data"), port: server.port, password: "probe-S3cret-pw" });
    let back = await ready(app);
    // The first query after a restart may land on a client killed by the shutdown; the next one is fresh.
    if (back.status !== 200) back = await ready(app);
    expect(back.status).toBe(200);
    expect(back.body.checks.database).toEqual({ status: "ok" });
    await close();
  }, 60_000);
});

describe("readiness under a flood and a saturated pool", () => {
  /**
   * Holds every `SELECT 1` of readiness at the database: its connection runs SERIALIZABLE READ ONLY
   * DEFERRABLE transactions, which wait for a safe snapshot while a serializable writer is open. The
   * waiting statement is `active` in pg_stat_activity, so the test counts checks where they run.
   */
  async function heldStore() {
    const admin = createConfigStorePool({ connectionString: server.url("postgres"), max: 2 });
    await admin.query("CREATE TABLE IF NOT EXISTS readiness_hold (x int)");
    const url = new URL(server.url("postgres"));
    url.searchParams.set(
      "options",
      "-c default_transaction_isolation=serializable -c default_transaction_deferrable=on -c default_transaction_read_only=on",
    );
    const writer = await admin.connect();
    return {
      url: url.toString(),
      async hold() {
        await writer.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
        await writer.query("INSERT INTO readiness_hold VALUES (1)");
      },
      release: () => writer.query("COMMIT"),
      /** `SELECT 1` statements of readiness running at the database right now. */
      async inFlight(): Promise<number> {
        const { rows } = await admin.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query = 'SELECT 1'",
          [READINESS_APPLICATION_NAME],
        );
        return rows[0].n;
      },
      async close() {
        writer.release();
        await admin.end();
      },
    };
  }

  async function until(pred: () => Promise<boolean>) {
    for (let i = 0; i < 1000 && !(await pred()); i++) await new Promise((r) => setImmediate(r));
    expect(await pred()).toBe(true);
  }

  test("concurrent checks share one in-flight SELECT 1; a finished one is not reused", async () => {
    const store = await heldStore();
    // Real clients; the wrapper only counts the statements readiness sends.
    let sent = 0;
    const counting = (config: pg.ClientConfig) => {
      const client = new pg.Client(config);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((...args: unknown[]) => {
        sent++;
        return query(...args);
      }) as typeof client.query;
      return client;
    };
    const { app, close } = setup({ READINESS_CHECK_TIMEOUT_MS: "60000" }, { url: store.url, connect: counting });
    expect((await ready(app)).body.checks.database).toEqual({ status: "ok" });
    expect(sent).toBe(1);
    await store.hold();
    const answers = Promise.all(Array.from({ length: 50 }, () => ready(app)));
    await until(async () => (await store.inFlight()) === 1);
    await store.release();
    const all = await answers;
    for (const r of all) expect(r.body.checks.database).toEqual({ status: "ok" });
    expect(sent).toBe(2);
    // The next check runs its own statement: hold again and see it at the database.
    await store.hold();
    const next = ready(app);
    await until(async () => (await store.inFlight()) === 1);
    await store.release();
    expect((await next).body.checks.database).toEqual({ status: "ok" });
    expect(sent).toBe(3);
    await close();
    await store.close();
  });

  test("a hung SELECT 1 answers not_ready TIMEOUT within the bound; the next check uses a fresh connection", async () => {
    const store = await heldStore();
    const { app, close } = setup({ READINESS_CHECK_TIMEOUT_MS: "300" }, { url: store.url });
    expect((await ready(app)).status).toBe(200);
    await store.hold();
    const r = await ready(app);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ status: "not_ready", checks: { database: { status: "failed", reason: "TIMEOUT" } } });
    await store.release();
    const back = await ready(app);
    expect(back.status).toBe(200);
    await close();
    await store.close();
  });

  test("a pool with every client checked out does not fail readiness, and readiness takes none of its slots", async () => {
    const { app, pool, close } = setup({});
    const held = await Promise.all([pool.connect(), pool.connect()]);
    expect(pool.totalCount).toBe(2);
    const r = await ready(app);
    expect(r.status).toBe(200);
    expect(r.body.checks.database).toEqual({ status: "ok" });
    expect(pool.waitingCount).toBe(0);
    for (const c of held) c.release();
    await close();
  });
});
