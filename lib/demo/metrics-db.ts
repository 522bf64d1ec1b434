import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import pg from "pg";

/** The demo metrics store: its own database with a least-privilege read-only login role. */
export const DEMO_METRICS_DB = "pulseboard_demo_metrics";
export const DEMO_READER_ROLE = "pulseboard_demo_reader";
/** The secret_ref of the demo source: credentials come from DEMO_READER_USERNAME / DEMO_READER_PASSWORD. */
export const DEMO_SECRET_REF = "DEMO_READER";

const SERVICES = ["checkout", "search", "accounts", "catalog"];
const ROUTES = ["/api/cart", "/api/search", "/api/login", "/api/items", "/api/orders", "/health"];
const HOSTS = ["web-1", "web-2", "db-1", "worker-1"];

/** Reads a persisted random secret or creates one (0600) so a second start reuses it. */
export async function persistentSecret(path: string, bytes = 24): Promise<string> {
  if (existsSync(path)) return (await readFile(path, "utf8")).trim();
  const secret = randomBytes(bytes).toString("base64url");
  await writeFile(path, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/**
 * Creates (once) the demo metrics database, its tables, 24 h of history and the read-only role.
 * `adminUrl` is a superuser connection to the server's `postgres` database.
 */
export async function ensureDemoMetricsDb(adminUrl: string, readerPassword: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [DEMO_METRICS_DB]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${DEMO_METRICS_DB}`);
    const role = await admin.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [DEMO_READER_ROLE]);
    // The password goes through format('%L') server-side; it is never spliced by us.
    const pw = (await admin.query("SELECT format('%L', $1::text) AS q", [readerPassword])).rows[0].q as string;
    if (role.rowCount === 0) {
      await admin.query(`CREATE ROLE ${DEMO_READER_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${pw}`);
    } else {
      await admin.query(`ALTER ROLE ${DEMO_READER_ROLE} PASSWORD ${pw}`);
    }
  } finally {
    await admin.end();
  }

  const url = new URL(adminUrl);
  url.pathname = `/${DEMO_METRICS_DB}`;
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    await db.query(`
      CREATE TABLE IF NOT EXISTS http_requests (
        ts timestamptz NOT NULL, service text NOT NULL, route text NOT NULL,
        status integer NOT NULL, latency_ms double precision NOT NULL);
      CREATE INDEX IF NOT EXISTS http_requests_ts ON http_requests (ts);
      CREATE TABLE IF NOT EXISTS host_metrics (
        time timestamptz NOT NULL, host text NOT NULL, cpu double precision NOT NULL, mem_bytes bigint NOT NULL);
      CREATE INDEX IF NOT EXISTS host_metrics_time ON host_metrics (time);
      REVOKE ALL ON SCHEMA public FROM PUBLIC;
      GRANT USAGE ON SCHEMA public TO ${DEMO_READER_ROLE};
      GRANT SELECT ON http_requests, host_metrics TO ${DEMO_READER_ROLE};
      REVOKE CREATE ON SCHEMA public FROM ${DEMO_READER_ROLE};
      ALTER ROLE ${DEMO_READER_ROLE} SET default_transaction_read_only = on;
    `);
    await db.query(`REVOKE CONNECT ON DATABASE ${DEMO_METRICS_DB} FROM PUBLIC`);
    await db.query(`GRANT CONNECT ON DATABASE ${DEMO_METRICS_DB} TO ${DEMO_READER_ROLE}`);
    await backfill(db);
  } finally {
    await db.end();
  }
  return url.toString();
}

/** Fills the gap between the newest row and now (24 h on first start) with realistic traffic. */
async function backfill(db: pg.Client): Promise<void> {
  await db.query(
    `INSERT INTO http_requests (ts, service, route, status, latency_ms)
     SELECT t + (random() * interval '1 second'),
            ($1::text[])[1 + floor(random() * array_length($1::text[], 1))::int],
            ($2::text[])[1 + floor(random() * array_length($2::text[], 1))::int],
            CASE WHEN random() < 0.02 THEN 500 WHEN random() < 0.05 THEN 404 ELSE 200 END,
            round((20 + 15 * sin(extract(epoch FROM t) / 3600) + random() * random() * 400)::numeric, 2)
       FROM generate_series(
              greatest(coalesce((SELECT max(ts) FROM http_requests), now() - interval '24 hours'), now() - interval '24 hours'),
              now(), interval '1 second') AS t,
            generate_series(1, 3)`,
    [SERVICES, ROUTES],
  );
  await db.query(
    `INSERT INTO host_metrics (time, host, cpu, mem_bytes)
     SELECT t, h,
            least(100, greatest(0, 35 + 25 * sin(extract(epoch FROM t) / 1800 + length(h)) + random() * 10)),
            (2e9 + 1e9 * random())::bigint
       FROM generate_series(
              greatest(coalesce((SELECT max(time) FROM host_metrics), now() - interval '24 hours'), now() - interval '24 hours'),
              now(), interval '10 seconds') AS t,
            unnest($1::text[]) AS h`,
    [HOSTS],
  );
}

/** Appends live rows every second (and host samples every 10 s) and trims rows older than 48 h. Returns a stop function. */
export function startDemoTraffic(metricsUrl: string, onError: (err: unknown) => void): () => Promise<void> {
  const pool = new pg.Pool({ connectionString: metricsUrl, max: 1 });
  pool.on("error", () => {});
  let ticks = 0;
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    ticks++;
    running = (async () => {
      await pool.query(
        // The same shapes as the backfill, so live points continue the history instead of jumping.
        `INSERT INTO http_requests (ts, service, route, status, latency_ms)
         SELECT t, ($1::text[])[1 + floor(random() * 4)::int], ($2::text[])[1 + floor(random() * 6)::int],
                CASE WHEN random() < 0.02 THEN 500 WHEN random() < 0.05 THEN 404 ELSE 200 END,
                round((20 + 15 * sin(extract(epoch FROM t) / 3600) + random() * random() * 400)::numeric, 2)
           FROM (SELECT now() - random() * interval '1 second' AS t FROM generate_series(1, 3)) AS g`,
        [SERVICES, ROUTES],
      );
      if (ticks % 10 === 0) {
        await pool.query(
          `INSERT INTO host_metrics (time, host, cpu, mem_bytes)
           SELECT now(), h,
                  least(100, greatest(0, 35 + 25 * sin(extract(epoch FROM now()) / 1800 + length(h)) + random() * 10)),
                  (2e9 + 1e9 * random())::bigint
             FROM unnest($1::text[]) h`,
          [HOSTS],
        );
      }
      if (ticks % 600 === 0) {
        await pool.query("DELETE FROM http_requests WHERE ts < now() - interval '48 hours'");
        await pool.query("DELETE FROM host_metrics WHERE time < now() - interval '48 hours'");
      }
    })().catch(onError);
  }, 1000);
  return async () => {
    clearInterval(timer);
    await running;
    await pool.end();
  };
}
