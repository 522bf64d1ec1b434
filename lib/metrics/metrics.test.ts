import { Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import { LABEL_CAP, LabelCap, OVERFLOW_LABEL } from "./label-cap.ts";
import { createMetrics } from "./metrics.ts";

/** The distinct values of `label` among the samples of `metric` in one scrape. */
async function labelValues(registry: Registry, metric: string, label: string): Promise<Set<string>> {
  const json = await registry.getMetricsAsJSON();
  const m = json.find((x) => x.name === metric);
  return new Set((m?.values ?? []).map((v) => String((v.labels as Record<string, unknown>)[label])).filter((v) => v !== "undefined"));
}

describe("label cap", () => {
  test("501 distinct dashboard ids yield 500 values plus `other`", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultCollectors: false });
    for (let i = 0; i < 501; i++) {
      metrics.observePollerTick(`db_${i}`, 0.01);
      metrics.setSseSubscribers(`db_${i}`, 1);
    }
    for (const name of ["svc_poller_tick_duration_seconds", "svc_sse_subscribers"]) {
      const values = await labelValues(registry, name, "dashboard");
      expect(values.size).toBe(LABEL_CAP + 1);
      expect(values.has(OVERFLOW_LABEL)).toBe(true);
      expect(values.has("db_0")).toBe(true);
      expect(values.has("db_499")).toBe(true);
      expect(values.has("db_500")).toBe(false);
    }
  });

  test("the `other` gauge is the sum of every dashboard beyond the cap", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultCollectors: false });
    for (let i = 0; i < LABEL_CAP; i++) metrics.setSseSubscribers(`db_${i}`, 1);
    metrics.setSseSubscribers("db_x", 3);
    metrics.setSseSubscribers("db_y", 4);
    expect(await registry.getSingleMetricAsString("svc_sse_subscribers")).toContain('svc_sse_subscribers{dashboard="other"} 7');
    metrics.dropDashboard("db_x");
    expect(await registry.getSingleMetricAsString("svc_sse_subscribers")).toContain('svc_sse_subscribers{dashboard="other"} 4');
    metrics.dropDashboard("db_y");
    expect(await registry.getSingleMetricAsString("svc_sse_subscribers")).not.toContain('dashboard="other"');
  });

  test("source, workspace and model labels are capped too", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultCollectors: false });
    for (let i = 0; i < 501; i++) {
      metrics.observeQuery(`src_${i}`, "ok", 0.01, 3);
      metrics.addLlmTokens(`ws_${i}`, `model_${i}`, 1, 1);
    }
    expect((await labelValues(registry, "svc_query_duration_seconds", "source")).size).toBe(501);
    expect((await labelValues(registry, "svc_query_duration_seconds", "source")).has("other")).toBe(true);
    expect((await labelValues(registry, "svc_query_rows", "source")).size).toBe(501);
    expect((await labelValues(registry, "svc_llm_tokens_total", "workspace")).size).toBe(501);
    expect((await labelValues(registry, "svc_llm_tokens_total", "model")).size).toBe(501);
  });

  test("a forgotten value frees its slot", () => {
    const cap = new LabelCap(2);
    expect([cap.value("a"), cap.value("b"), cap.value("c")]).toEqual(["a", "b", "other"]);
    cap.forget("a");
    expect(cap.value("c")).toBe("c");
  });
});

describe("series lifecycle", () => {
  test("a stopped poller's series are gone from the next scrape", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultCollectors: false });
    metrics.observePollerTick("db_a", 0.2);
    metrics.setSseSubscribers("db_a", 2);
    metrics.observePollerTick("db_b", 0.2);
    metrics.setSseSubscribers("db_b", 1);
    const before = await registry.metrics();
    expect(before).toContain('dashboard="db_a"');

    metrics.dropDashboard("db_a");
    const after = await registry.metrics();
    expect(after).not.toContain('dashboard="db_a"');
    expect(after).toContain('svc_sse_subscribers{dashboard="db_b"} 1');
    expect(after).toContain('svc_poller_tick_duration_seconds_count{dashboard="db_b"} 1');
  });

  test("a deleted source's series are dropped and its label slot freed", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultCollectors: false });
    metrics.observeQuery("src_gone", "ok", 0.1, 2);
    metrics.observeQuery("src_gone", "error", 0.1);
    metrics.observeQuery("src_kept", "ok", 0.1, 2);
    metrics.dropSource("src_gone");
    const text = await registry.metrics();
    expect(text).not.toContain('source="src_gone"');
    expect(text).toContain('svc_query_rows_count{source="src_kept"} 1');
    metrics.dropSource("never_seen");
  });

  test("query rows are observed only for a successful statement", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultCollectors: false });
    metrics.observeQuery("src_1", "error", 0.5, 10);
    metrics.observeQuery("src_1", "ok", 0.5, 10);
    const text = await registry.metrics();
    expect(text).toContain('svc_query_rows_count{source="src_1"} 1');
    expect(text).toContain('svc_query_duration_seconds_count{source="src_1",outcome="error"} 1');
  });
});

describe("registry", () => {
  test("the eight service metrics with exactly its names and types, plus svc_-prefixed default collectors", async () => {
    const registry = new Registry();
    createMetrics(registry);
    const json = await registry.getMetricsAsJSON();
    const types = Object.fromEntries(json.map((m) => [m.name, String(m.type)]));
    expect(types).toMatchObject({
      svc_poller_tick_duration_seconds: "histogram",
      svc_query_duration_seconds: "histogram",
      svc_query_rows: "histogram",
      svc_sse_subscribers: "gauge",
      svc_pollers_active: "gauge",
      svc_llm_tokens_total: "counter",
      svc_llm_requests_total: "counter",
      svc_sql_validation_rejections_total: "counter",
    });
    expect(types.svc_process_cpu_seconds_total).toBeDefined();
    expect(types.svc_nodejs_heap_size_used_bytes).toBeDefined();
    expect(json.every((m) => m.name.startsWith("svc_"))).toBe(true);
    // Exactly the documented labels, in their order.
    const labels = Object.fromEntries(
      registry.getMetricsAsArray().map((m) => [m.name, [...((m as unknown as { labelNames?: string[] }).labelNames ?? [])]]),
    );
    expect(labels).toMatchObject({
      svc_poller_tick_duration_seconds: ["dashboard"],
      svc_query_duration_seconds: ["source", "outcome"],
      svc_query_rows: ["source"],
      svc_sse_subscribers: ["dashboard"],
      svc_pollers_active: [],
      svc_llm_tokens_total: ["workspace", "model", "direction"],
      svc_llm_requests_total: ["route", "outcome"],
      svc_sql_validation_rejections_total: ["reason"],
    });
  });

  test("a scrape runs no collector hook: process metrics are sampled on a timer, off the scrape path", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { sampleIntervalMs: 60_000 });
    // prom-client calls a metric's `collect` during get()/metrics(); none may be left on the scrape path.
    const hooked = registry.getMetricsAsArray().filter((m) => typeof (m as unknown as { collect?: unknown }).collect === "function");
    expect(hooked.map((m) => m.name)).toEqual([]);
    await metrics.sampleProcessMetrics();
    const fds = await registry.getSingleMetricAsString("svc_process_open_fds");
    expect(Number(/svc_process_open_fds (\d+)/.exec(fds)?.[1])).toBeGreaterThan(0);
    const heap = await registry.getSingleMetricAsString("svc_nodejs_heap_size_used_bytes");
    expect(Number(/svc_nodejs_heap_size_used_bytes (\d+)/.exec(heap)?.[1])).toBeGreaterThan(0);
  });

  test("the active handles and resources totals are their per-type gauges' sums (one walk each per sample), and follow 30 more timers", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { sampleIntervalMs: 60_000 });
    const figures = async () => {
      await metrics.sampleProcessMetrics();
      const sum = async (name: string) => (await registry.getSingleMetric(name)!.get()).values.reduce((a, v) => a + v.value, 0);
      return {
        handles: await sum("svc_nodejs_active_handles"),
        handlesTotal: await sum("svc_nodejs_active_handles_total"),
        resources: await sum("svc_nodejs_active_resources"),
        resourcesTotal: await sum("svc_nodejs_active_resources_total"),
      };
    };
    // createMetrics starts a first sample; this one, started after it and advancing hook by hook with it, ends after it.
    await metrics.sampleProcessMetrics();
    // One walk of every handle and one of every resource per sample: the totals reuse the per-type walks.
    const proc = process as unknown as { _getActiveHandles(): unknown[]; getActiveResourcesInfo(): string[] };
    const walks = { handles: 0, resources: 0 };
    const [handlesOf, resourcesOf] = [proc._getActiveHandles, proc.getActiveResourcesInfo];
    proc._getActiveHandles = () => {
      walks.handles++;
      return handlesOf.call(process);
    };
    proc.getActiveResourcesInfo = () => {
      walks.resources++;
      return resourcesOf.call(process);
    };
    try {
      await metrics.sampleProcessMetrics();
    } finally {
      [proc._getActiveHandles, proc.getActiveResourcesInfo] = [handlesOf, resourcesOf];
    }
    expect(walks).toEqual({ handles: 1, resources: 1 });
    const before = await figures();
    expect(before.handlesTotal).toBe(before.handles);
    expect(before.resourcesTotal).toBe(before.resources);
    const timers = Array.from({ length: 30 }, () => setTimeout(() => {}, 60_000));
    try {
      const after = await figures();
      expect(after.resourcesTotal).toBe(after.resources);
      expect(after.resourcesTotal).toBeGreaterThan(before.resourcesTotal);
    } finally {
      for (const t of timers) clearTimeout(t);
    }
  });

  test.runIf(process.platform === "linux")(
    "svc_process_open_fds counts this process's descriptors (read on the thread pool): 20 more files open, 20 more counted",
    async () => {
      const { openSync, closeSync } = await import("node:fs");
      const registry = new Registry();
      const metrics = createMetrics(registry, { sampleIntervalMs: 60_000 });
      const read = async () => {
        await metrics.sampleProcessMetrics();
        return Number(/svc_process_open_fds (\d+)/.exec(await registry.getSingleMetricAsString("svc_process_open_fds"))?.[1]);
      };
      const before = await read();
      const fds = Array.from({ length: 20 }, () => openSync("/dev/null", "r"));
      try {
        expect(await read()).toBe(before + 20);
      } finally {
        for (const fd of fds) closeSync(fd);
      }
      expect(await read()).toBe(before);
    },
  );

  test("two services in one process keep separate registries", async () => {
    const a = createMetrics(new Registry());
    const b = createMetrics(new Registry());
    a.setPollersActive(3);
    expect(await b.registry.getSingleMetricAsString("svc_pollers_active")).toContain("svc_pollers_active 0");
  });
});
