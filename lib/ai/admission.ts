import type pg from "pg";
import { AppError } from "../http/errors.ts";
import type { LlmRoute, Metrics } from "../metrics/metrics.ts";

/** Who is asking, on which route: the gate's key is (workspace, user) for the rate and workspace for the budget. */
export interface AdmissionScope {
  route: LlmRoute;
  workspaceId: string;
  userSub: string;
}

/** The admission gate in front of every model call (docs/ai.md). */
export interface AdmissionGate {
  /** Admits one model call or throws a 429 AppError (`over_budget` or `rate_limited`) with Retry-After. */
  admit(scope: AdmissionScope): Promise<void>;
  /** Adds the tokens the provider reported to today's workspace usage and to svc_llm_tokens_total. */
  recordUsage(workspaceId: string, model: string, usage: { input: number; output: number }): Promise<void>;
}

export interface AdmissionDeps {
  pool: pg.Pool;
  metrics: Pick<Metrics, "countLlmRequest" | "addLlmTokens">;
  /** Environment defaults; `workspace_limits` overrides them per workspace. 0 disables. */
  defaults: { ratePerMinute: number; dailyTokenBudget: number };
  now?: () => number;
}

const DAY_MS = 86_400_000;

/** The UTC calendar day of an instant, as YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Whole seconds (at least 1) from `ms` to the next UTC midnight. */
export function secondsToUtcMidnight(ms: number): number {
  const next = Math.floor(ms / DAY_MS) * DAY_MS + DAY_MS;
  return Math.max(1, Math.ceil((next - ms) / 1000));
}

// One statement decides admission, so any number of stateless handler instances sharing the
// config store agree: the budget is read, and the caller's bucket is refilled (from the injected
// `now`, in SQL) and debited in the same INSERT … ON CONFLICT DO UPDATE, whose WHERE sees the
// latest committed row under its lock. No row back from `take` means the bucket was empty.
// `available` reads the statement's snapshot (before the debit) only to compute Retry-After.
const ADMIT_SQL = `
WITH lim AS (
  SELECT COALESCE(l.llm_rate_per_minute, $3::int) AS rate,
         COALESCE(l.llm_daily_token_budget, $4::bigint) AS budget
    FROM (SELECT 1) AS one
    LEFT JOIN workspace_limits l ON l.workspace_id = $1
), used AS (
  SELECT COALESCE((SELECT tokens FROM llm_usage_daily WHERE workspace_id = $1 AND day = $6::date), 0) AS tokens
), take AS (
  INSERT INTO llm_rate_buckets AS b (workspace_id, user_sub, tokens, updated_at)
  SELECT $1, $2, lim.rate - 1, $5::timestamptz FROM lim, used
   WHERE lim.rate > 0 AND (lim.budget = 0 OR used.tokens < lim.budget)
  ON CONFLICT (workspace_id, user_sub) DO UPDATE
     SET tokens = LEAST((SELECT rate FROM lim)::float8,
                        b.tokens + GREATEST(0, EXTRACT(EPOCH FROM (EXCLUDED.updated_at - b.updated_at)))::float8
                                   * (SELECT rate FROM lim) / 60.0) - 1,
         updated_at = GREATEST(b.updated_at, EXCLUDED.updated_at)
   WHERE LEAST((SELECT rate FROM lim)::float8,
               b.tokens + GREATEST(0, EXTRACT(EPOCH FROM (EXCLUDED.updated_at - b.updated_at)))::float8
                          * (SELECT rate FROM lim) / 60.0) >= 1
  RETURNING b.tokens
)
SELECT lim.rate, lim.budget::float8 AS budget, used.tokens::float8 AS used,
       EXISTS (SELECT 1 FROM take) AS took,
       (SELECT LEAST(lim.rate::float8,
                     p.tokens + GREATEST(0, EXTRACT(EPOCH FROM ($5::timestamptz - p.updated_at)))::float8 * lim.rate / 60.0)
          FROM llm_rate_buckets p WHERE p.workspace_id = $1 AND p.user_sub = $2) AS available
  FROM lim, used`;

const USAGE_SQL = `
INSERT INTO llm_usage_daily AS u (workspace_id, day, tokens) VALUES ($1, $2::date, $3)
ON CONFLICT (workspace_id, day) DO UPDATE SET tokens = u.tokens + EXCLUDED.tokens`;

/** Creates the gate; state lives in llm_rate_buckets and llm_usage_daily of the config store. */
export function createAdmissionGate(deps: AdmissionDeps): AdmissionGate {
  const now = deps.now ?? Date.now;
  return {
    async admit(scope) {
      const at = now();
      const { rows } = await deps.pool.query<{
        rate: number;
        budget: number;
        used: number;
        took: boolean;
        available: number | null;
      }>(ADMIT_SQL, [
        scope.workspaceId,
        scope.userSub,
        deps.defaults.ratePerMinute,
        deps.defaults.dailyTokenBudget,
        new Date(at).toISOString(),
        utcDay(at),
      ]);
      const r = rows[0]!;
      if (r.budget > 0 && r.used >= r.budget) {
        deps.metrics.countLlmRequest(scope.route, "over_budget");
        const retryAfter = secondsToUtcMidnight(at);
        throw new AppError(
          "over_budget",
          "The workspace has used its daily AI token budget; it resets at midnight UTC.",
          { retryAfterSeconds: retryAfter },
          { "Retry-After": String(retryAfter) },
        );
      }
      if (r.rate > 0 && !r.took) {
        deps.metrics.countLlmRequest(scope.route, "rate_limited");
        const perToken = 60 / r.rate;
        const missing = r.available === null ? 1 : 1 - r.available;
        const retryAfter = Math.max(1, Math.ceil(missing > 0 ? missing * perToken : perToken));
        throw new AppError(
          "rate_limited",
          `Too many AI requests: the limit is ${r.rate} per minute per person in this workspace.`,
          { retryAfterSeconds: retryAfter },
          { "Retry-After": String(retryAfter) },
        );
      }
      deps.metrics.countLlmRequest(scope.route, "admitted");
    },

    async recordUsage(workspaceId, model, usage) {
      const input = Math.max(0, Math.floor(usage.input || 0));
      const output = Math.max(0, Math.floor(usage.output || 0));
      if (input + output === 0) return;
      deps.metrics.addLlmTokens(workspaceId, model, input, output);
      await deps.pool.query(USAGE_SQL, [workspaceId, utcDay(now()), input + output]);
    },
  };
}
