import type { PanelGuard } from "../dashboards/save.ts";
import type { Metrics } from "../metrics/metrics.ts";

/** A guard that counts every refusal (dashboard saves, model-written SQL) in svc_sql_validation_rejections_total{reason}. */
export function countingGuard(guard: PanelGuard, metrics: Pick<Metrics, "countGuardRejection">): PanelGuard {
  return {
    check(sql, catalog, version) {
      const verdict = guard.check(sql, catalog, version);
      if (!verdict.ok) metrics.countGuardRejection(verdict.reason as Parameters<Metrics["countGuardRejection"]>[0]);
      return verdict;
    },
  };
}
