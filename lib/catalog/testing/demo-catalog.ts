// A realistic source catalog (http_requests, host_metrics, services, metrics.deploys), the DDL that creates it
// and panel SQL over it: the one catalog fixture of the guard's tests, its CLI and benchmark, and dashboard saves.
import type { Catalog } from "../types.ts";

/** http_requests and host_metrics have time columns, services has none, metrics.deploys sits outside public. */
export const DEMO_CATALOG: Catalog = {
  tables: [
    {
      schema: "public",
      name: "http_requests",
      timeColumn: "ts",
      columns: [
        { name: "ts", type: "timestamp with time zone" },
        { name: "service", type: "text" },
        { name: "route", type: "text" },
        { name: "status", type: "integer" },
        { name: "latency_ms", type: "double precision" },
      ],
    },
    {
      schema: "public",
      name: "host_metrics",
      timeColumn: "time",
      columns: [
        { name: "time", type: "timestamp with time zone" },
        { name: "host", type: "text" },
        { name: "cpu", type: "double precision" },
        { name: "mem_bytes", type: "bigint" },
      ],
    },
    {
      schema: "public",
      name: "services",
      timeColumn: null,
      columns: [
        { name: "name", type: "text" },
        { name: "team", type: "text" },
        { name: "tier", type: "text" },
      ],
    },
    {
      schema: "metrics",
      name: "deploys",
      timeColumn: "at",
      columns: [
        { name: "at", type: "timestamp with time zone" },
        { name: "service", type: "text" },
        { name: "version", type: "text" },
      ],
    },
  ],
};

/** DDL that creates DEMO_CATALOG's tables (for running guarded SQL on a real database). */
export const DEMO_DDL = `
CREATE TABLE http_requests (ts timestamptz NOT NULL, service text NOT NULL, route text NOT NULL,
  status integer NOT NULL, latency_ms double precision NOT NULL);
CREATE TABLE host_metrics (time timestamptz NOT NULL, host text NOT NULL, cpu double precision, mem_bytes bigint);
CREATE TABLE services (name text PRIMARY KEY, team text, tier text);
CREATE SCHEMA metrics;
CREATE TABLE metrics.deploys (at timestamptz NOT NULL, service text NOT NULL, version text NOT NULL);
INSERT INTO services VALUES ('api', 'core', 'critical'), ('web', 'frontend', 'critical'), ('batch', 'data', 'standard');
INSERT INTO http_requests
  SELECT now() - (i || ' seconds')::interval, (ARRAY['api','web','batch'])[1 + i % 3], '/r' || (i % 7),
         (ARRAY[200,200,200,201,404,500])[1 + i % 6], (i % 97) * 1.5
  FROM generate_series(1, 5000) AS i;
INSERT INTO host_metrics
  SELECT now() - (i * 10 || ' seconds')::interval, 'host-' || (i % 4), (i % 100) / 100.0, 1000000 * (i % 50)
  FROM generate_series(1, 2000) AS i;
INSERT INTO metrics.deploys VALUES (now() - interval '10 minutes', 'api', 'v42');
`;

/** Dashboard panel SQL that the guard must accept against DEMO_CATALOG. */
export const REALISTIC_PANEL_SQL: readonly string[] = [
  `SELECT $__timeGroup(ts, '1m') AS time, service, count(*) AS requests
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1`,
  `SELECT $__timeGroup(ts, $__interval) AS time,
          percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT $__timeGroup(ts, '5m') AS time,
          sum(CASE WHEN status >= 500 THEN 1 ELSE 0 END)::float / nullif(count(*), 0) AS error_rate
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT count(*) AS total FROM http_requests WHERE $__timeFilter(ts)`,
  `SELECT route, count(*) AS hits, round(avg(latency_ms)::numeric, 1) AS avg_ms
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY route ORDER BY hits DESC LIMIT 10`,
  `SELECT $__timeGroup(time, $__interval) AS time, host, avg(cpu) AS cpu
   FROM host_metrics WHERE $__timeFilter(time) GROUP BY 1, 2 ORDER BY 1`,
  `SELECT host, max(mem_bytes) / 1024.0 / 1024 / 1024 AS mem_gb
   FROM host_metrics WHERE $__timeFilter(time) GROUP BY host ORDER BY host`,
  `SELECT s.team, count(*) AS requests
   FROM http_requests r JOIN services s ON s.name = r.service
   WHERE $__timeFilter(r.ts) GROUP BY s.team ORDER BY requests DESC`,
  `WITH per_minute AS (
     SELECT date_trunc('minute', ts) AS minute, count(*) AS n
     FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1
   )
   SELECT minute AS time, n - lag(n) OVER (ORDER BY minute) AS delta FROM per_minute ORDER BY 1`,
  `SELECT time, host, avg(cpu) OVER (PARTITION BY host ORDER BY time ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS cpu_smooth
   FROM host_metrics WHERE $__timeFilter(time) ORDER BY time`,
  `SELECT date_trunc('hour', ts) AS time, count(*) FROM http_requests
   WHERE ts >= $__timeFrom() AND ts < $__timeTo() GROUP BY 1 ORDER BY 1`,
  `SELECT extract(epoch FROM ts) * 1000 AS time_ms, latency_ms FROM http_requests
   WHERE $__timeFilter(ts) AND latency_ms > 100 ORDER BY ts DESC LIMIT 500`,
  `SELECT $__timeGroup(ts, '1m') AS time,
          count(*) FILTER (WHERE status >= 500) AS errors,
          count(*) FILTER (WHERE status < 500) AS ok
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT $__timeGroup(ts, '5m') AS time, 'requests' AS metric, count(*)::float AS value
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1
   UNION ALL
   SELECT $__timeGroup(time, '5m'), 'cpu', avg(cpu) FROM host_metrics WHERE $__timeFilter(time) GROUP BY 1
   ORDER BY 1`,
  `SELECT service, count(*) FROM http_requests
   WHERE $__timeFilter(ts) AND service IN (SELECT name FROM services WHERE tier = 'critical')
   GROUP BY service`,
  `SELECT s.name FROM services s
   WHERE EXISTS (SELECT 1 FROM http_requests r WHERE r.service = s.name AND $__timeFilter(r.ts) AND r.status >= 500)`,
  `SELECT width_bucket(latency_ms, 0, 500, 10) AS bucket, count(*) FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT g.time, coalesce(c.n, 0) AS requests
   FROM generate_series(date_trunc('minute', $__timeFrom()::timestamptz), $__timeTo()::timestamptz, interval '1 minute') AS g(time)
   LEFT JOIN (SELECT date_trunc('minute', ts) AS minute, count(*) AS n FROM http_requests
              WHERE $__timeFilter(ts) GROUP BY 1) c ON c.minute = g.time
   ORDER BY 1`,
  `SELECT to_char(date_trunc('day', ts), 'YYYY-MM-DD') AS day, count(*) FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT service, coalesce(sum(latency_ms) / nullif(count(*), 0), 0) AS avg_latency
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT s.name, top.route, top.hits FROM services s
   CROSS JOIN LATERAL (
     SELECT route, count(*) AS hits FROM http_requests r
     WHERE r.service = s.name AND $__timeFilter(r.ts) GROUP BY route ORDER BY hits DESC LIMIT 3
   ) AS top ORDER BY s.name, top.hits DESC`,
  `SELECT DISTINCT ON (host) host, time, cpu, mem_bytes FROM host_metrics
   WHERE $__timeFilter(time) ORDER BY host, time DESC`,
  `SELECT name, team, tier FROM services ORDER BY name`,
  `SELECT service, stddev(latency_ms) AS jitter, variance(latency_ms) FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT team, string_agg(name, ', ' ORDER BY name) AS services FROM services GROUP BY team`,
  `SELECT json_build_object('service', service, 'requests', count(*)) AS doc FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT * FROM (
     SELECT route, count(*) AS hits, row_number() OVER (ORDER BY count(*) DESC) AS rank
     FROM http_requests WHERE $__timeFilter(ts) GROUP BY route
   ) ranked WHERE rank <= 5`,
  `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50,
          percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms) AS p99
   FROM http_requests WHERE $__timeFilter(ts)`,
  `SELECT (status / 100)::text || 'xx' AS class, count(*) FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT v.service, count(r.*) AS requests
   FROM (VALUES ('api'), ('web')) AS v(service)
   LEFT JOIN http_requests r ON r.service = v.service AND $__timeFilter(r.ts)
   GROUP BY v.service`,
  `SELECT ts AT TIME ZONE 'UTC' AS utc_time, timezone('Europe/Paris', ts) AS paris, status
   FROM http_requests WHERE $__timeFilter(ts) ORDER BY ts DESC LIMIT 20`,
  `SELECT $__timeGroup(time, '1h') AS time, max(cpu) AS peak FROM public.host_metrics AS h
   WHERE $__timeFilter(h.time) GROUP BY 1 ORDER BY 1`,
  `SELECT d.at AS time, d.service, d.version FROM metrics.deploys d WHERE $__timeFilter(d.at) ORDER BY d.at`,
  `SELECT host, greatest(max(cpu), 0) AS cpu, least(min(cpu), 1) AS cpu_min FROM host_metrics
   WHERE $__timeFilter(time) GROUP BY host`,
  `SELECT n, CURRENT_TIMESTAMP AS at FROM generate_series(1, 3) AS tiers(n)`,
  `TABLE services`,
  `SELECT service, array_agg(DISTINCT route) AS routes, bool_or(status >= 500) AS had_errors
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT lower(service) AS svc, upper(left(route, 8)) AS r, length(route), count(*)
   FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1, 2, 3`,
  `SELECT $__timeGroup(ts, $__interval) AS time, avg(latency_ms) AS avg_ms
   FROM http_requests WHERE ts BETWEEN $__timeFrom() AND $__timeTo() AND service = 'api'
   GROUP BY 1 ORDER BY 1;`,
  `SELECT pg_catalog.count(*), pg_catalog.max(ts) FROM http_requests WHERE $__timeFilter(ts)`,
  `SELECT r.service, count(*) AS requests, avg(h.cpu) AS cpu
   FROM http_requests r JOIN host_metrics h ON h.host = 'host-' || (r.status % 4)::text AND $__timeFilter(h.time)
   WHERE $__timeFilter(r.ts) GROUP BY 1`,
  `WITH errors AS (SELECT service, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) AND status >= 500 GROUP BY 1),
        totals AS (SELECT service, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1)
   SELECT t.service, coalesce(e.n, 0)::float / t.n AS error_ratio FROM totals t LEFT JOIN errors e USING (service)`,
  `SELECT route, count(*) FROM http_requests
   WHERE $__timeFilter(ts) AND route LIKE '/r\\_%' ESCAPE '\\' AND (status = 500 OR status = 404) GROUP BY 1`,
  `SELECT (h).time, (h).host, (h.*).cpu FROM host_metrics h WHERE $__timeFilter(h.time) ORDER BY 1 DESC LIMIT 50`,
  `SELECT date_bin($__interval, ts, $__timeFrom()) AS time, count(*) FROM http_requests
   WHERE ts >= $__timeFrom() - $__interval AND ts < $__timeTo() GROUP BY 1 ORDER BY 1`,
  `SELECT service, latency_ms::numeric(10, 1) AS ms, ts::timestamptz AS at, status::text FROM http_requests
   WHERE $__timeFilter(ts) ORDER BY latency_ms DESC LIMIT 5`,
  `SELECT format('%s %s', service, route) AS label, replace(route, '/', ' / ') AS path, count(*) FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY 1, 2`,
  `SELECT t AS time, count(r.ts) AS requests
   FROM generate_series($__timeFrom()::timestamptz, $__timeTo()::timestamptz, $__interval) AS t
   LEFT JOIN http_requests r ON r.ts >= t AND r.ts < t + $__interval AND $__timeFilter(r.ts)
   GROUP BY 1 ORDER BY 1`,
  `SELECT service, ntile(4) OVER (ORDER BY avg(latency_ms)) AS quartile FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY service`,
  // gap fills, widened bounds, per-row formatting and aggregates the size analysis accepts
  `SELECT g.t AS time, count(r.ts) AS requests
   FROM generate_series(date_bin($__interval, $__timeFrom(), timestamptz 'epoch'), $__timeTo(), $__interval) AS g(t)
   LEFT JOIN http_requests r ON r.ts >= g.t AND r.ts < g.t + $__interval AND $__timeFilter(r.ts)
   GROUP BY 1 ORDER BY 1`,
  `SELECT date_trunc('day', ts) AS day, count(*) FROM http_requests
   WHERE ts >= date_trunc('day', $__timeFrom()) AND ts < $__timeTo() GROUP BY 1 ORDER BY 1`,
  `SELECT ts AS time, latency_ms - lag(latency_ms) OVER (ORDER BY ts) AS delta
   FROM http_requests WHERE ts >= $__timeFrom() - interval '1 minute' AND ts < $__timeTo() ORDER BY 1`,
  `SELECT service, string_agg(format('%s=%s', route, status), ', ') AS pairs FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT service, string_agg(DISTINCT replace(route, '/api/', ''), ', ') AS routes FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT g AS bytes FROM generate_series(0, 4000000000, 250000000) AS g`,
  `SELECT date(ts) AS day, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  `SELECT service, array_to_string(array_agg(DISTINCT route), ', ') AS routes FROM http_requests
   WHERE $__timeFilter(ts) GROUP BY service`,
  `SELECT corr(latency_ms, status) AS r FROM http_requests WHERE $__timeFilter(ts)`,
  `SELECT jsonb_object_agg(service, n) AS doc
   FROM (SELECT service, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY service) c`,
  `SELECT g.t AS time, x.n
   FROM generate_series($__timeFrom()::timestamptz, $__timeTo()::timestamptz, $__interval) AS g(t)
   CROSS JOIN LATERAL (SELECT count(*) AS n FROM http_requests WHERE ts >= g.t AND ts < g.t + $__interval) x
   ORDER BY 1`,
];
