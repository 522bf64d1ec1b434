/**
 * Every expected failure that reaches the HTTP edge is an AppError with a stable code.
 * The code decides the status through one exhaustive map (problem.ts); `detail` is safe to show.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  validation_failed: 400,
  result_too_large: 400,
  unauthenticated: 401,
  forbidden: 403,
  cross_site_request: 403,
  not_found: 404,
  conflict: 409,
  version_conflict: 409,
  guard_rejected: 422,
  catalog_missing: 422,
  grant_missing: 422,
  source_host_refused: 422,
  source_limit_reached: 409,
  query_failed: 422,
  rate_limited: 429,
  over_budget: 429,
  too_many_views: 429,
  internal: 500,
  ai_provider_error: 502,
  source_unavailable: 502,
  source_credentials_missing: 502,
  identity_provider_unavailable: 503,
  config_store_unavailable: 503,
  ai_not_configured: 503,
  ai_provider_timeout: 504,
  query_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An expected failure with a stable code, a human detail and optional structured extras. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "AppError";
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}
