import { Registry } from "prom-client";
import { expect, test } from "vitest";
import { LABEL_CAP } from "../lib/metrics/label-cap.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { EMF_NAMESPACE, withEmf } from "./emf.ts";

/** The parts of an EMF line the tests read; the metric values and dimensions sit beside `_aws`. */
type EmfLine = Record<string, unknown> & { _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] } };

function setup() {
  const lines: EmfLine[] = [];
  const inner = createMetrics(new Registry(), { defaultCollectors: false });
  const metrics = withEmf(inner, { write: (l) => lines.push(JSON.parse(l)), now: () => 1_775_822_400_000 });
  return { lines, inner, metrics };
}

test("every LLM increment is one EMF line CloudWatch sums across instances; the in-process counters still count", async () => {
  const { lines, inner, metrics } = setup();
  metrics.countLlmRequest("generate", "admitted");
  metrics.countLlmRequest("chat", "over_budget");
  metrics.addLlmTokens("ws_1", "gpt-x", 120, 30);
  metrics.addLlmTokens("ws_1", "gpt-x", 0, 5);
  expect(lines).toEqual([
    {
      _aws: {
        Timestamp: 1_775_822_400_000,
        CloudWatchMetrics: [
          { Namespace: EMF_NAMESPACE, Dimensions: [["route", "outcome"]], Metrics: [{ Name: "svc_llm_requests_total", Unit: "Count" }] },
        ],
      },
      route: "generate",
      outcome: "admitted",
      svc_llm_requests_total: 1,
    },
    expect.objectContaining({ route: "chat", outcome: "over_budget", svc_llm_requests_total: 1 }),
    expect.objectContaining({ workspace: "ws_1", model: "gpt-x", direction: "input", svc_llm_tokens_total: 120 }),
    expect.objectContaining({ workspace: "ws_1", model: "gpt-x", direction: "output", svc_llm_tokens_total: 30 }),
    expect.objectContaining({ direction: "output", svc_llm_tokens_total: 5 }),
  ]);
  expect(lines[2]._aws.CloudWatchMetrics[0].Dimensions).toEqual([["workspace", "model", "direction"]]);
  const text = await inner.registry.metrics();
  expect(text).toContain('svc_llm_requests_total{route="generate",outcome="admitted"} 1');
  expect(text).toContain('svc_llm_tokens_total{workspace="ws_1",model="gpt-x",direction="output"} 35');
});

test("workspace and model dimensions are capped at 500 distinct values, the rest reported as other", () => {
  const { lines, metrics } = setup();
  for (let i = 0; i <= LABEL_CAP; i++) metrics.addLlmTokens(`ws_${i}`, "m", 1, 0);
  const values = new Set(lines.map((l) => l.workspace));
  expect(values.size).toBe(LABEL_CAP + 1);
  expect(lines.at(-1)!.workspace).toBe("other");
});
