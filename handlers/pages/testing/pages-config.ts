import type { PagesConfig } from "../context.ts";

/** The pages' configuration with the documented defaults, for page tests; spread it and override what a test is about. */
export const TEST_PAGES_CONFIG: PagesConfig = {
  CSP_REPORT_ONLY: false,
  OIDC_ACCOUNT_URL: undefined,
  MAX_WINDOW_POINTS: 720,
  AI_MODEL: "",
  DEFAULT_TIME_FROM: "now-24h",
  DEFAULT_TIME_TO: "now",
  DEFAULT_REFRESH_INTERVAL_MS: 15000,
  MIN_REFRESH_INTERVAL_MS: 2000,
  PLATFORM_ADMIN_GROUP: undefined,
  isProduction: false,
};
