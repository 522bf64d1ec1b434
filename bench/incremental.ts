// npm run bench -- incremental: what an incremental tick costs against a full re-query, side by side in one run.
// An embedded PostgreSQL holds the demo's metrics tables with 24 h of history at the demo's density (3 requests
// a second, 4 hosts every 10 s). The demo dashboard's panels are viewed over the last 24 hours at a 5 s refresh:
// each tick appends 5 s of rows, then one arm runs every panel's full query and the other runs the stream host's
// incremental panels (stream-host/incremental.ts, the real splice and plan). Rows read are counted by the
// executor (EXPLAIN ANALYZE of the same statement and values: every scan's rows plus those its filter removed); bytes are the SSE frames one viewer receives; every incremental result is compared with
// the full query of the same tick.
import { mkdtemp, rm } from "node:fs/promises";
import { chmod } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { DEMO_CATALOG } from "../lib/catalog/testing/demo-catalog.ts";
import { demoDashboardSpec } from "../lib/demo/seed.ts";
import { startEmbeddedPostgres } from "../lib/embedded/postgres.ts";
import type { Cell, QueryResult } from "../lib/live/frames.ts";
import { planIncremental } from "../lib/live/incremental.ts";
import { createGuard, loadGuardParser, parseTree } from "../lib/sql-guard/index.ts";
import { intervalFor } from "../lib/sql-guard/interval.ts";
import { createIncrementalPanels } from "../stream-host/incremental.ts";
import type { LoadedDashboard, RunPanel, TickRange } from "../stream-host/poller.ts";
import { encodeEvent } from "../stream-host/sse.ts";

const TICKS = 40;
const REFRESH_MS = 5_000;
const RANGE_MS = 24 * 3_600_000;
const MAX_POINTS = 720;

/** Rows the scan nodes of an EXPLAIN ANALYZE plan read: their output rows and the rows their filters removed, times loops. */
function scannedRows(plan: unknown): number {
  let total = 0;
  const visit = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== "object" || node === null) return;
    const n = node as Record<string, unknown>;
    if (typeof n["Node Type"] === "string" && /Scan$/.test(n["Node Type"]) && typeof n["Relation Name"] === "string") {
      const loops = Number(n["Actual Loops"] ?? 1);
      total +=
        (Number(n["Actual Rows"] ?? 0) + Number(n["Rows Removed by Filter"] ?? 0) + Number(n["Rows Removed by Index Recheck"] ?? 0)) *
        loops;
    }
    for (const v of Object.values(n)) if (typeof v === "object") visit(v);
  };
  visit(plan);
  return total;
}

export async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-bench-incr-"));
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir: join(dir, "data") });
  const db = new pg.Client({ connectionString: server.url("postgres") });
  try {
    await db.connect();
    const T0 = Math.floor(Date.now() / 1000) * 1000;
    await db.query(`
      CREATE TABLE http_requests (ts timestamptz NOT NULL, service text NOT NULL, route text NOT NULL, status integer NOT NULL, latency_ms double precision NOT NULL);
      CREATE INDEX ON http_requests (ts);
      CREATE TABLE host_metrics (time timestamptz NOT NULL, host text NOT NULL, cpu double precision NOT NULL, mem_bytes bigint NOT NULL);
      CREATE INDEX ON host_metrics (time);`);
    const fill = async (fromMs: number, toMs: number) => {
      await db.query(
        `INSERT INTO http_requests SELECT to_timestamp(s::float8 + random()), (ARRAY['checkout','search','auth'])[1 + floor(random() * 3)::int],
           (ARRAY['/api/cart','/api/search','/login'])[1 + floor(random() * 3)::int], CASE WHEN random() < 0.02 THEN 500 ELSE 200 END, 20 + random() * 300
         FROM generate_series($1::numeric, $2::numeric - 1, 1) s, generate_series(1, 3)`,
        [fromMs / 1000, toMs / 1000],
      );
      await db.query(
        `INSERT INTO host_metrics SELECT to_timestamp(s::float8), h, 30 + random() * 40, (2e9 + 1e9 * random())::bigint
         FROM generate_series(ceil($1::numeric / 10) * 10, $2::numeric - 1, 10) s, unnest(ARRAY['web-1','web-2','db-1','db-2']) h`,
        [fromMs / 1000, toMs / 1000],
      );
    };
    await fill(T0 - RANGE_MS - 600_000, T0);
    await db.query("ANALYZE http_requests; ANALYZE host_metrics");
    const oids = (await db.query("SELECT array_agg(oid) AS o FROM pg_class WHERE relname IN ('http_requests', 'host_metrics')")).rows[0]
      .o as number[];

    await loadGuardParser();
    const guard = createGuard();
    let rowsRead = 0;
    // One panel's statement as the runner sends it (guard expansion, bind values, the window's bounds),
    // with the rows the server read for it counted inside its own transaction.
    const runPanel: RunPanel = async (panel, _d, range, _s, window) => {
      const v = guard.check(panel.sql, DEMO_CATALOG);
      if (!v.ok) throw new Error(v.message);
      const w = window ?? range;
      const values = v.params.map((p) =>
        p === "from"
          ? new Date(w.fromMs).toISOString()
          : p === "to"
            ? new Date(w.toMs).toISOString()
            : intervalFor(range.fromMs, range.toMs, MAX_POINTS),
      );
      // Rows read, as the executor counts them: every scan node's rows plus those its filter removed, per loop.
      const plan = await db.query({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${v.sql}`, values });
      rowsRead += scannedRows((plan.rows[0] as Record<string, unknown>)["QUERY PLAN"]);
      const started = performance.now();
      const r = await db.query({ text: v.sql, values, rowMode: "array" });
      const elapsedMs = performance.now() - started;
      const rows = r.rows.map((row: unknown[]) => row.map((c) => (c instanceof Date ? c.getTime() : c)) as Cell[]);
      return { columns: r.fields.map((f) => ({ name: f.name, type: String(f.dataTypeID) })), rows, truncated: false, elapsedMs };
    };

    const spec = demoDashboardSpec("src_bench");
    const dashboard: LoadedDashboard = { id: "d", workspaceId: "w", version: 1, spec };
    const signal = new AbortController().signal;
    const inc = createIncrementalPanels(
      {
        run: runPanel,
        plan: async (panel) => {
          const v = guard.check(panel.sql, DEMO_CATALOG);
          return v.ok ? planIncremental(v.sql, v.params, DEMO_CATALOG, parseTree) : { ok: false, reason: v.message };
        },
      },
      { lateRowsMs: 10_000, fullEvery: 720, maxWindowPoints: MAX_POINTS, maxRows: 5_000 },
    );
    const eligible = new Set<string>();
    for (const p of spec.panels) {
      const v = guard.check(p.sql, DEMO_CATALOG);
      if (v.ok && planIncremental(v.sql, v.params, DEMO_CATALOG, parseTree).ok) eligible.add(p.id);
    }

    // Float aggregates (avg) may differ in the last bits when the two arms scan rows in another order.
    const canonical = (r: QueryResult) =>
      JSON.stringify(
        r.rows
          .map((x) => JSON.stringify(x.map((c) => (typeof c === "number" && !Number.isInteger(c) ? Number(c.toPrecision(12)) : c))))
          .sort(),
      );
    const totals = { fullRows: 0, incRows: 0, fullRowsAll: 0, incRowsAll: 0, fullBytes: 0, incBytes: 0, fullBytesAll: 0, incBytesAll: 0 };
    let identical = true;
    let now = T0;
    // The first tick is a full query in both arms.
    for (const p of spec.panels) await inc.run(p, dashboard, { fromMs: now - RANGE_MS, toMs: now }, signal);
    for (let t = 0; t < TICKS; t++) {
      await fill(now, now + REFRESH_MS);
      now += REFRESH_MS;
      const range: TickRange = { fromMs: now - RANGE_MS, toMs: now };
      for (const p of spec.panels) {
        rowsRead = 0;
        const full = await runPanel(p, dashboard, range, signal);
        const fullRead = rowsRead;
        rowsRead = 0;
        const incremental = await inc.run(p, dashboard, range, signal);
        const incRead = rowsRead;
        if (canonical(full) !== canonical(incremental)) {
          if (identical)
            console.log(
              `first difference: panel ${p.id} at tick ${t}: ${full.rows.length} rows full, ${incremental.rows.length} incremental`,
            );
          identical = false;
        }
        const update = { panelId: p.id, at: now, result: incremental };
        const fullFrame = encodeEvent("panel", { panelId: p.id, at: now, result: full }).length;
        const delta = inc.deltaFor(update);
        const sentFrame = delta ? encodeEvent("panel-delta", delta).length : encodeEvent("panel", update).length;
        totals.fullRowsAll += fullRead;
        totals.incRowsAll += incRead;
        totals.fullBytesAll += fullFrame;
        totals.incBytesAll += sentFrame;
        if (eligible.has(p.id)) {
          totals.fullRows += fullRead;
          totals.incRows += incRead;
          totals.fullBytes += fullFrame;
          totals.incBytes += sentFrame;
        }
      }
    }
    const per = (n: number) => Math.round(n / TICKS);
    const ratio = (a: number, b: number) => (b === 0 ? "inf" : (a / b).toFixed(1));
    console.log(
      `setup: demo dashboard (${spec.panels.length} panels, ${eligible.size} incremental: ${[...eligible].join(", ")}), last 24 h, ${REFRESH_MS / 1000} s refresh, ${TICKS} ticks, 3 requests/s and 4 hosts/10 s appended per tick`,
    );
    console.log(
      `incremental: rows read per tick full ${per(totals.fullRows)} incremental ${per(totals.incRows)} ratio ${ratio(totals.fullRows, totals.incRows)}x (incremental panels)`,
    );
    console.log(
      `incremental: bytes per viewer per tick full ${per(totals.fullBytes)} delta ${per(totals.incBytes)} ratio ${ratio(totals.fullBytes, totals.incBytes)}x (incremental panels)`,
    );
    console.log(
      `whole dashboard: rows read per tick full ${per(totals.fullRowsAll)} incremental ${per(totals.incRowsAll)} ratio ${ratio(totals.fullRowsAll, totals.incRowsAll)}x; bytes per viewer per tick full ${per(totals.fullBytesAll)} sent ${per(totals.incBytesAll)} ratio ${ratio(totals.fullBytesAll, totals.incBytesAll)}x (stat, table and bar panels aggregate the whole range: full every tick)`,
    );
    console.log(`incremental: results identical over ${TICKS} ticks: ${identical ? "yes" : "no"}`);
  } finally {
    await db.end().catch(() => {});
    await server.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}
