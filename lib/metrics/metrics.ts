import { readdir } from "node:fs/promises";
import { Counter, Gauge, Histogram, type Registry, collectDefaultMetrics } from "prom-client";
import type { GuardReason } from "../sql-guard/verdict.ts";
import { LabelCap, OVERFLOW_LABEL } from "./label-cap.ts";

export const LLM_ROUTES = ["generate", "source_draft", "chat"] as const;
export type LlmRoute = (typeof LLM_ROUTES)[number];
export type LlmOutcome = "admitted" | "rate_limited" | "over_budget";

/**
 * The service's eight metrics on a registry that is passed in. Every opaque-id label goes through
 * a LabelCap so no label exceeds 500 distinct values; no user text is ever a label value.
 */
export interface Metrics {
  registry: Registry;
  observePollerTick(dashboardId: string, seconds: number): void;
  observeQuery(sourceId: string, outcome: "ok" | "error", seconds: number, rows?: number): void;
  setSseSubscribers(dashboardId: string, count: number): void;
  setPollersActive(count: number): void;
  addLlmTokens(workspaceId: string, model: string, input: number, output: number): void;
  countLlmRequest(route: LlmRoute, outcome: LlmOutcome): void;
  countGuardRejection(reason: GuardReason): void;
  /** Drops every series of a dashboard whose poller stopped. */
  dropDashboard(dashboardId: string): void;
  /** Drops every series of a deleted source and frees its label slot, so series exist only for stored sources. */
  dropSource(sourceId: string): void;
  /** Refreshes the process and runtime metrics (reads /proc); runs on a timer, never during a scrape. */
  sampleProcessMetrics(): Promise<void>;
}

/** How often the default process/runtime collectors are sampled. */
export const PROCESS_SAMPLE_INTERVAL_MS = 5_000;

/**
 * Registers prom-client's default collectors (prefix `svc_`) and takes their `collect` hooks off the
 * scrape path: some read /proc (open file descriptors, memory), and a scrape must do no I/O. The hooks
 * run on a timer instead, so a scrape only reads the values they last stored in memory.
 */
function registerSampledDefaultMetrics(registry: Registry, intervalMs: number): () => Promise<void> {
  const before = new Set(registry.getMetricsAsArray().map((m) => m.name));
  collectDefaultMetrics({ register: registry, prefix: "svc_" });
  const hooks: (() => unknown)[] = [];
  for (const metric of registry.getMetricsAsArray()) {
    if (before.has(metric.name)) continue;
    const m = metric as unknown as { collect?: () => unknown };
    if (typeof m.collect === "function") {
      // prom-client counts open descriptors with a synchronous readdir of /proc/self/fd: on a stream host holding
      // 10,000 sockets that blocks the event loop for tens of milliseconds every sample, in the middle of whatever
      // tick's writes are due. The same count is read on libuv's thread pool instead.
      const total = TOTAL_OF[metric.name];
      hooks.push(
        metric.name === "svc_process_open_fds"
          ? openFdsHook(metric as unknown as Gauge)
          : total !== undefined
            ? totalHook(metric as unknown as Gauge, registry, total)
            : m.collect.bind(metric),
      );
      m.collect = undefined;
    }
  }
  const sample = async () => {
    for (const hook of hooks) {
      await hook();
      // One collector per turn of the event loop: the ones that walk every handle (active handles and resources,
      // O(sockets)) never run back to back while a tick's writes wait.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  void sample();
  setInterval(() => void sample(), intervalMs).unref();
  return sample;
}

/**
 * The totals of the active handles and resources, and the per-type gauges they are the sum of. prom-client's own
 * hooks walk every handle (or resource) again for the total: on a stream host holding 10,000 sockets each walk costs
 * several milliseconds of the event loop. The per-type gauge's hook runs first (prom-client registers it first), so
 * the total is its sum.
 */
const TOTAL_OF: Readonly<Record<string, string>> = {
  svc_nodejs_active_handles_total: "svc_nodejs_active_handles",
  svc_nodejs_active_resources_total: "svc_nodejs_active_resources",
};

/** Sets a total gauge to the sum of the per-type gauge `of` as its own hook last left it. */
function totalHook(gauge: Gauge, registry: Registry, of: string): () => Promise<void> {
  return async () => {
    const byType = registry.getSingleMetric(of) as Gauge | undefined;
    if (!byType) return;
    const { values } = await byType.get();
    gauge.set(values.reduce((sum, v) => sum + v.value, 0));
  };
}

/** process_open_fds as prom-client computes it (entries of /proc/self/fd, less the one reading it), read asynchronously. */
function openFdsHook(gauge: Gauge): () => Promise<void> {
  return async () => {
    if (process.platform !== "linux") return;
    try {
      gauge.set((await readdir("/proc/self/fd")).length - 1);
    } catch {
      // As prom-client: a failed read leaves the last value.
    }
  };
}

/** Buckets for query and tick wall time: 1 ms .. 30 s. */
const TIME_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30];
const ROW_BUCKETS = [0, 1, 10, 50, 100, 500, 1000, 2500, 5000, 10000];

/** Registers the service's metrics and the `svc_`-prefixed default collectors on `registry`. */
export function createMetrics(registry: Registry, opts: { defaultCollectors?: boolean; sampleIntervalMs?: number } = {}): Metrics {
  const sampleProcessMetrics =
    opts.defaultCollectors === false
      ? async () => {}
      : registerSampledDefaultMetrics(registry, opts.sampleIntervalMs ?? PROCESS_SAMPLE_INTERVAL_MS);

  const dashboards = new LabelCap();
  const sources = new LabelCap();
  const workspaces = new LabelCap();
  const models = new LabelCap();

  const tick = new Histogram({
    name: "svc_poller_tick_duration_seconds",
    help: "Wall time of one poller tick across every panel of the dashboard.",
    labelNames: ["dashboard"],
    buckets: TIME_BUCKETS,
    registers: [registry],
  });
  const queryDuration = new Histogram({
    name: "svc_query_duration_seconds",
    help: "One guarded query including connect and rollback.",
    labelNames: ["source", "outcome"],
    buckets: TIME_BUCKETS,
    registers: [registry],
  });
  const queryRows = new Histogram({
    name: "svc_query_rows",
    help: "Rows returned by one guarded query.",
    labelNames: ["source"],
    buckets: ROW_BUCKETS,
    registers: [registry],
  });
  const subscribers = new Gauge({
    name: "svc_sse_subscribers",
    help: "Browsers attached to a dashboard's stream on this instance.",
    labelNames: ["dashboard"],
    registers: [registry],
  });
  const pollers = new Gauge({
    name: "svc_pollers_active",
    help: "Pollers running on this instance.",
    registers: [registry],
  });
  const llmTokens = new Counter({
    name: "svc_llm_tokens_total",
    help: "Tokens billed to a workspace.",
    labelNames: ["workspace", "model", "direction"],
    registers: [registry],
  });
  const llmRequests = new Counter({
    name: "svc_llm_requests_total",
    help: "Model requests at the admission gate.",
    labelNames: ["route", "outcome"],
    registers: [registry],
  });
  const rejections = new Counter({
    name: "svc_sql_validation_rejections_total",
    help: "Statements refused by the SQL guard.",
    labelNames: ["reason"],
    registers: [registry],
  });
  pollers.set(0);

  const overflowSubscribers = new Map<string, number>();
  const setOverflowSubscribers = () => {
    let sum = 0;
    for (const n of overflowSubscribers.values()) sum += n;
    if (overflowSubscribers.size === 0) subscribers.remove({ dashboard: OVERFLOW_LABEL });
    else subscribers.set({ dashboard: OVERFLOW_LABEL }, sum);
  };

  // Series that share the `other` bucket are only dropped when no capped dashboard feeds them; keep it simple
  // and never drop `other`, so totals stay monotonic for the overflow bucket.
  return {
    registry,
    sampleProcessMetrics,
    observePollerTick(dashboardId, seconds) {
      tick.observe({ dashboard: dashboards.value(dashboardId) }, seconds);
    },
    observeQuery(sourceId, outcome, seconds, rows) {
      const source = sources.value(sourceId);
      queryDuration.observe({ source, outcome }, seconds);
      if (outcome === "ok" && rows !== undefined) queryRows.observe({ source }, rows);
    },
    setSseSubscribers(dashboardId, count) {
      const label = dashboards.value(dashboardId);
      if (label === dashboardId) {
        // A dashboard that just won a freed slot stops counting towards `other`.
        if (overflowSubscribers.delete(dashboardId)) setOverflowSubscribers();
        subscribers.set({ dashboard: label }, count);
        return;
      }
      // Every dashboard beyond the cap shares `other`: the gauge is their sum, never the last one written.
      overflowSubscribers.set(dashboardId, count);
      setOverflowSubscribers();
    },
    setPollersActive(count) {
      pollers.set(count);
    },
    addLlmTokens(workspaceId, model, input, output) {
      const labels = { workspace: workspaces.value(workspaceId), model: models.value(model || "unknown") };
      if (input > 0) llmTokens.inc({ ...labels, direction: "input" }, input);
      if (output > 0) llmTokens.inc({ ...labels, direction: "output" }, output);
    },
    countLlmRequest(route, outcome) {
      llmRequests.inc({ route, outcome });
    },
    countGuardRejection(reason) {
      rejections.inc({ reason });
    },
    dropSource(sourceId) {
      if (!sources.has(sourceId)) return;
      for (const outcome of ["ok", "error"]) queryDuration.remove({ source: sourceId, outcome });
      queryRows.remove({ source: sourceId });
      sources.forget(sourceId);
    },
    dropDashboard(dashboardId) {
      if (overflowSubscribers.delete(dashboardId)) setOverflowSubscribers();
      if (!dashboards.has(dashboardId)) return;
      tick.remove({ dashboard: dashboardId });
      subscribers.remove({ dashboard: dashboardId });
      dashboards.forget(dashboardId);
    },
  };
}
