import { Counter, Registry } from "prom-client";
import { expect, test } from "vitest";
import { createMetrics } from "./metrics.ts";
import { renderMetrics } from "./text.ts";

test("renders byte for byte what prom-client writes, for every metric type and label shape", async () => {
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultCollectors: false });
  for (let i = 0; i < 30; i++) {
    metrics.observePollerTick(`db_${i}`, i / 100);
    metrics.setSseSubscribers(`db_${i}`, i);
    metrics.observeQuery(`src_${i % 3}`, i % 2 ? "ok" : "error", i / 50, i * 10);
  }
  metrics.addLlmTokens("ws_1", "gpt-x", 10, 20);
  metrics.countLlmRequest("chat", "admitted");
  metrics.countGuardRejection("keyword");
  metrics.setPollersActive(3);
  const odd = new Counter({ name: "svc_odd_total", help: "help with \\ and\nnewline", labelNames: ["v"], registers: [registry] });
  odd.inc({ v: 'quote " backslash \\ newline \n' });
  odd.inc({ v: "" }, 2.5);
  expect(await renderMetrics(registry)).toBe(await registry.metrics());
});

test("default collectors render the same too", async () => {
  const registry = new Registry();
  createMetrics(registry);
  // Gauges of the process change between two reads; compare the set of metric names and line shapes.
  const ours = (await renderMetrics(registry)).split("\n").map((l) => l.replace(/ [^ ]+$/, ""));
  const theirs = (await registry.metrics()).split("\n").map((l) => l.replace(/ [^ ]+$/, ""));
  expect(ours).toEqual(theirs);
});

test("an empty registry", async () => {
  const registry = new Registry();
  expect(await renderMetrics(registry)).toBe(await registry.metrics());
});
