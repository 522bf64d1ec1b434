// npm run --silent session:mint -- --sub ID --groups a,b [--ttl 1h] [--name N] [--email E]
// Prints a session cookie value (an HS256 token signed with SESSION_SECRET) for scripts and tests.
// Refuses in production: a minted session bypasses the identity provider.
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createSessionTokens } from "../lib/auth/session.ts";
import { variables } from "../lib/config/variables.ts";

const USAGE = "usage: npm run --silent session:mint -- --sub ID --groups a,b [--ttl 1h] [--name NAME] [--email EMAIL]";

/** Parses a lifetime: seconds (`3600`) or a number with s, m, h or d (`90s`, `15m`, `1h`, `7d`). */
export function parseTtl(text: string): number | null {
  const m = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (!m) return null;
  const seconds = Number(m[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "" | "s" | "m" | "h" | "d"];
  return seconds > 0 && seconds <= 400 * 86400 ? seconds : null;
}

/** Runs the CLI; returns the exit code. Output goes through `out`/`err` so tests can call it in process. */
export async function main(
  argv: string[],
  env: Record<string, string | undefined>,
  io: { out(line: string): void; err(line: string): void } = {
    out: (l) => process.stdout.write(`${l}\n`),
    err: (l) => process.stderr.write(`${l}\n`),
  },
): Promise<number> {
  if (env.NODE_ENV === "production") {
    io.err("session:mint refuses to run in production: sessions there come only from the identity provider.");
    return 1;
  }
  let values: { sub?: string; groups?: string; ttl?: string; name?: string; email?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        sub: { type: "string" },
        groups: { type: "string" },
        ttl: { type: "string" },
        name: { type: "string" },
        email: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    io.err(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (!values.sub?.trim()) {
    io.err(`--sub is required\n${USAGE}`);
    return 2;
  }
  if (values.groups === undefined) {
    io.err(`--groups is required (comma-separated; --groups "" for none)\n${USAGE}`);
    return 2;
  }

  // Only the two variables this command uses are read (through their schemas in the variables
  // table), so it runs without a DATABASE_URL or the rest of the server's configuration.
  const secret = variables.SESSION_SECRET.schema.safeParse(env.SESSION_SECRET);
  const defaultTtl = variables.SESSION_TTL_SECONDS.schema.safeParse(env.SESSION_TTL_SECONDS);
  if (!defaultTtl.success) {
    io.err(`SESSION_TTL_SECONDS: ${defaultTtl.error.issues.map((i) => i.message).join("; ")}`);
    return 1;
  }
  if (!secret.success || !secret.data) {
    io.err("SESSION_SECRET is required: the token must verify against the secret the server uses.");
    return 1;
  }
  const ttl = values.ttl === undefined ? defaultTtl.data : parseTtl(values.ttl);
  if (ttl === null) {
    io.err(`--ttl must be seconds or a number with s, m, h or d (for example 1h), at most 400d\n${USAGE}`);
    return 2;
  }
  if (ttl > defaultTtl.data) {
    // The services refuse a token that lives longer than SESSION_TTL_SECONDS (docs/auth.md, "Lifetime rules").
    io.err(`--ttl may not exceed SESSION_TTL_SECONDS (${defaultTtl.data} s): the services refuse longer sessions\n${USAGE}`);
    return 2;
  }
  const groups = values.groups
    .split(",")
    .map((g) => g.trim())
    .filter(Boolean);
  const sessions = createSessionTokens({ secret: secret.data, ttlSeconds: defaultTtl.data });
  io.out(await sessions.mint({ sub: values.sub.trim(), groups, name: values.name, email: values.email }, ttl));
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.exitCode = await main(process.argv.slice(2), process.env);
}
