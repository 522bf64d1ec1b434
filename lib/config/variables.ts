import { z } from "zod";
import { parseTimeExpression } from "../time/expressions.ts";
import { parseHostList } from "../net/host-list.ts";

/**
 * One entry per environment variable: its zod type (which applies the default, see `defaultOf`) and what it
 * means. This table is the single source of truth; `parseConfig` and the README reference are built from it.
 */
export interface VariableDef<T extends z.ZodType = z.ZodType> {
  schema: T;
  doc: string;
  /** Secret values are never echoed in errors or logs. */
  secret?: boolean;
  group: "spec" | "environment" | "pulseboard";
}

const emptyToUndefined = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

/** A non-negative integer read from a string; `min` raises the floor, `max` lowers the ceiling. */
function int(defaultValue: number, opts?: { min?: number; max?: number }): z.ZodType<number, unknown>;
function int(defaultValue: undefined, opts?: { min?: number; max?: number }): z.ZodType<number | undefined, unknown>;
function int(defaultValue: number | undefined, opts: { min?: number; max?: number } = {}): z.ZodType<number | undefined, unknown> {
  const min = opts.min ?? 0;
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  const base = z.preprocess(
    (v) => {
      const e = emptyToUndefined(v);
      if (e === undefined) return undefined;
      if (typeof e === "number") return e;
      const s = String(e).trim();
      return /^-?\d+$/.test(s) ? Number(s) : Number.NaN;
    },
    z
      .number({ error: "must be a whole number" })
      .int({ error: "must be a whole number" })
      .min(min, { error: min === 0 ? "must not be negative" : `must be at least ${min}` })
      .max(max, { error: max === Number.MAX_SAFE_INTEGER ? "is too large" : `must be at most ${max}` })
      .optional(),
  );
  return defaultValue === undefined ? base : base.transform((v) => v ?? defaultValue);
}

/** A TCP port to listen on: 1-65535. */
function port(defaultValue: number) {
  return int(defaultValue, { min: 1, max: 65535 });
}

function str(defaultValue: string): z.ZodType<string, unknown>;
function str(): z.ZodType<string | undefined, unknown>;
function str(defaultValue?: string): z.ZodType<string | undefined, unknown> {
  const base = z.preprocess(emptyToUndefined, z.string().optional());
  return defaultValue === undefined ? base : base.transform((v) => v ?? defaultValue);
}

function bool(defaultValue: boolean) {
  return z.preprocess(
    (v) => {
      const e = emptyToUndefined(v);
      if (e === undefined) return defaultValue;
      const s = String(e).trim().toLowerCase();
      if (["true", "1", "yes"].includes(s)) return true;
      if (["false", "0", "no"].includes(s)) return false;
      return s;
    },
    z.boolean({ error: "must be true or false" }),
  );
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T, defaultValue: T[number]): z.ZodType<T[number], unknown>;
function oneOf<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number] | undefined, unknown>;
function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  defaultValue?: T[number],
): z.ZodType<T[number] | undefined, unknown> {
  const base = z.preprocess(emptyToUndefined, z.enum(values, { error: `must be one of ${values.join(", ")}` }).optional());
  return defaultValue === undefined ? base : base.transform((v) => v ?? defaultValue);
}

/** A comma- or space-separated host list (lib/net/host-list.ts); an entry that does not parse refuses boot. */
function hostList() {
  return z.preprocess(
    emptyToUndefined,
    z
      .string()
      .superRefine((text, ctx) => {
        const { invalid } = parseHostList(text);
        if (invalid.length > 0) {
          ctx.addIssue({
            code: "custom",
            message: `entries that are not a host name, *.domain, IP address or CIDR range (optionally with :port): ${invalid.map((e) => JSON.stringify(e)).join(", ")}`,
          });
        }
      })
      .optional(),
  );
}

function url() {
  return z.preprocess(emptyToUndefined, z.url({ error: "must be an absolute URL" }).optional());
}

/** A dashboard time expression with the bounds of lib/time/expressions.ts (docs/api.md, "Time expressions"). */
function timeExpr(defaultValue: string) {
  return z.preprocess(
    emptyToUndefined,
    z
      .string()
      .superRefine((s, ctx) => {
        const parsed = parseTimeExpression(s);
        if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.reason });
      })
      .optional()
      .transform((v) => v ?? defaultValue),
  );
}

export const variables = {
  // --- The service's documented configuration variables (validated at startup) ---
  DEFAULT_REFRESH_INTERVAL_MS: {
    schema: int(15000, { min: 1 }),
    doc: "Default dashboard refresh cadence; a dashboard may override it. Must not be below MIN_REFRESH_INTERVAL_MS.",
    group: "spec",
  },
  MIN_REFRESH_INTERVAL_MS: {
    schema: int(2000, { min: 1 }),
    doc: "Minimum refresh cadence enforced server-side (rejected on write, clamped on read).",
    group: "spec",
  },
  DEFAULT_TIME_FROM: {
    schema: timeExpr("now-24h"),
    doc: "Default relative range start for new dashboards.",
    group: "spec",
  },
  DEFAULT_TIME_TO: {
    schema: timeExpr("now"),
    doc: "Default range end; `now` keeps dashboards live.",
    group: "spec",
  },
  MAX_QUERY_ROWS: {
    schema: int(5000, { min: 1 }),
    doc: "Hard cap on rows of any metrics-store query; a capped result is marked `truncated`.",
    group: "spec",
  },
  MAX_RESULT_BYTES: {
    schema: int(4194304, { min: 1 }),
    doc: "Hard cap on the serialized JSON size of a query result (4 MiB); over it gives a 400 naming the limit.",
    group: "spec",
  },
  INCREMENTAL_LATE_ROWS_MS: {
    schema: int(10_000, { min: 0, max: 3_600_000 }),
    doc: "How late a metrics row may arrive after its own timestamp and still be counted by incremental ticks: each tick re-reads the buckets from this long before the last read (docs/stream-host.md, incremental ticks).",
    group: "pulseboard",
  },
  INCREMENTAL_FULL_QUERY_EVERY_TICKS: {
    schema: int(720, { min: 0, max: 100_000 }),
    doc: "A panel that ticks incrementally runs its full query every this many ticks (720: an hour at a 5 s refresh) and after any error, spec or view change, so no drift persists; 0 turns incremental ticks off.",
    group: "pulseboard",
  },
  STREAM_COMPRESSION: {
    schema: oneOf(["off", "deflate"] as const, "deflate"),
    doc: "`deflate` (default) sends a dashboard stream with `Content-Encoding: deflate` when the browser's Accept-Encoding accepts it: each frame is compressed once on the stream host and the same bytes go to every viewer (no compressor per connection). Measured at 1,000 viewers: 6x fewer bytes with delta frames and 3.4x with full frames, at no more CPU, RSS or latency than `off` within the machine's noise (docs/stream-host.md). `off` sends frames as they are.",
    group: "pulseboard",
  },
  COALESCE_PANEL_QUERIES: {
    schema: bool(true),
    doc: "Panels on one stream host with the same source, statement, bound values, range and cadence share one query per tick, whichever dashboards or views they are on (their pollers tick on one grid per cadence); false gives every view its own queries.",
    group: "pulseboard",
  },
  MAX_WINDOW_POINTS: {
    schema: int(720, { min: 1 }),
    doc: "Max points kept per series in the browser rolling window; also bounds `$__interval` buckets.",
    group: "spec",
  },
  QUERY_TIMEOUT_SECONDS: {
    schema: int(20, { min: 1 }),
    doc: "Statement timeout of every metrics query.",
    group: "spec",
  },
  CATALOG_STALE_AFTER_DAYS: {
    schema: int(30),
    doc: "Age after which a source catalog is reported stale (warning only). 0 disables the age check.",
    group: "spec",
  },
  SHUTDOWN_GRACE_MS: {
    schema: int(10000),
    doc: "Drain time budget after SIGTERM. The orchestrator's kill timeout must exceed it (shipped: 20 s).",
    group: "spec",
  },
  AI_MODEL: {
    schema: str(""),
    doc: "Model id used for generation, source drafts and chat; shown read-only in the UI. Empty when unconfigured.",
    group: "spec",
  },
  LLM_RATE_PER_MINUTE: {
    schema: int(20),
    doc: "Model requests per minute per user in a workspace on every LLM-backed route (token bucket: rate and burst). 0 disables. Overridable per workspace.",
    group: "spec",
  },
  LLM_DAILY_TOKEN_BUDGET: {
    schema: int(2000000),
    doc: "Input plus output tokens per workspace per UTC day across all LLM routes; over it gives 429 until midnight UTC. 0 disables. Overridable per workspace.",
    group: "spec",
  },
  DASHBOARD_VERSION_RETENTION: {
    schema: int(100, { min: 1 }),
    doc: "Saved versions of each dashboard kept in its history (list, diff, restore); the oldest beyond it are deleted when a new version is saved and are never shown.",
    group: "pulseboard",
  },
  CHAT_HISTORY_MAX_MESSAGES: {
    schema: int(100, { min: 1 }),
    doc: "Messages of one person's chat on one dashboard that are kept and replayed; enforced on write and on read.",
    group: "spec",
  },
  CHAT_HISTORY_RETENTION_DAYS: {
    schema: int(30),
    doc: "Age after which a chat message expires. 0 leaves only the message cap.",
    group: "spec",
  },
  GENERATION_LOG_RETENTION_DAYS: {
    schema: int(30),
    doc: "Age after which a generation_log row expires; swept on write and applied on read. 0 disables the age check.",
    group: "spec",
  },
  OIDC_ACCOUNT_URL: {
    schema: url(),
    doc: "Identity provider's self-service account page; linked from account settings when set, hidden when unset.",
    group: "spec",
  },
  SESSION_COOKIE_NAME: {
    schema: z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[A-Za-z0-9_.-]+$/, { error: "must be a valid cookie name (letters, digits, _ . -)" })
        .optional()
        .transform((v) => v ?? "svc_session"),
    ),
    doc: "Name of the session cookie.",
    group: "spec",
  },
  CSP_REPORT_ONLY: {
    schema: bool(false),
    doc: "When true the Content-Security-Policy is sent as Content-Security-Policy-Report-Only.",
    group: "spec",
  },

  // --- Other environment variables of the service ---
  DATABASE_URL: {
    schema: z.preprocess(
      emptyToUndefined,
      z.string({ error: "is required" }).refine((s) => /^postgres(ql)?:\/\//.test(s), { error: "must be a postgres:// connection string" }),
    ),
    doc: "Config-store connection string. Required (`npm start` starts an embedded PostgreSQL and sets it when unset).",
    secret: true,
    group: "environment",
  },
  PG_POOL_MAX: {
    schema: int(10, { min: 1 }),
    doc: "Config-store pool size.",
    group: "environment",
  },
  SESSION_SECRET: {
    schema: str(),
    doc: "HS256 signing key for session tokens; at least 32 characters in production (required there).",
    secret: true,
    group: "environment",
  },
  AI_PROVIDER: {
    schema: oneOf(["gateway", "compat"] as const),
    doc: "`gateway` (AI Gateway, AI_GATEWAY_API_KEY) or `compat` (an OpenAI-compatible endpoint: AI_COMPAT_*).",
    group: "environment",
  },
  AI_COMPAT_BASE_URL: {
    schema: url(),
    doc: "Base URL of the OpenAI-compatible endpoint (for example http://localhost:8000/v1 for vLLM or llama.cpp).",
    group: "environment",
  },
  AI_COMPAT_API_KEY: {
    schema: str(),
    doc: "API key of the OpenAI-compatible endpoint.",
    secret: true,
    group: "environment",
  },
  AI_COMPAT_API: {
    schema: oneOf(["chat", "responses"] as const, "chat"),
    doc: "Which OpenAI-compatible API to speak: `chat` (chat completions) or `responses`.",
    group: "environment",
  },
  AI_GATEWAY_API_KEY: {
    schema: str(),
    doc: "API key used when the gateway provider is selected.",
    secret: true,
    group: "environment",
  },
  OIDC_ISSUER: {
    schema: url(),
    doc: "OIDC issuer URL. Unset outside production: `npm start` runs an embedded development identity provider.",
    group: "environment",
  },
  OIDC_CLIENT_ID: { schema: str(), doc: "OIDC client id.", group: "environment" },
  OIDC_CLIENT_SECRET: { schema: str(), doc: "OIDC client secret.", secret: true, group: "environment" },
  OIDC_REDIRECT_URI: { schema: url(), doc: "OIDC redirect URI (the callback route).", group: "environment" },
  OIDC_SCOPE: {
    schema: str("openid profile email"),
    doc: "Scopes requested at login.",
    group: "environment",
  },
  OIDC_JWKS_URL: {
    schema: url(),
    doc: "JWKS URL for ID token verification; discovery is used when unset.",
    group: "environment",
  },
  OIDC_AUDIENCE: {
    schema: str(),
    doc: "Expected ID token audience; the client id when unset.",
    group: "environment",
  },
  OIDC_GROUPS_CLAIM: {
    schema: str("groups"),
    doc: "Name of the ID token claim holding the user's groups.",
    group: "environment",
  },
  SOURCE_SECRET_REFS: {
    schema: str(),
    doc: "Which workspaces may use which secret_ref: `<SECRET_REF>:<workspace>,<workspace>` entries separated by `;`, `*` means all. Unset grants nothing (an error in production).",
    group: "environment",
  },
  SOURCE_SECRETS_DIR: {
    schema: str(),
    doc: "Directory of files named `<SECRET_REF>_USERNAME` / `<SECRET_REF>_PASSWORD`, read on every new connection before the environment.",
    group: "environment",
  },
  APP_VERSION: { schema: str(), doc: "Overrides the build version reported by /api/health.", group: "environment" },
  GIT_COMMIT: { schema: str(), doc: "Commit reported by /api/health (`unknown` when unset).", group: "environment" },
  METRICS_TOKEN: {
    schema: str(),
    doc: "Bearer token required by /api/metrics (see the gate table). Warned about in production when shorter than 24 characters.",
    secret: true,
    group: "environment",
  },
  METRICS_ALLOWED_CIDRS: {
    schema: str(),
    doc: "Comma- or space-separated IPv4/IPv6 addresses and CIDR ranges allowed to scrape /api/metrics. An entry that does not parse refuses boot.",
    group: "environment",
  },
  FRAMEWORK_MANUAL_SIG_HANDLE: {
    schema: bool(false),
    doc: "When true the app handles SIGTERM/SIGINT itself and drains; otherwise SIGTERM exits 143 with no drain. No effect in development mode.",
    group: "environment",
  },

  // --- Pulseboard's own additions ---
  NODE_ENV: {
    schema: oneOf(["production", "development", "test"] as const),
    doc: "`production` enables the production rules; `development` is the watch/reload mode. `npm start` runs in neither.",
    group: "pulseboard",
  },
  PORT: {
    schema: port(8080),
    doc: "Listen port of the handlers (8080, as the Lambda Web Adapter expects), 1-65535. `npm start` uses 3000 for the all-in-one process.",
    group: "pulseboard",
  },
  STREAM_PORT: {
    schema: port(8081),
    doc: "Listen port of the stream host when run alone.",
    group: "pulseboard",
  },
  LISTEN_HOST: {
    schema: str(),
    doc: "Address the HTTP listener binds. Unset: every interface for the handlers and the stream host (containers need it), 127.0.0.1 for `npm start`, whose development identity provider lets anyone sign in as anyone (set `0.0.0.0` to expose the demo on purpose).",
    group: "pulseboard",
  },
  PULSEBOARD_DATA_DIR: {
    schema: str(),
    doc: "`npm start` only: the folder of the demo's data (embedded PostgreSQL, its passwords, the session secret, the browser bundle). Unset: `.data/` in the checkout.",
    group: "pulseboard",
  },
  SESSION_SECRET_PREVIOUS: {
    schema: str(),
    doc: "The previous session key during a rotation: tokens signed with it still verify, new ones are signed with SESSION_SECRET. Filled from the secret's AWSPREVIOUS stage when SESSION_SECRET comes from APP_SECRETS_AWS.",
    secret: true,
    group: "pulseboard",
  },
  APP_SECRETS_AWS: {
    schema: str(),
    doc: "Secrets read from AWS Secrets Manager at start and every APP_SECRETS_REFRESH_SECONDS instead of from the environment: `<VARIABLE>=<secret id or ARN>[#<json field>]` entries separated by `;` (for example `SESSION_SECRET=arn:…:secret:session;PGPASSWORD=arn:…:secret:db#password`). SESSION_SECRET and ORIGIN_VERIFY_SECRET also get their AWSPREVIOUS stage as `…_PREVIOUS`. A listed variable must not also be set in the environment; a secret that cannot be read at start stops the process.",
    group: "pulseboard",
  },
  APP_SECRETS_REFRESH_SECONDS: {
    schema: int(300),
    doc: "How often the secrets of APP_SECRETS_AWS are read again (a rotated value reaches every process within it). 0 reads them only at start.",
    group: "pulseboard",
  },
  ORIGIN_VERIFY_SECRET: {
    schema: str(),
    doc: "When set, the handlers refuse every request (probes included) without header `x-origin-verify` carrying this value, with 403 `forbidden`: the CDN adds it, so the Lambda function URL cannot be used around the CDN. `ORIGIN_VERIFY_SECRET_PREVIOUS` is accepted too during a rotation.",
    secret: true,
    group: "pulseboard",
  },
  ORIGIN_VERIFY_SECRET_PREVIOUS: {
    schema: str(),
    doc: "The previous origin secret, still accepted while the CDN switches to the new one.",
    secret: true,
    group: "pulseboard",
  },
  HEALTH_CHECK_PORT: {
    schema: int(undefined, { min: 1 }),
    doc: "When set, the handlers also answer `GET /api/health` (and nothing else) on 127.0.0.1:<port>, outside the origin check: the Lambda Web Adapter's readiness check (`AWS_LWA_READINESS_CHECK_PORT`) uses it.",
    group: "pulseboard",
  },
  ECS_CONTAINER_METADATA_URI_V4: {
    schema: url(),
    doc: "Set by the ECS agent inside a task. When set, the stream host polls `<uri>/task` and starts its drain as soon as the task's desired status is `STOPPED` (ECS then waits the target group's deregistration delay before SIGTERM, and the load balancer cuts open streams at its end); SIGTERM then only finishes the drain. Never set it by hand.",
    group: "pulseboard",
  },
  METRICS_EMF: {
    schema: bool(false),
    doc: "When true, the handlers also write every increment of `svc_llm_tokens_total` and `svc_llm_requests_total` to stdout in CloudWatch Embedded Metric Format (namespace `Pulseboard`), so CloudWatch sums them across Lambda instances that nothing can scrape. Same labels and caps as the scrape.",
    group: "pulseboard",
  },
  TASK_STOP_POLL_MS: {
    schema: int(1000, { min: 100 }),
    doc: "How often the stream host asks the ECS task metadata endpoint whether its task is being stopped (only with ECS_CONTAINER_METADATA_URI_V4).",
    group: "pulseboard",
  },
  PUBLIC_BASE_URL: {
    schema: url(),
    doc: "Public origin of the service (for example https://dash.example.com); used for redirects and the same-origin check of mutating requests.",
    group: "pulseboard",
  },
  PLATFORM_ADMIN_GROUP: {
    schema: str(),
    doc: "OIDC group whose members are platform admins: they create, rename and delete workspaces and set the groups that grant each workspace role (/admin/workspaces, `/api/admin/workspaces`). Unset: nobody is, and workspaces come only from `npm run provision`.",
    group: "pulseboard",
  },
  PROVISION_FILE_MAX_BYTES: {
    schema: int(4194304, { min: 1024 }),
    doc: "Largest provisioning input `npm run provision` reads (`cdk synth` with `provisioningFile` checks against the default): the file and every dashboard specFile it names together, in bytes (default 4 MiB, some 1,500 dashboards of 20 panels; parsing one that size takes about 300 MB of memory). A file already larger is refused before it is read, and reading stops at the limit; the message names the file and the limit. PROVISION_DOCUMENT is held to the same limit.",
    group: "pulseboard",
  },
  PROVISION_DOCUMENT: {
    schema: str(),
    doc: "A provisioning document (JSON, docs/provisioning.md) that `npm run provision -- --from-env` applies; the stack sets it on its provision container from the `provisioningFile` context.",
    group: "pulseboard",
  },
  SESSION_TTL_SECONDS: {
    schema: int(43200, { min: 60 }),
    doc: "Lifetime of a session token.",
    group: "pulseboard",
  },
  SESSION_REVOKE_RATE_PER_MINUTE: {
    schema: int(10, { min: 1 }),
    doc: "Session revocations one person may request per minute (sign out everywhere, a workspace admin's or a platform admin's revocation of someone's sessions), a token bucket (rate and burst) kept in each instance's memory; over it 429 `rate_limited` with Retry-After. Logout is not counted.",
    group: "pulseboard",
  },
  SESSION_REVOCATIONS_MAX: {
    schema: int(10000, { min: 100 }),
    doc: "Revocations of people's sessions (everywhere or in one workspace) kept at once; each lives until the sessions it ends would have expired (SESSION_TTL_SECONDS) and is mirrored in every process's memory. A revocation that would add one more is refused with 429 `rate_limited` until old ones expire (their rows are swept by the next write). Logouts and a person's own sign out everywhere are never refused.",
    group: "pulseboard",
  },
  STREAMS_PER_SESSION_MAX: {
    schema: int(16, { min: 1 }),
    doc: "Streams (GET /api/dashboards/{id}/stream) one session may hold open at once on one stream host instance; one more is refused with 429 `rate_limited` until one closes. A browser opens one per tab showing a dashboard.",
    group: "pulseboard",
  },
  SQL_GUARD_EXTRA_FUNCTIONS: {
    schema: str(""),
    doc: "Comma- or space-separated function names added to the SQL guard allowlist.",
    group: "pulseboard",
  },
  SQL_GUARD_EXTRA_TYPES: {
    schema: str(""),
    doc: "Comma- or space-separated pg_catalog type names added to the SQL guard's cast type allowlist (for example `inet, macaddr`). The reg* types, `aclitem` and system row types can never be added.",
    group: "pulseboard",
  },
  SQL_MAX_LENGTH: {
    schema: int(20000, { min: 1 }),
    doc: "Longest statement (characters) the SQL guard accepts; longer gives reason `structure`.",
    group: "pulseboard",
  },
  SOURCE_SECRET_HOSTS: {
    schema: str(),
    doc: "Which hosts a source using a secret_ref may connect to: `<SECRET_REF>:<host>,<host>` entries separated by `;`; a host is an exact name or IP address, or `*.suffix` (any name ending in `.suffix`), optionally with a port (`db.internal:5432`, `[2001:db8::1]:5432`) that binds the ref to that port only (no port: every port). A source whose host, or port of a port-bound host, is not listed for its ref is refused with `grant_missing` before any connection attempt or credential lookup. A ref without an entry is refused in production (its credentials would go to any host an admin names); outside production it may be used with any host. Warned about in production for every granted ref it does not bind.",
    group: "pulseboard",
  },
  SOURCE_ALLOWED_HOSTS: {
    schema: hostList(),
    doc: "Hosts a source may connect to although the host policy refuses them (loopback, link-local and metadata, unspecified, multicast and broadcast addresses, the config store's server, the service's own listeners): comma- or space-separated host names (`db.internal`, `*.suffix`), IP addresses and CIDR ranges, each optionally with a port (`127.0.0.1:5432`, `[::1]:5432`, `db.internal:5432`). A name entry allows every address the name resolves to. The config store's own database is refused whatever is listed. An entry that does not parse refuses boot.",
    group: "pulseboard",
  },
  SOURCE_POOLS_MAX: {
    schema: int(100, { min: 1 }),
    doc: "Source connection pools one process keeps; past it the least recently used idle pool is closed, and a new source is refused (`source_unavailable`, cause `pool_limit`) while every pool is busy.",
    group: "pulseboard",
  },
  SOURCE_HOST_CONNECTIONS_MAX: {
    schema: int(20, { min: 1 }),
    doc: "Open connections one process holds to one source server (address and port), across every source pointing there. When it is reached, an idle pooled connection of another source on that server (of the workspace holding the most, then the source holding the most) is closed and its slot handed over; a connection is refused (`source_unavailable`, cause `host_connection_limit`) only while every slot is held by a running statement or a connection being opened.",
    group: "pulseboard",
  },
  SOURCE_HOST_WORKSPACE_SHARE_PERCENT: {
    schema: int(50, { min: 1, max: 100 }),
    doc: "Share of `SOURCE_HOST_CONNECTIONS_MAX` one workspace may hold on one source server, in percent, rounded down, at least 1 and always below the whole cap when the cap is above 1: one workspace's sources, however many, leave the rest of a server's connections to other workspaces. Past its share a workspace's source takes an idle connection of the workspace's other sources or is refused (`source_unavailable`, cause `host_connection_limit`).",
    group: "pulseboard",
  },
  SOURCES_PER_WORKSPACE_MAX: {
    schema: int(100, { min: 1 }),
    doc: "Sources one workspace may hold; creating one more is refused with 409 `source_limit_reached`.",
    group: "pulseboard",
  },
  SOURCE_CONNECT_RATE_PER_MINUTE: {
    schema: int(10),
    doc: "Requests that make the service connect to a source host, per minute per user: source creates, connection changes, connection tests and catalog refreshes (token bucket: rate and burst). Counted per instance; over it gives 429 `rate_limited` with Retry-After. 0 disables.",
    group: "pulseboard",
  },
  SOURCE_SECRETS_AWS_PREFIX: {
    schema: str(),
    doc: "When set, a secret_ref not found in files or env resolves to the AWS Secrets Manager secret `<prefix><secret_ref>` holding `{username,password}`.",
    group: "pulseboard",
  },
  SOURCE_SECRETS_AWS_CACHE_SECONDS: {
    schema: int(60),
    doc: "How long a Secrets Manager value is cached.",
    group: "pulseboard",
  },
  READINESS_CHECK_TIMEOUT_MS: {
    schema: int(2000, { min: 1 }),
    doc: "Timeout of each readiness check; a hung dependency reports `TIMEOUT`. It also bounds a new config-store connection (or a wait for a pooled one) and the client's wait for the answer to every config-store query of the handlers and the stream host, so every route gives up on a hung config store (503 `config_store_unavailable`) as readiness does.",
    group: "pulseboard",
  },
  CONFIG_STORE_STATEMENT_TIMEOUT_MS: {
    schema: int(5000, { min: 1 }),
    doc: "statement_timeout of every config-store connection of the handlers and the stream host. The client gives a query up after `READINESS_CHECK_TIMEOUT_MS`, or 1 s after this when that is sooner, when the server does not answer (a hung store) and closes that connection, so a hung config store never exhausts the pool; this timeout then ends the abandoned statement on the server. A single-statement write that the store finishes after the client gave up still commits although the caller got a 503, as with any lost answer (an update's retry then meets the new version: 409 `version_conflict`). `npm run migrate` and `npm run provision` wait on locks on purpose and run without it.",
    group: "pulseboard",
  },
  MAX_VIEWS_PER_DASHBOARD: {
    schema: int(20, { min: 1 }),
    doc: "Views (range, refresh and variable values picked in the stream URL) one dashboard may have open on one stream host instance besides its saved view; each has its own poller. A new view past it answers 429 `too_many_views` with Retry-After; viewers of open views are unaffected.",
    group: "pulseboard",
  },
  CONFIG_STORE_STALE_MAX_MS: {
    schema: int(600000),
    doc: "How long open dashboards keep ticking from the last good copy of their dashboard and sources while the config store is down or hung. After it their panels stop with code `config_store_unavailable` until the store answers again. 0: panels stop as soon as a source cannot be re-read.",
    group: "pulseboard",
  },
  AI_GATEWAY_BASE_URL: {
    schema: url(),
    doc: "Base URL of the AI Gateway when `AI_PROVIDER=gateway`; unset uses the AI SDK's default (https://ai-gateway.vercel.sh/v3/ai). Set it for a proxy in front of the gateway or a local fake in tests.",
    group: "pulseboard",
  },
  AI_REQUEST_TIMEOUT_MS: {
    schema: int(60000, { min: 1 }),
    doc: "Timeout of one model call; past it the route answers 504.",
    group: "pulseboard",
  },
  AI_MAX_OUTPUT_TOKENS: {
    schema: int(8192, { min: 1 }),
    doc: "Output tokens one model call may produce (generation, source draft, chat); sent to the provider with every call. Lower it for a model or server with a smaller limit; raise it for reasoning models, which count their reasoning in it.",
    group: "pulseboard",
  },
  AI_LOG_MAX_CHARS: {
    schema: int(20000, { min: 100 }),
    doc: "Characters of a prompt, and of all the text of a result, that one generation_log row keeps (after redaction); the rest is cut with a `[truncated …]` marker.",
    group: "pulseboard",
  },
  AI_INPUT_COST_PER_MTOK: {
    schema: z.preprocess(
      (v) => (emptyToUndefined(v) === undefined ? 0 : Number(v)),
      z.number({ error: "must be a number" }).min(0, { error: "must not be negative" }),
    ),
    doc: "Cost (in your currency) per million input tokens, recorded in generation_log.",
    group: "pulseboard",
  },
  AI_OUTPUT_COST_PER_MTOK: {
    schema: z.preprocess(
      (v) => (emptyToUndefined(v) === undefined ? 0 : Number(v)),
      z.number({ error: "must be a number" }).min(0, { error: "must not be negative" }),
    ),
    doc: "Cost (in your currency) per million output tokens, recorded in generation_log.",
    group: "pulseboard",
  },
  API_TOKEN_RATE_PER_MINUTE: {
    schema: int(600),
    doc: "Requests per minute one API token may make across every instance (token bucket: rate and burst, kept in the config store); over it gives 429 with Retry-After. 0 disables.",
    group: "pulseboard",
  },
  AUDIT_RETENTION_DAYS: {
    schema: int(400),
    doc: "Age after which an audit-trail entry expires; swept on write and applied on read. 0 keeps entries forever.",
    group: "pulseboard",
  },
  LOG_LEVEL: {
    schema: oneOf(["info", "warn", "error", "silent"] as const, "info"),
    doc: "Least severe log line written by both processes: info (the default; access lines are info), warn, error, or silent.",
    group: "pulseboard",
  },
} satisfies Record<string, VariableDef>;

export type VariableName = keyof typeof variables;

/**
 * The value a variable takes when it is unset: what its schema gives for no input, so a default is written
 * once (in the schema) and callers without a loaded configuration read it from there. Undefined for a
 * variable without a default; a required variable (DATABASE_URL) has none to give and throws.
 */
export function defaultOf<K extends VariableName>(name: K): z.output<(typeof variables)[K]["schema"]> {
  const result = (variables[name].schema as z.ZodType).safeParse(undefined);
  if (!result.success) throw new Error(`${name} is required: it has no default`);
  return result.data as z.output<(typeof variables)[K]["schema"]>;
}
