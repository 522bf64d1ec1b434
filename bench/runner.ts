// npm run bench -- runner: guarded query time against a bare `pg` query of the same SQL on the same database
// (1 row and 5,000 rows), the alternatives for the read-only/timeout set-up side by side, and peak RSS growth
// while a would-be >1 GB result is stopped by the byte cap. Starts its own embedded PostgreSQL.
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import pg from "pg";
import Cursor from "pg-cursor";
import { Registry } from "prom-client";
import type { Catalog } from "../lib/catalog/types.ts";
import { parseConfig } from "../lib/config/parse.ts";
import { startEmbeddedPostgres } from "../lib/embedded/postgres.ts";
import { AppError } from "../lib/http/errors.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { startupOptions } from "../lib/query/pools.ts";
import { type ReadStats, SOURCE_POOL_DEFAULTS, createQueryRunner } from "../lib/query/runner.ts";
import { createSecretResolver } from "../lib/secrets/resolver.ts";
import type { Source } from "../lib/sources/store.ts";
import { createGuard, loadGuardParser } from "../lib/sql-guard/index.ts";

const DB = "bench_metrics";
const ROLE = "bench_reader";
const PASSWORD = "bench-reader-pw";
const ROWS = 20_000;
const T0 = Date.UTC(2026, 0, 1);

const catalog: Catalog = {
  tables: [
    {
      schema: "public",
      name: "samples",
      timeColumn: "ts",
      columns: [
        { name: "ts", type: "timestamp with time zone" },
        { name: "host", type: "text" },
        { name: "value", type: "double precision" },
      ],
    },
  ],
};

const PANELS = {
  "1 row": "SELECT ts, host, value FROM samples WHERE $__timeFilter(ts) ORDER BY ts LIMIT 1",
  "5,000 rows": "SELECT ts, host, value FROM samples WHERE $__timeFilter(ts) ORDER BY ts LIMIT 5000",
} as const;
const RANGE = { fromMs: T0, toMs: T0 + ROWS * 1000 };
/** The 1-row wall samples come in this many consecutive rounds, each with its own ratio. */
const ROUNDS = 5;

type Op = () => Promise<unknown>;

interface WallTimes {
  p10: number;
  p50: number;
  /** The median of each round, in round order (the ratio per round shows how much load moved the figures). */
  roundP50: number[];
}

const quantile = (sorted: number[], f: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * f))] as number;

/**
 * Runs the variants op by op in turn (A, B, C, B, C, A, ...) so load from other processes hits all alike, in
 * `rounds` consecutive rounds, and returns the 10th and 50th percentile of each variant's per-op time in
 * microseconds over all rounds, and each round's median.
 */
async function measure(variants: [string, Op][], samples: number, rounds: number): Promise<Map<string, WallTimes>> {
  const times = variants.map(() => [] as number[][]);
  for (let i = 0; i < Math.max(20, samples / 5); i++) for (const [, op] of variants) await op(); // JIT, plans
  const perRound = Math.ceil(samples / rounds);
  for (let r = 0; r < rounds; r++) {
    for (const t of times) t.push([]);
    for (let i = 0; i < perRound; i++) {
      // Rotate the order so every variant follows every other equally often (a backend that was idle during
      // the previous op wakes up slower than one that just answered).
      for (let j = 0; j < variants.length; j++) {
        const k = (i + j) % variants.length;
        const start = performance.now();
        await (variants[k] as [string, Op])[1]();
        times[k]?.[r]?.push((performance.now() - start) * 1000);
      }
    }
  }
  const out = new Map<string, WallTimes>();
  variants.forEach(([name], k) => {
    const byRound = times[k] as number[][];
    const all = byRound.flat().sort((a, b) => a - b);
    const roundP50 = byRound.map((t) =>
      quantile(
        t.sort((a, b) => a - b),
        0.5,
      ),
    );
    out.set(name, { p10: quantile(all, 0.1), p50: quantile(all, 0.5), roundP50 });
  });
  return out;
}

/** Nanoseconds a process has spent on a CPU (Linux schedstat); null where it is not available. */
async function cpuNs(pid: number): Promise<number | null> {
  try {
    return Number((await readFile(`/proc/${pid}/schedstat`, "utf8")).split(" ")[0]);
  } catch {
    return null;
  }
}

/**
 * CPU per op of a block of `iterations` sequential calls: this process (client: pg, decoding, guard,
 * metrics) and the backend serving the variant (server). Unlike wall time, this barely moves with load
 * from other processes on a shared machine.
 */
async function cpuPerOp(op: Op, backendPid: number, iterations: number): Promise<{ client: number; server: number | null }> {
  for (let i = 0; i < Math.max(10, iterations / 10); i++) await op();
  const c0 = process.cpuUsage();
  const s0 = await cpuNs(backendPid);
  for (let i = 0; i < iterations; i++) await op();
  const s1 = await cpuNs(backendPid);
  const c = process.cpuUsage(c0);
  return {
    client: (c.user + c.system) / iterations,
    server: s0 === null || s1 === null ? null : (s1 - s0) / 1000 / iterations,
  };
}

export async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-bench-runner-"));
  // As root the server runs as a separate postgres user that must be able to enter the folder.
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir: join(dir, "data") });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const admin = new pg.Client({ connectionString: server.url("postgres") });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${DB}`);
    await admin.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
    await admin.end();
    const setup = new pg.Client({ connectionString: server.url(DB) });
    await setup.connect();
    await setup.query(`
      CREATE TABLE samples (ts timestamptz NOT NULL, host text NOT NULL, value double precision NOT NULL);
      INSERT INTO samples SELECT to_timestamp(${T0 / 1000} + g), 'web-' || (g % 8), random() * 100
        FROM generate_series(0, ${ROWS - 1}) g;
      CREATE INDEX samples_ts ON samples (ts);
      ANALYZE samples;
      GRANT SELECT ON samples TO ${ROLE};
    `);
    await setup.end();

    await loadGuardParser();
    const config = parseConfig({
      // The runner never opens the config store; it must still not be the source's own database, which the host
      // policy refuses. The bench server listens on loopback, allowed explicitly.
      DATABASE_URL: server.url("postgres"),
      SOURCE_ALLOWED_HOSTS: "127.0.0.1",
      SOURCE_SECRET_REFS: "BENCH:ws_bench",
      MAX_QUERY_ROWS: "5000",
      MAX_RESULT_BYTES: "4194304",
    }).config;
    // Every variant gets its own connection (and so its own backend): a backend that just answered the
    // previous op is faster to wake than one that sat idle, which would favour whichever variant runs second.
    const newRunner = () =>
      createQueryRunner({
        config,
        metrics: createMetrics(new Registry(), { defaultCollectors: false }),
        guard: createGuard(),
        secrets: createSecretResolver({ config, env: { BENCH_USERNAME: ROLE, BENCH_PASSWORD: PASSWORD } }),
        poolMax: 1,
      });
    const runner = newRunner();
    const execRunner = newRunner();
    cleanups.push(
      () => runner.closeAll(),
      () => execRunner.closeAll(),
    );
    const source: Source = {
      id: "src_bench",
      workspaceId: "ws_bench",
      name: "bench",
      host: "127.0.0.1",
      port: server.port,
      database: DB,
      sslmode: "disable",
      secretRef: "BENCH",
      schemas: ["public"],
      catalog,
      catalogRefreshedAt: new Date(0),
      notes: "",
      version: 1,
      createdAt: new Date(0),
      updatedAt: new Date(0),
    };
    const conn = { host: "127.0.0.1", port: server.port, database: DB, user: ROLE, password: PASSWORD };
    // Bare `pg` gets the pool settings of a source pool (lib/query/pools.ts), so the ratio is the runner's own cost:
    // the connect timeout arms a timer on every checkout, which a default pg.Pool would not pay.
    const poolSettings = {
      ...conn,
      max: 1,
      connectionTimeoutMillis: SOURCE_POOL_DEFAULTS.connectTimeoutMs,
      idleTimeoutMillis: SOURCE_POOL_DEFAULTS.idleTimeoutMs,
      keepAlive: true,
      application_name: "pulseboard",
    };
    const bare = new pg.Pool(poolSettings);
    const withOptions = new pg.Pool({ ...poolSettings, options: startupOptions(20_000) });
    // The server stops at the end; a pool must not treat that as an unhandled error.
    bare.on("error", () => {});
    withOptions.on("error", () => {});
    cleanups.push(
      () => bare.end(),
      () => withOptions.end(),
    );
    const naiveClient = new pg.Client(conn);
    await naiveClient.connect();
    const oneMessageClient = new pg.Client(conn);
    await oneMessageClient.connect();
    cleanups.push(
      () => naiveClient.end(),
      () => oneMessageClient.end(),
    );

    // ---- Byte cap first, while the heap is small: a would-be 1.28 GB result (5,000 rows of 256 KB).
    await runner.run({ source, sql: PANELS["1 row"], range: RANGE });
    const hugeSql = "SELECT repeat(md5(g::text), 8192) AS blob FROM generate_series(1, 5000) g";
    const stats: ReadStats = { rowsRead: 0, bytes: 0, wireBytes: 0 };
    // Start from a compacted heap: garbage left by an earlier benchmark in this process (npm run bench runs
    // them in one process) would otherwise be collected, and its pages moved, inside the measured window.
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    gc();
    gc();
    const rssBefore = process.memoryUsage.rss();
    const maxRssBefore = process.resourceUsage().maxRSS * 1024;
    let peak = rssBefore;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 1);
    const capStart = performance.now();
    let capError: unknown;
    try {
      await runner.execute({ source, sql: hugeSql, stats });
    } catch (err) {
      capError = err;
    }
    const capMs = performance.now() - capStart;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage.rss());
    const growth = Math.max(peak - rssBefore, process.resourceUsage().maxRSS * 1024 - maxRssBefore);
    const capCode = capError instanceof AppError ? capError.code : String(capError);

    // ---- Query overhead.
    const values = [new Date(RANGE.fromMs).toISOString(), new Date(RANGE.toMs).toISOString()];
    // The backend serving each variant (every pool has one connection), for its CPU time.
    const pidOf = async (q: () => Promise<{ rows: unknown[] }>) => {
      const row = (await q()).rows[0];
      return Number(Array.isArray(row) ? row[0] : (row as { pid: number }).pid);
    };
    const pidSql = "SELECT pg_backend_pid() AS pid";
    const backend = {
      bare: await pidOf(() => bare.query(pidSql)),
      runner: await pidOf(() => runner.execute({ source, sql: pidSql })),
      exec: await pidOf(() => execRunner.execute({ source, sql: pidSql })),
      naive: await pidOf(() => naiveClient.query(pidSql)),
      oneMessage: await pidOf(() => oneMessageClient.query(pidSql)),
      options: await pidOf(() => withOptions.query(pidSql)),
    };
    type Times = WallTimes & { client: number; server: number | null };
    const results: { label: string; samples: number; times: Map<string, Times>; rows: number }[] = [];
    for (const [label, panelSql] of Object.entries(PANELS)) {
      const verdict = createGuard().check(panelSql, catalog);
      if (!verdict.ok) throw new Error(`bench panel rejected: ${verdict.message}`);
      const text = verdict.sql;
      const rowsExpected = (await runner.run({ source, sql: panelSql, range: RANGE })).rows.length;
      const types = [1184, 1184];
      const variants: [string, Op, number][] = [
        ["bare pg (pool.query)", () => bare.query(text, values), backend.bare],
        ["guarded runner.run (chosen)", () => runner.run({ source, sql: panelSql, range: RANGE }), backend.runner],
        ["  its execution step alone", () => execRunner.execute({ source, sql: text, values, paramTypes: types }), backend.exec],
        [
          "4 awaited statements + pg-cursor",
          async () => {
            await naiveClient.query("BEGIN READ ONLY");
            await naiveClient.query("SET LOCAL statement_timeout = 20000");
            const cursor = naiveClient.query(new Cursor(text, values));
            await cursor.read(5001);
            await cursor.close();
            await naiveClient.query("ROLLBACK");
          },
          backend.naive,
        ],
        [
          "1 message BEGIN+SET, query, ROLLBACK",
          async () => {
            await oneMessageClient.query("BEGIN READ ONLY; SET LOCAL statement_timeout = 20000");
            await oneMessageClient.query(text, values);
            await oneMessageClient.query("ROLLBACK");
          },
          backend.oneMessage,
        ],
        ["startup options only (weaker)", () => withOptions.query(text, values), backend.options],
      ];
      const samples = label === "1 row" ? 3000 : 60;
      const wall = await measure(
        variants.map(([name, op]) => [name, op]),
        samples,
        label === "1 row" ? ROUNDS : 1,
      );
      // CPU: blocks of sequential ops, variants in turn, 7 rounds; the least disturbed (lowest) round of each
      // variant, the usual estimate of a cost when other processes share the CPUs.
      const cpuRounds = variants.map(() => [] as { client: number; server: number | null }[]);
      for (let round = 0; round < 7; round++) {
        for (let k = 0; k < variants.length; k++) {
          const [, op, pid] = variants[k] as [string, Op, number];
          cpuRounds[k]?.push(await cpuPerOp(op, pid, label === "1 row" ? 1000 : 20));
        }
      }
      const times = new Map<string, Times>();
      variants.forEach(([name], k) => {
        const rounds = (cpuRounds[k] ?? []).sort((a, b) => a.client + (a.server ?? 0) - (b.client + (b.server ?? 0)));
        const mid = rounds[0] as { client: number; server: number | null };
        times.set(name, { ...(wall.get(name) as WallTimes), ...mid });
      });
      results.push({ label, samples, times, rows: rowsExpected });
    }

    const us = (n: number) => `${n >= 100 ? n.toFixed(0) : n.toFixed(1)} us`.padStart(10);
    const mb = (n: number) => `${(n / 1_048_576).toFixed(1)} MB`;
    const cpuTotal = (t: Times) => (t.server === null ? null : t.client + t.server);
    const ratio = (a: number | null, b: number | null) => (a === null || b === null ? "   -  " : `${(a / b).toFixed(2)}x`);
    const opt = (n: number | null) => (n === null ? "-".padStart(10) : us(n));
    for (const r of results) {
      const base = r.times.get("bare pg (pool.query)") as Times;
      const target = r.label === "1 row" ? 1.3 : 1.1;
      console.log(`\n${r.label} (${r.rows} rows returned; wall: ${r.samples} samples per variant, interleaved op by op)`);
      console.log(
        `  ${"variant".padEnd(38)} ${"wall p50".padStart(10)}  ratio  ${"wall p10".padStart(10)}  ratio  ${"CPU node".padStart(10)} ${"CPU pg".padStart(10)} ${"CPU sum".padStart(10)}  ratio`,
      );
      for (const [name, t] of r.times) {
        console.log(
          `  ${name.padEnd(38)} ${us(t.p50)}  ${(t.p50 / base.p50).toFixed(2)}x ${us(t.p10)}  ${(t.p10 / base.p10).toFixed(2)}x ${us(t.client)} ${opt(t.server)} ${opt(cpuTotal(t))}  ${ratio(cpuTotal(t), cpuTotal(base))}`,
        );
      }
      const g = r.times.get("guarded runner.run (chosen)") as Times;
      console.log(
        `  => guarded / bare = ${(g.p50 / base.p50).toFixed(2)}x wall median, ${(g.p10 / base.p10).toFixed(2)}x wall p10, ${ratio(cpuTotal(g), cpuTotal(base)).trim()} CPU (target <= ${target}x)`,
      );
      if (g.roundP50.length > 1) {
        const perRound = g.roundP50.map((v, i) => v / (base.roundP50[i] as number));
        const sorted = [...perRound].sort((a, b) => a - b);
        console.log(
          `     wall median per round (${perRound.length} rounds of ${r.samples / perRound.length} samples): ${perRound.map((x) => `${x.toFixed(2)}x`).join(" ")}; median ${quantile(sorted, 0.5).toFixed(2)}x`,
        );
      }
    }
    const load = (await readFile("/proc/loadavg", "utf8").catch(() => "")).split(" ").slice(0, 3).join(" ");
    if (load) console.log(`\n(load average during the run: ${load}; wall times include scheduling delay, CPU times do not)`);
    console.log("\nbyte cap (MAX_RESULT_BYTES 4 MiB, MAX_QUERY_ROWS 5000) on a would-be 1.28 GB result:");
    console.log(`  outcome                       ${capCode}`);
    console.log(`  rows read before the stop     ${stats.rowsRead} of 5000`);
    console.log(`  bytes received on the wire    ${mb(stats.wireBytes)}`);
    console.log(`  time to refuse                ${capMs.toFixed(0)} ms`);
    console.log(`  peak RSS growth               ${mb(growth)} (target < 64 MB)`);
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
