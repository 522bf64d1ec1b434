import type { Metrics } from "../lib/metrics/metrics.ts";
import { LabelCap } from "../lib/metrics/label-cap.ts";

/** CloudWatch namespace of the metrics the handlers push (docs/infra.md, "LLM counters"). */
export const EMF_NAMESPACE = "Pulseboard";

/**
 * The handlers' LLM counters in CloudWatch Embedded Metric Format. Behind Lambda nothing can scrape a
 * handlers instance (they are many, short-lived and frozen between requests), so every increment of
 * svc_llm_tokens_total and svc_llm_requests_total is also written as one EMF line to stdout: Lambda ships
 * stdout to CloudWatch Logs, which turns each line into metric data points summed across every instance.
 * No I/O of the process's own (a log line, like any other), nothing on the request path waits for it.
 * Labels and caps are those of the scraped counters (docs/stream-host.md, "Metrics"): opaque ids only, 500 distinct values
 * per label, `other` beyond.
 */
export function withEmf(metrics: Metrics, opts: { write?: (line: string) => void; now?: () => number } = {}): Metrics {
  const write = opts.write ?? ((line: string) => process.stdout.write(line));
  const now = opts.now ?? Date.now;
  const workspaces = new LabelCap();
  const models = new LabelCap();
  const emit = (dimensions: string[], values: Record<string, string>, name: string, value: number) => {
    const line = {
      _aws: {
        Timestamp: now(),
        CloudWatchMetrics: [{ Namespace: EMF_NAMESPACE, Dimensions: [dimensions], Metrics: [{ Name: name, Unit: "Count" }] }],
      },
      ...values,
      [name]: value,
    };
    write(`${JSON.stringify(line)}\n`);
  };
  return {
    ...metrics,
    addLlmTokens(workspaceId, model, input, output) {
      metrics.addLlmTokens(workspaceId, model, input, output);
      const labels = { workspace: workspaces.value(workspaceId), model: models.value(model || "unknown") };
      const dims = ["workspace", "model", "direction"];
      if (input > 0) emit(dims, { ...labels, direction: "input" }, "svc_llm_tokens_total", input);
      if (output > 0) emit(dims, { ...labels, direction: "output" }, "svc_llm_tokens_total", output);
    },
    countLlmRequest(route, outcome) {
      metrics.countLlmRequest(route, outcome);
      emit(["route", "outcome"], { route, outcome }, "svc_llm_requests_total", 1);
    },
  };
}
