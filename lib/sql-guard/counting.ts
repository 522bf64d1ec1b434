import type { Guard, GuardReason } from "./verdict.ts";

/** A guard that counts every refusal (dashboard saves, model-written SQL) in svc_sql_validation_rejections_total{reason}. */
export function countingGuard(guard: Guard, metrics: { countGuardRejection(reason: GuardReason): void }): Guard {
  return {
    check(sql, catalog, version, variables) {
      const verdict = guard.check(sql, catalog, version, variables);
      if (!verdict.ok) metrics.countGuardRejection(verdict.reason);
      return verdict;
    },
  };
}
