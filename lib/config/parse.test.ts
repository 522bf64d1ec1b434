import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { ConfigError, parseConfig } from "./parse.ts";
import { variables } from "./variables.ts";

const BASE = { DATABASE_URL: "postgres://u:p@db.internal:5432/cfg" };
const PROD = {
  ...BASE,
  NODE_ENV: "production",
  SESSION_SECRET: "x".repeat(32),
  SOURCE_SECRET_REFS: "METRICS:*",
  SOURCE_SECRET_HOSTS: "METRICS:metrics.internal",
};

function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe("defaults", () => {
  test("every spec default applies when unset", () => {
    const { config, warnings } = parseConfig(BASE);
    expect(config).toMatchObject({
      DEFAULT_REFRESH_INTERVAL_MS: 15000,
      MIN_REFRESH_INTERVAL_MS: 2000,
      DEFAULT_TIME_FROM: "now-24h",
      DEFAULT_TIME_TO: "now",
      MAX_QUERY_ROWS: 5000,
      MAX_RESULT_BYTES: 4194304,
      MAX_WINDOW_POINTS: 720,
      QUERY_TIMEOUT_SECONDS: 20,
      CATALOG_STALE_AFTER_DAYS: 30,
      SHUTDOWN_GRACE_MS: 10000,
      AI_MODEL: "",
      LLM_RATE_PER_MINUTE: 20,
      LLM_DAILY_TOKEN_BUDGET: 2000000,
      CHAT_HISTORY_MAX_MESSAGES: 100,
      CHAT_HISTORY_RETENTION_DAYS: 30,
      GENERATION_LOG_RETENTION_DAYS: 30,
      SESSION_COOKIE_NAME: "svc_session",
      CSP_REPORT_ONLY: false,
      PG_POOL_MAX: 10,
      FRAMEWORK_MANUAL_SIG_HANDLE: false,
      PORT: 8080,
    });
    expect(config.OIDC_ACCOUNT_URL).toBeUndefined();
    expect(config.metricsAllowedCidrs).toBeNull();
    expect(config.sourceSecretGrants.size).toBe(0);
    expect(config.sourceSecretHosts.size).toBe(0);
    expect(warnings).toEqual([]);
  });

  test("empty strings count as unset", () => {
    const { config } = parseConfig({ ...BASE, MAX_QUERY_ROWS: "", AI_MODEL: "  ", CSP_REPORT_ONLY: "" });
    expect(config.MAX_QUERY_ROWS).toBe(5000);
    expect(config.AI_MODEL).toBe("");
    expect(config.CSP_REPORT_ONLY).toBe(false);
  });

  test("0 is accepted where it has a documented meaning", () => {
    const { config } = parseConfig({
      ...BASE,
      LLM_RATE_PER_MINUTE: "0",
      LLM_DAILY_TOKEN_BUDGET: "0",
      CATALOG_STALE_AFTER_DAYS: "0",
      CHAT_HISTORY_RETENTION_DAYS: "0",
      GENERATION_LOG_RETENTION_DAYS: "0",
    });
    expect(config.LLM_RATE_PER_MINUTE).toBe(0);
    expect(config.CATALOG_STALE_AFTER_DAYS).toBe(0);
  });
});

describe("numbers", () => {
  test.each([
    ["MAX_QUERY_ROWS", "-1"],
    ["MAX_QUERY_ROWS", "abc"],
    ["QUERY_TIMEOUT_SECONDS", "1.5"],
    ["SHUTDOWN_GRACE_MS", "-100"],
    ["LLM_RATE_PER_MINUTE", "twenty"],
    ["PG_POOL_MAX", "0"],
    ["MAX_RESULT_BYTES", "4MiB"],
    ["CATALOG_STALE_AFTER_DAYS", "1e3"],
  ])("%s=%s is an error naming the variable", (name, value) => {
    const problems = problemsOf({ ...BASE, [name]: value });
    expect(problems.map((p) => p.variable)).toEqual([name]);
  });

  test("DEFAULT_REFRESH_INTERVAL_MS must respect MIN_REFRESH_INTERVAL_MS", () => {
    expect(problemsOf({ ...BASE, DEFAULT_REFRESH_INTERVAL_MS: "1000" })[0].variable).toBe("DEFAULT_REFRESH_INTERVAL_MS");
    expect(problemsOf({ ...BASE, DEFAULT_REFRESH_INTERVAL_MS: "5000", MIN_REFRESH_INTERVAL_MS: "5000" })).toEqual([]);
  });

  test("any non-negative integer string parses to itself", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 }), (n) => {
        expect(parseConfig({ ...BASE, MAX_QUERY_ROWS: String(n) }).config.MAX_QUERY_ROWS).toBe(n);
      }),
    );
  });
});

describe("every bad variable is listed at once, secrets never echoed", () => {
  test("one error lists every problem", () => {
    const problems = problemsOf({
      NODE_ENV: "production",
      SESSION_SECRET: "hunter2-short-secret",
      MAX_QUERY_ROWS: "-5",
      METRICS_ALLOWED_CIDRS: "10.0.0.0/8,not-an-ip",
      CSP_REPORT_ONLY: "maybe",
    });
    expect(problems.map((p) => p.variable).sort()).toEqual(
      ["CSP_REPORT_ONLY", "DATABASE_URL", "MAX_QUERY_ROWS", "METRICS_ALLOWED_CIDRS", "SESSION_SECRET", "SOURCE_SECRET_REFS"].sort(),
    );
    const text = problems.map((p) => p.message).join("\n");
    expect(text).not.toContain("hunter2");
  });

  test("a malformed DATABASE_URL is reported without its value", () => {
    const problems = problemsOf({ DATABASE_URL: "mysql://admin:s3cret@db/x" });
    expect(problems[0].variable).toBe("DATABASE_URL");
    expect(JSON.stringify(problems)).not.toContain("s3cret");
  });
});

describe("production rules", () => {
  test("SESSION_SECRET must be at least 32 characters in production", () => {
    expect(problemsOf({ ...PROD, SESSION_SECRET: "x".repeat(31) }).map((p) => p.variable)).toEqual(["SESSION_SECRET"]);
    expect(problemsOf({ ...PROD, SESSION_SECRET: "" }).map((p) => p.variable)).toEqual(["SESSION_SECRET"]);
    expect(problemsOf(PROD)).toEqual([]);
    // Outside production a short secret is the developer's business.
    expect(problemsOf({ ...BASE, SESSION_SECRET: "short" })).toEqual([]);
  });

  test("SOURCE_SECRET_REFS unset is an error in production only", () => {
    const { SOURCE_SECRET_REFS: _, ...withoutRefs } = PROD;
    expect(problemsOf(withoutRefs).map((p) => p.variable)).toEqual(["SOURCE_SECRET_REFS"]);
    expect(problemsOf(BASE)).toEqual([]);
  });

  test("a CIDR list without a token and a short token warn in production", () => {
    expect(parseConfig({ ...PROD, METRICS_ALLOWED_CIDRS: "10.0.0.0/8" }).warnings).toEqual([
      expect.stringContaining("without METRICS_TOKEN"),
    ]);
    expect(parseConfig({ ...PROD, METRICS_TOKEN: "short-token" }).warnings).toEqual([expect.stringContaining("shorter than 24")]);
    expect(parseConfig({ ...PROD, METRICS_TOKEN: "t".repeat(24), METRICS_ALLOWED_CIDRS: "10.0.0.0/8" }).warnings).toEqual([]);
    expect(parseConfig({ ...BASE, METRICS_ALLOWED_CIDRS: "10.0.0.0/8" }).warnings).toEqual([]);
  });
});

describe("SOURCE_SECRET_REFS", () => {
  test("entries grant workspaces; * grants all", () => {
    const { config } = parseConfig({ ...BASE, SOURCE_SECRET_REFS: "METRICS_RO: ws_a, ws_b ; DEMO:*;METRICS_RO:ws_c" });
    expect(config.sourceSecretGrants.get("METRICS_RO")).toEqual(new Set(["ws_a", "ws_b", "ws_c"]));
    expect(config.sourceSecretGrants.get("DEMO")).toBe("*");
    expect(config.sourceSecretGrants.has("OTHER")).toBe(false);
  });

  test.each(["METRICS", "METRICS:", "bad-ref:ws_a", ":ws_a", "1REF:ws"])("%j is refused", (value) => {
    expect(problemsOf({ ...BASE, SOURCE_SECRET_REFS: value }).map((p) => p.variable)).toEqual(["SOURCE_SECRET_REFS"]);
  });
});

describe("SOURCE_SECRET_HOSTS", () => {
  test("entries list exact names, addresses and *.suffix patterns in canonical form; repeated refs merge", () => {
    const { config } = parseConfig({
      ...BASE,
      SOURCE_SECRET_HOSTS: "METRICS_RO: DB.Internal. , 10.0.0.5 ;RDS:*.RDS.amazonaws.com, 2001:DB8::1;METRICS_RO:[::ffff:10.0.0.6]",
    });
    const any = (host: string) => ({ host, port: null });
    expect(config.sourceSecretHosts.get("METRICS_RO")).toEqual([any("db.internal"), any("10.0.0.5"), any("10.0.0.6")]);
    expect(config.sourceSecretHosts.get("RDS")).toEqual([any("*.rds.amazonaws.com"), any("2001:db8:0:0:0:0:0:1")]);
    expect(config.sourceSecretHosts.has("OTHER")).toBe(false);
  });

  test("an entry may name a port: host:port, [IPv6]:port, *.suffix:port; a bare IPv6 address has none", () => {
    const { config } = parseConfig({
      ...BASE,
      SOURCE_SECRET_HOSTS:
        "METRICS:DB.internal:5432,10.0.0.5:6432,[2001:db8::1]:5433,*.rds.amazonaws.com:5432,2001:db8::2,db.internal:5432",
    });
    expect(config.sourceSecretHosts.get("METRICS")).toEqual([
      { host: "db.internal", port: 5432 },
      { host: "10.0.0.5", port: 6432 },
      { host: "2001:db8:0:0:0:0:0:1", port: 5433 },
      { host: "*.rds.amazonaws.com", port: 5432 },
      { host: "2001:db8:0:0:0:0:0:2", port: null },
    ]);
  });

  test.each([
    ["METRICS", "must have the form"],
    ["METRICS:", "lists no host"],
    ["bad-ref:db.internal", "not a valid secret_ref"],
    ["METRICS:*", '"*"'],
    ["METRICS:*.10.0.0.1", '"*.10.0.0.1"'],
    ["METRICS:10.1", '"10.1"'],
    ["METRICS:0x7f000001", '"0x7f000001"'],
    ["METRICS:db..internal", '"db..internal"'],
    ["METRICS:db.internal/x", '"db.internal/x"'],
    ["METRICS:db.internal:0", '"db.internal:0"'],
    ["METRICS:db.internal:65536", '"db.internal:65536"'],
    ["METRICS:db.internal:54x", '"db.internal:54x"'],
    ["METRICS:db.internal:", '"db.internal:"'],
    ["METRICS::5432", '":5432"'],
    ["METRICS:[db.internal]:5432", '"[db.internal]:5432"'],
    ["METRICS:[2001:db8::1]:99999", '"[2001:db8::1]:99999"'],
    ["METRICS:*:5432", '"*:5432"'],
  ])("%j is refused, naming the entry", (value, message) => {
    const problems = problemsOf({ ...BASE, SOURCE_SECRET_HOSTS: value });
    expect(problems.map((p) => p.variable)).toEqual(["SOURCE_SECRET_HOSTS"]);
    expect(problems[0].message).toContain(message);
  });

  test("in production a granted ref it does not bind is named in a warning (such sources are refused)", () => {
    const { warnings } = parseConfig({ ...PROD, SOURCE_SECRET_REFS: "METRICS:*;OTHER:ws_a" });
    expect(warnings).toEqual([expect.stringContaining("binds no host to secret_ref OTHER")]);
  });

  test("unset warns in production only", () => {
    const { SOURCE_SECRET_HOSTS: _, ...withoutHosts } = PROD;
    expect(parseConfig(withoutHosts).warnings).toEqual([expect.stringContaining("SOURCE_SECRET_HOSTS is unset")]);
    expect(parseConfig(PROD).warnings).toEqual([]);
    expect(parseConfig(BASE).warnings).toEqual([]);
  });
});

describe("METRICS_ALLOWED_CIDRS", () => {
  test("comma- or space-separated IPv4/IPv6 addresses and ranges parse; mapped IPv6 folds to IPv4", () => {
    const { config } = parseConfig({
      ...BASE,
      METRICS_ALLOWED_CIDRS: "10.0.0.0/8, 192.168.1.7 2001:db8::/32,::ffff:172.16.0.0/108  ::1",
    });
    const ranges = config.metricsAllowedCidrs!.map(([a, p]) => `${a.toString()}/${p}`);
    expect(ranges).toEqual(["10.0.0.0/8", "192.168.1.7/32", "2001:db8::/32", "172.16.0.0/12", "::1/128"]);
  });

  test.each(["10.0.0.0/33", "300.1.1.1", "10.1", "2001:db8::/129", "example.com", "10.0.0.0/8/8", "10.0.0.0/-1"])(
    "entry %j refuses boot and is named",
    (entry) => {
      const problems = problemsOf({ ...BASE, METRICS_ALLOWED_CIDRS: `127.0.0.1,${entry}` });
      expect(problems).toHaveLength(1);
      expect(problems[0].variable).toBe("METRICS_ALLOWED_CIDRS");
      expect(problems[0].message).toContain(JSON.stringify(entry));
    },
  );
});

test("every variable has documentation", () => {
  for (const [name, def] of Object.entries(variables)) {
    expect(def.doc.length, name).toBeGreaterThan(10);
  }
});
