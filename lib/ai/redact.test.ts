import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestConfigStore } from "../testing/pg.ts";
import { createWorkspace } from "../workspaces/store.ts";
import { createGenerationLog, redactCapped, redactDeep } from "./generation-log.ts";
import { redact } from "./redact.ts";
import { referenceRedact } from "./testing/redact-reference.ts";

// Each secret is embedded in a realistic prompt; none may survive redaction.
const SECRETS: [string, string, string][] = [
  ["email", "ops.lead+alerts@example.co.uk", "mail me at ops.lead+alerts@example.co.uk when done"],
  ["bearer token", "c2VjcmV0LXRva2VuLXZhbHVlLTEyMzQ1", "curl -H 'Authorization: Bearer c2VjcmV0LXRva2VuLXZhbHVlLTEyMzQ1' /api"],
  ["openai key", "sk-proj-Abc123Def456Ghi789Jkl012", "my key is sk-proj-Abc123Def456Ghi789Jkl012 use it"],
  ["stripe key", "sk_live_51HqLyjWDarjtT1zdp7dc", "stripe sk_live_51HqLyjWDarjtT1zdp7dc"],
  ["github token", "ghp_1234567890abcdefghijABCDEFGHIJklmn", "token ghp_1234567890abcdefghijABCDEFGHIJklmn"],
  ["aws access key id", "AKIAIOSFODNN7EXAMPLE", "aws AKIAIOSFODNN7EXAMPLE in us-east-1"],
  ["aws secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
  ["slack token", "xoxb-123456789012-abcdefghij", "slack xoxb-123456789012-abcdefghij"],
  ["password=", "hunter2hunter2", "connect with password=hunter2hunter2 please"],
  ["password: quoted", "correct horse battery", 'config {"password": "correct horse battery"}'],
  ["api_key=", "a1b2c3d4e5", "GET /data?api_key=a1b2c3d4e5&x=1"],
  ["client secret", "s3cr3t-v4lue", "OIDC_CLIENT_SECRET=s3cr3t-v4lue"],
  ["url credentials", "admin:Pa55w0rd!", "from postgres://admin:Pa55w0rd!@db.internal:5432/metrics"],
  ["url password only", "p%40ss", "https://user:p%40ss@example.com/path"],
  [
    "jwt",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
  ],
  ["card number", "4111 1111 1111 1111", "card 4111 1111 1111 1111 failed"],
  ["card dashed", "4111-1111-1111-1111", "card 4111-1111-1111-1111 failed"],
  ["phone", "+44 20 7946 0958", "call +44 20 7946 0958"],
  ["long digits", "12345678901234", "account 12345678901234"],
  ["url password with a slash", "hunter2", "from postgres://admin:hunter2/x@db.example.com:5432/metrics"],
  ["url password with an @", "ssw0rd", "from postgres://admin:p@ssw0rd@10.0.0.5/metrics"],
  ["url with an empty user", "s3cr3t!x", "cache at redis://:s3cr3t!x@10.0.0.7:6379/0"],
  ["token=", "tok12345abc", "GET /feed?token=tok12345abc&page=2"],
  ["passphrase:", "open sesame now", 'key file passphrase: "open sesame now"'],
];

describe("redact", () => {
  test.each(SECRETS)("%s is removed", (_name, secret, prompt) => {
    const out = redact(prompt);
    expect(out).not.toContain(secret);
    // URL credentials: neither half of user:password survives.
    for (const part of secret.split(":")) if (part.length >= 4) expect(out).not.toContain(part);
  });

  test.each([
    "show p95 latency of http_requests by service for the last 24h",
    "errors per minute on 2026-01-15 between 10:00 and 12:00",
    "top 10 endpoints by count, grouped by status_code 500",
    "SELECT $__timeGroup(ts, '5m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1",
  ])("ordinary prompt text is kept: %s", (prompt) => {
    expect(redact(prompt)).toBe(prompt);
  });
});

// Pieces the rules care about; random strings of them hit every rule (and its near misses) often.
const PIECES = [
  "a",
  "Z",
  "0",
  "9",
  "e",
  "y",
  "J",
  "eyJ",
  "eyJhbGciOi",
  "abcde",
  ".",
  "-",
  "_",
  "+",
  "/",
  "=",
  ":",
  "//",
  "://",
  "@",
  " ",
  "  ",
  "\n",
  "\t",
  '"',
  "'",
  "<",
  "`",
  ",",
  ";",
  "&",
  "%",
  "password",
  "token",
  "pwd",
  "secret",
  "api_key",
  "bearer",
  "Basic",
  "sk-",
  "sk_live_",
  "ghp_",
  "xoxb-",
  "AKIA",
  "http",
  "postgres",
  "com",
  ".co",
  "x.eyJ",
  ".eyJ",
  "a@b",
  "\u00a0",
  "é",
  "\u2028",
  "ABCDEFGHIJKLMNOP",
  "1234",
  "0123456789",
  "abcdef0123456789abcdef0123456789",
];

describe("redact runs in linear time and redacts exactly what the previous regular expressions did", () => {
  test("agrees with the previous implementation on random short strings", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...PIECES), maxLength: 30 }), (text) => {
        expect(redact(text)).toBe(referenceRedact(text));
      }),
      { numRuns: 20_000 },
    );
  });

  test("a URL run stops at exactly the characters the previous pattern stopped at (every UTF-16 code unit)", () => {
    const differ: number[] = [];
    for (let c = 0; c < 0x10000; c++) {
      const text = `x http://u:pw${String.fromCharCode(c)}x@h.io`;
      if (redact(text) !== referenceRedact(text)) differ.push(c);
    }
    expect(differ).toEqual([]);
  });

  // 200 KB of text built to make a backtracking pattern quadratic: with the previous patterns each of
  // these took from tens of seconds to minutes; the timeout (not a measured time) is the guard.
  const N = 200_000;
  const fill = (unit: string) => unit.repeat(Math.ceil(N / unit.length)).slice(0, N);
  const run31 = "aB3+".repeat(8).slice(0, 31);
  test.each<[string, string, string]>([
    ["repeated separators", fill("a-"), fill("a-")],
    ["dotted separators", fill("a."), fill("a.")],
    ["near-miss keys without values", fill("password:, token=; api_key:& "), fill("password:, token=; api_key:& ")],
    ["a key run without a separator", fill("password"), fill("password")],
    ["bearer without a token", fill("token "), fill("token ")],
    ["a URL run without @", `http://${fill("x")}`, `http://${fill("x")}`],
    ["schemes repeated in one run", fill("http://a/"), fill("http://a/")],
    ["schemes without a letter", fill("-://@"), fill("-://@")],
    ["JWT headers in one run", fill("eyJ-"), fill("eyJ-")],
    ["JWT anchors without a header", fill(".eyJ"), fill(".eyJ")],
    ["one long base64 run", fill("aB3+"), "[secret]"],
    ["base64 runs one short of a secret", fill(`${run31} `), fill(`${run31} `)],
    ["digit groups one short of a number", fill("1-2-3-4-5-6-7-8, "), fill("1-2-3-4-5-6-7-8, ")],
    ["local parts without a domain", fill("a@"), fill("a@")],
    ["a domain without a top-level name", `x@${fill("a.")}`, `x@${fill("a.")}`],
    ["quoted values", 'password:"'.repeat(N / 10), "password:[redacted]".repeat(N / 20)],
    ["a secret after the hostile part is still found", `${fill("a-")} password=hunter2`, `${fill("a-")} password=[redacted]`],
  ])("hostile input: %s", { timeout: 10_000 }, (_name, input, expected) => {
    expect(redact(input)).toBe(expected);
  });
});

describe("redactCapped and redactDeep: a row keeps at most AI_LOG_MAX_CHARS characters", () => {
  test("text past the cap is cut after redaction, with a marker giving the full length", () => {
    const text = `${"word ".repeat(100)}password=hunter2hunter2 ${"tail ".repeat(100)}`;
    // The cut falls inside the secret's value: it is blanked whole, not kept in half.
    const max = text.indexOf("hunter2") + 3;
    const out = redactCapped(text, max);
    expect(out).not.toContain("hun");
    expect(out.startsWith("word word")).toBe(true);
    expect(out).toContain(`…[truncated: ${text.length} characters in all, AI_LOG_MAX_CHARS]`);
    expect(out.length).toBeLessThanOrEqual(max + 60);
    expect(redactCapped("short", 100)).toBe("short");
  });

  test("the cut never splits a surrogate pair", () => {
    const text = `${"x".repeat(9)}😀${"y".repeat(50)}`;
    const out = redactCapped(text, 10);
    expect(out.startsWith(`${"x".repeat(9)} …[truncated`)).toBe(true);
  });

  test("when redaction collapses long secrets, a secret across the end of the redacted window is still found", () => {
    // With a 300-character cap the first 300 + 32 KiB characters are redacted. Base64 keys fill them and
    // shrink to "[secret]", so a URL whose credentials straddle that window's end lands inside the cap.
    const max = 300;
    const url = "postgres://admin:hunter2@db.internal/metrics";
    const keys = `${"x ".repeat(50)}${`${"aB3".repeat(700)} `.repeat(15)}`;
    const last = max + 32 * 1024 - keys.length - url.indexOf("hunter2") - 3;
    const text = `${keys}${"aB3".repeat(last).slice(0, last - 1)} ${url} and more`;
    expect(text.indexOf("hunter2")).toBe(max + 32 * 1024 - 3);
    const out = redactCapped(text, max);
    expect(out).toContain("postgres://[credentials]@db.internal");
    expect(out).not.toContain("admin");
    expect(out).not.toContain("hunter");
  });

  test("redactDeep shares one budget among the strings of a value", () => {
    const out = redactDeep({ text: `mail a@example.com ${"z".repeat(500)}`, more: ["kept?", "password=x"], n: 3 }, 100) as {
      text: string;
      more: string[];
      n: number;
    };
    expect(out.text.startsWith("mail [email] zzz")).toBe(true);
    expect(out.text).toContain("…[truncated: 519 characters in all");
    expect(out.more).toEqual([
      "…[truncated: 5 characters in all, AI_LOG_MAX_CHARS]",
      "…[truncated: 10 characters in all, AI_LOG_MAX_CHARS]",
    ]);
    expect(out.n).toBe(3);
    expect(redactDeep({ a: "token abcdefgh1234" })).toEqual({ a: "token [token]" });
  });
});

describe("generation_log store", () => {
  let store: Awaited<ReturnType<typeof createTestConfigStore>>;
  let ws: string;
  let other: string;
  beforeAll(async () => {
    store = await createTestConfigStore();
    ws = (await createWorkspace(store.pool, { name: "log", viewer_group: "v", editor_group: "e", admin_group: "a" })).id;
    other = (await createWorkspace(store.pool, { name: "other", viewer_group: "v2", editor_group: "e2", admin_group: "a2" })).id;
  });
  afterAll(() => store.close());

  test("stored rows never contain the secrets of the prompt or of the returned text", async () => {
    const log = createGenerationLog({ pool: store.pool, retentionDays: 0, costPerMTok: { input: 0, output: 0 }, maxChars: 20_000 });
    for (const [, , prompt] of SECRETS) {
      await log.write({
        workspaceId: ws,
        userSub: "u",
        route: "chat",
        prompt,
        result: { text: `echo: ${prompt}` },
        model: "m",
        inputTokens: 1,
        outputTokens: 1,
        outcome: "ok",
      });
    }
    const { rows } = await store.pool.query("SELECT prompt, result::text AS result FROM generation_log WHERE workspace_id = $1", [ws]);
    const dump = JSON.stringify(rows);
    for (const [, secret] of SECRETS) expect(dump).not.toContain(secret.replaceAll('"', '\\"'));
  });

  test("cost from the per-million prices; retention swept on write and applied on read; per workspace", async () => {
    const clock = { t: Date.UTC(2026, 2, 1, 12) };
    const log = createGenerationLog({
      pool: store.pool,
      retentionDays: 30,
      costPerMTok: { input: 3, output: 15 },
      maxChars: 20_000,
      now: () => clock.t,
    });
    const base = { userSub: "u", route: "generate" as const, prompt: "p", result: null, model: "m", outcome: "ok" as const };
    const first = await log.write({ ...base, workspaceId: other, inputTokens: 1_000_000, outputTokens: 100_000 });
    expect(first.cost).toBeCloseTo(4.5);
    clock.t += 20 * 86_400_000;
    await log.write({ ...base, workspaceId: other, inputTokens: 10, outputTokens: 10 });
    expect(await log.list(other)).toHaveLength(2);
    // 31 days after the first row: filtered on read before any write sweeps it.
    clock.t += 11 * 86_400_000;
    expect((await log.list(other)).map((r) => r.inputTokens)).toEqual([10]);
    const raw = await store.pool.query("SELECT count(*)::int AS n FROM generation_log WHERE workspace_id = $1", [other]);
    expect(raw.rows[0].n).toBe(2);
    await log.write({ ...base, workspaceId: other, inputTokens: 5, outputTokens: 5 });
    const swept = await store.pool.query("SELECT count(*)::int AS n FROM generation_log WHERE workspace_id = $1", [other]);
    expect(swept.rows[0].n).toBe(2);
    // Another workspace's list never includes these rows.
    const mine = await log.list(ws);
    expect(mine.every((r) => r.route === "chat")).toBe(true);
    const listed = await log.list(other);
    expect(listed[0]).toMatchObject({ route: "generate", model: "m", inputTokens: 5, outputTokens: 5, outcome: "ok" });
  });
});
