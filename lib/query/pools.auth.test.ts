import { execFileSync } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { type AddressInfo, type Server, type Socket, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TLSSocket } from "node:tls";
import pg from "pg";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../config/parse.ts";
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from "../embedded/postgres.ts";
import type { AppError } from "../http/errors.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { createSecretResolver } from "../secrets/resolver.ts";
import type { Source, SslMode } from "../sources/store.ts";
import { rejection } from "../testing/rejection.ts";
import { createHostPolicy } from "../sources/host-policy.ts";
import { parseHostList } from "../net/host-list.ts";
import { createConnectionBudget, createSourcePool, passwordAuthAllowed, scramIterations } from "./pools.ts";
import { type QueryRunner, createQueryRunner } from "./runner.ts";

const PASSWORD = "S3cret-source-pw-7f1c";
const USERNAME = "pb_reader_auth";

function expectRefused(err: AppError, kind: "cleartext" | "MD5" | "weak SCRAM", host: string, port: number) {
  expect(err.code).toBe("source_unavailable");
  expect(err.extra).toEqual({ cause: "insecure_auth" });
  expect(err.detail).toContain(
    kind === "weak SCRAM" ? "SCRAM password authentication with fewer than 4096 iterations" : `${kind} password authentication`,
  );
  expect(err.detail).toContain("sslmode=verify-full");
  const shown = JSON.stringify([err.detail, err.extra]);
  for (const secret of [host, `:${port}`, PASSWORD, USERNAME]) expect(shown).not.toContain(secret);
}

// --- A fake PostgreSQL server that speaks just enough of the startup/auth protocol and records what it receives ---

interface FakeConnection {
  /** Every byte the client sent after the startup message (decrypted when TLS was negotiated). */
  afterStartup: Buffer[];
  /** Type bytes of the messages the client sent after the startup message. */
  messages: string[];
  tls: boolean;
  closed: Promise<void>;
}

interface FakeServer {
  port: number;
  connections: FakeConnection[];
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const PROTOCOL_3 = 196608;

type Ask = "cleartext" | "md5" | "scram";

/** An authentication request message ('R'): code and payload. */
function authMessage(code: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.write("R", 0);
  head.writeInt32BE(8 + payload.length, 1);
  head.writeInt32BE(code, 5);
  return Buffer.concat([head, payload]);
}

function authRequest(ask: Ask): Buffer {
  if (ask === "scram") return authMessage(10, Buffer.from("SCRAM-SHA-256\0\0"));
  if (ask === "cleartext") return Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]);
  return Buffer.from([0x52, 0, 0, 0, 12, 0, 0, 0, 5, 0xde, 0xad, 0xbe, 0xef]);
}
const AUTH_OK = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]);
const READY = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

async function startFakeServer(opts: {
  ask: Ask;
  tls?: { key: string; cert: string };
  /** SCRAM: the iteration count the server offers in its first message. */
  iterations?: number;
}): Promise<FakeServer> {
  const connections: FakeConnection[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    let release: () => void = () => {};
    const conn: FakeConnection = {
      afterStartup: [],
      messages: [],
      tls: false,
      closed: new Promise<void>((r) => {
        release = r;
      }),
    };
    connections.push(conn);
    sock.on("close", () => {
      sockets.delete(sock);
      release();
    });
    sock.on("error", () => {});
    let stream: Socket | TLSSocket = sock;
    let buf = Buffer.alloc(0);
    let started = false;
    const onData = (chunk: Buffer) => {
      if (started) conn.afterStartup.push(chunk);
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (!started) {
          if (buf.length < 8) return;
          const len = buf.readInt32BE(0);
          if (buf.length < len) return;
          const code = buf.readInt32BE(4);
          const rest = buf.subarray(len);
          buf = Buffer.alloc(0);
          if (code === SSL_REQUEST) {
            if (!opts.tls) {
              sock.write("N");
              buf = rest;
              continue;
            }
            sock.removeListener("data", onData);
            sock.write("S");
            conn.tls = true;
            stream = new TLSSocket(sock, { isServer: true, key: opts.tls.key, cert: opts.tls.cert });
            stream.on("error", () => {});
            stream.on("data", onData);
            return;
          }
          expect(code).toBe(PROTOCOL_3);
          started = true;
          if (rest.length > 0) conn.afterStartup.push(rest);
          buf = rest;
          stream.write(authRequest(opts.ask));
          continue;
        }
        if (buf.length < 5) return;
        const len = buf.readInt32BE(1);
        if (buf.length < 1 + len) return;
        const type = String.fromCharCode(buf[0]);
        const body = buf.subarray(5, 1 + len);
        buf = buf.subarray(1 + len);
        conn.messages.push(type);
        if (type === "p" && opts.ask === "scram") {
          if (conn.messages.length === 1) {
            // SASLInitialResponse: mechanism, length, "n,,n=*,r=<client nonce>" → server-first-message.
            const clientNonce = /r=([^,]+)$/.exec(body.toString("latin1"))?.[1] ?? "";
            const first = `r=${clientNonce}srvnonce,s=${Buffer.from("salt-salt").toString("base64")},i=${opts.iterations ?? 4096}`;
            stream.write(authMessage(11, Buffer.from(first)));
          } else stream.end(); // the client's proof arrived: that is all this test needs to see
        } else if (type === "p") stream.write(Buffer.concat([AUTH_OK, READY]));
        if (type === "X") stream.end();
      }
    };
    sock.on("data", onData);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function source(port: number, sslmode: SslMode, host = "127.0.0.1"): Source {
  return {
    id: "src_auth_test",
    workspaceId: "ws_a",
    name: "auth",
    host,
    port,
    database: "metrics",
    sslmode,
    secretRef: "METRICS",
    schemas: ["public"],
    catalog: { tables: [] },
    catalogRefreshedAt: new Date(0),
    notes: "",
    version: 1,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}

/** A pool checkout that must fail; a client that connects anyway goes straight back, so the test fails fast. */
function refusedCheckout(p: pg.Pool): Promise<AppError> {
  return rejection(
    p.connect().then((client) => {
      client.release();
      return client;
    }),
  );
}

const loopbackAllowed = createHostPolicy({
  allowed: parseHostList("127.0.0.1").entries,
  configStore: null,
  listenerPorts: [],
});

/** A pool as the runner builds it; `ca` trusts the test certificate (verify-ca/verify-full still check it). */
function pool(src: Source, ca?: string): pg.Pool {
  const p = createSourcePool({
    source: src,
    credentials: async () => ({ username: USERNAME, password: PASSWORD }),
    // The test servers listen on loopback, which the host policy refuses unless allowed.
    target: () => loopbackAllowed.check(src),
    budget: createConnectionBudget(20),
    max: 1,
    timeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    idleTimeoutMs: 1_000,
  });
  const ssl = (p as unknown as { options: { ssl: false | { ca?: string } } }).options.ssl;
  if (ca && ssl) ssl.ca = ca;
  return p;
}

let tlsFiles: { key: string; cert: string } | null = null;
let certDir: string;

beforeAll(async () => {
  certDir = await mkdtemp(join(tmpdir(), "pb-auth-cert-"));
  try {
    // A self-signed certificate for 127.0.0.1; passed as `ca`, it is the trust anchor of the verify-* cases.
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(certDir, "key.pem"),
        "-out",
        join(certDir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    tlsFiles = {
      key: await readFile(join(certDir, "key.pem"), "utf8"),
      cert: await readFile(join(certDir, "cert.pem"), "utf8"),
    };
  } catch {
    tlsFiles = null;
  }
});

afterAll(async () => {
  await rm(certDir, { recursive: true, force: true });
});

describe("a server asking for cleartext or MD5 without verified TLS never receives the password", () => {
  test.each([
    ["cleartext", "disable"],
    ["md5", "disable"],
  ] as const)("%s request, sslmode=%s: refused before any password message", async (ask, sslmode) => {
    const fake = await startFakeServer({ ask });
    const p = pool(source(fake.port, sslmode));
    try {
      const err = await refusedCheckout(p);
      expectRefused(err, ask === "md5" ? "MD5" : "cleartext", "127.0.0.1", fake.port);
      expect(fake.connections).toHaveLength(1);
      await fake.connections[0].closed;
      expect(fake.connections[0].messages).toEqual([]);
      expect(Buffer.concat(fake.connections[0].afterStartup).includes(PASSWORD)).toBe(false);
    } finally {
      await p.end();
      await fake.close();
    }
  });

  test.each([
    ["cleartext", "require"],
    ["md5", "require"],
    ["cleartext", "verify-ca"],
  ] as const)("%s request over TLS, sslmode=%s (server not fully verified): refused", async (ask, sslmode) => {
    if (!tlsFiles) return expect.fail("openssl is needed to make the test certificate");
    const fake = await startFakeServer({ ask, tls: tlsFiles });
    const p = pool(source(fake.port, sslmode), tlsFiles.cert);
    try {
      const err = await refusedCheckout(p);
      expectRefused(err, ask === "md5" ? "MD5" : "cleartext", "127.0.0.1", fake.port);
      await fake.connections[0].closed;
      expect(fake.connections[0].tls).toBe(true);
      expect(fake.connections[0].messages).toEqual([]);
    } finally {
      await p.end();
      await fake.close();
    }
  });

  test.each(["cleartext", "md5"] as const)("%s request under sslmode=verify-full is answered", async (ask) => {
    if (!tlsFiles) return expect.fail("openssl is needed to make the test certificate");
    const fake = await startFakeServer({ ask, tls: tlsFiles });
    const p = pool(source(fake.port, "verify-full"), tlsFiles.cert);
    try {
      const client = await p.connect();
      client.release();
      const conn = fake.connections[0];
      expect(conn.tls).toBe(true);
      expect(conn.messages[0]).toBe("p");
      const sent = Buffer.concat(conn.afterStartup);
      expect(sent.includes(PASSWORD)).toBe(ask === "cleartext");
    } finally {
      await p.end();
      await fake.close();
    }
  });

  test("SCRAM offering fewer than 4096 iterations is refused before the client's proof is sent", async () => {
    const fake = await startFakeServer({ ask: "scram", iterations: 1 });
    const p = pool(source(fake.port, "disable"));
    try {
      const err = await refusedCheckout(p);
      expectRefused(err, "weak SCRAM", "127.0.0.1", fake.port);
      await fake.connections[0].closed;
      // Only the SASLInitialResponse (no secret in it); never the SASLResponse carrying the proof.
      expect(fake.connections[0].messages).toEqual(["p"]);
    } finally {
      await p.end();
      await fake.close();
    }
  });

  test("SCRAM with PostgreSQL's default 4096 iterations proceeds to the proof", async () => {
    const fake = await startFakeServer({ ask: "scram", iterations: 4096 });
    const p = pool(source(fake.port, "disable"));
    try {
      // The fake ends the connection after reading the proof, so the checkout fails (not with our refusal).
      await expect(p.connect()).rejects.toThrow(/terminated/);
      await fake.connections[0].closed;
      expect(fake.connections[0].messages).toEqual(["p", "p"]);
    } finally {
      await p.end();
      await fake.close();
    }
  });

  test("scramIterations reads i= and nothing else", () => {
    expect(scramIterations("r=abc,s=c2FsdA==,i=4096")).toBe(4096);
    expect(scramIterations("r=abc,s=c2FsdA==,i=1")).toBe(1);
    expect(scramIterations("r=abc,s=c2FsdA==")).toBeNaN();
    expect(scramIterations("r=abc,s=c2FsdA==,i=4096x")).toBeNaN();
    expect(scramIterations("r=i=99999,s=x,i=2")).toBe(2);
  });

  test("the decision needs verify-full AND a TLS socket that verified the server", () => {
    expect(passwordAuthAllowed("verify-full", { encrypted: true, authorized: true })).toBe(true);
    expect(passwordAuthAllowed("verify-full", { encrypted: true, authorized: false })).toBe(false);
    expect(passwordAuthAllowed("verify-full", {})).toBe(false);
    for (const mode of ["disable", "allow", "prefer", "require", "verify-ca"] as const) {
      expect(passwordAuthAllowed(mode, { encrypted: true, authorized: true })).toBe(false);
    }
  });
});

// --- Real PostgreSQL servers configured with `password` (cleartext) and `md5` pg_hba methods ---

describe("against real PostgreSQL servers", () => {
  let dir: string;
  let clear: EmbeddedPostgresHandle;
  let md5: EmbeddedPostgresHandle;
  const runners: QueryRunner[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pulseboard-auth-pg-"));
    await chmod(dir, 0o755);
    [clear, md5] = await Promise.all([
      startEmbeddedPostgres({ dataDir: join(dir, "clear"), authMethod: "password", password: "admin-pw-clear" }),
      startEmbeddedPostgres({ dataDir: join(dir, "md5"), authMethod: "md5", password: "admin-pw-md5" }),
    ]);
    for (const [server, encryption] of [
      [clear, "scram-sha-256"],
      [md5, "md5"],
    ] as const) {
      const admin = new pg.Client({ connectionString: server.url("postgres") });
      await admin.connect();
      await admin.query(`SET password_encryption = '${encryption}'`);
      await admin.query(`CREATE ROLE ${USERNAME} LOGIN PASSWORD '${PASSWORD}'`);
      // Stored as a SCRAM verifier: an `md5` pg_hba entry then runs SCRAM for this role.
      await admin.query("SET password_encryption = 'scram-sha-256'");
      await admin.query(`CREATE ROLE pb_scram_auth LOGIN PASSWORD '${PASSWORD}'`);
      await admin.end();
    }
  }, 180_000);

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.closeAll()));
    await Promise.all([clear?.stop(), md5?.stop()]);
    await rm(dir, { recursive: true, force: true });
  });

  function runner(env: Record<string, string> = {}) {
    const { config } = parseConfig({
      DATABASE_URL: "postgres://unused@127.0.0.1/unused",
      SOURCE_SECRET_REFS: "METRICS:ws_a;SCRAM:ws_a",
      QUERY_TIMEOUT_SECONDS: "5",
      // The test servers listen on loopback, which the host policy refuses unless allowed.
      SOURCE_ALLOWED_HOSTS: "127.0.0.1",
      ...env,
    });
    const r = createQueryRunner({
      config,
      metrics: createMetrics(new Registry(), { defaultCollectors: false }),
      guard: { check: (sql) => ({ ok: true, sql, params: [] }) },
      secrets: createSecretResolver({
        config,
        env: {
          METRICS_USERNAME: USERNAME,
          METRICS_PASSWORD: PASSWORD,
          SCRAM_USERNAME: "pb_scram_auth",
          SCRAM_PASSWORD: PASSWORD,
        },
      }),
    });
    runners.push(r);
    return r;
  }

  const at = (server: EmbeddedPostgresHandle, sslmode: SslMode, secretRef = "METRICS"): Source => ({
    ...source(server.port, sslmode),
    id: `src_${secretRef.toLowerCase()}_${sslmode}_${server.port}`,
    database: "postgres",
    secretRef,
  });

  test("pg_hba `password` (cleartext): refused under disable and under prefer (the server has no TLS)", async () => {
    const r = runner();
    for (const mode of ["disable", "prefer"] as const) {
      const err = await rejection(r.testConnection(at(clear, mode)));
      expectRefused(err, "cleartext", "127.0.0.1", clear.port);
    }
  });

  test("pg_hba `password` refuses a SCRAM-stored role the same way: the server, not the role, picks the exchange", async () => {
    const err = await rejection(runner().testConnection(at(clear, "disable", "SCRAM")));
    expectRefused(err, "cleartext", "127.0.0.1", clear.port);
  });

  test("pg_hba `md5` with an MD5-stored password: refused", async () => {
    const err = await rejection(runner().testConnection(at(md5, "disable")));
    expectRefused(err, "MD5", "127.0.0.1", md5.port);
  });

  test("SCRAM stays allowed without TLS (an `md5` entry runs SCRAM for a SCRAM-stored role)", async () => {
    const r = runner();
    await expect(r.testConnection(at(md5, "disable", "SCRAM"))).resolves.toMatchObject({ elapsedMs: expect.any(Number) });
    const rows = await r.execute({ source: at(md5, "disable", "SCRAM"), sql: "SELECT current_user" });
    expect(rows.rows).toEqual([["pb_scram_auth"]]);
  });

  test("SOURCE_SECRET_HOSTS: a listed host connects; any other host is grant_missing before a connection is made", async () => {
    const r = runner({ SOURCE_SECRET_HOSTS: "SCRAM:127.0.0.1;METRICS:metrics.internal" });
    await expect(r.testConnection(at(md5, "disable", "SCRAM"))).resolves.toBeTruthy();
    // Same machine, but not the listed name: the list is compared as written, never resolved.
    const other = await rejection(r.testConnection({ ...at(md5, "disable", "SCRAM"), id: "src_localhost", host: "localhost" }));
    expect(other.code).toBe("grant_missing");
    expect(other.extra).toEqual({ secretRef: "SCRAM", reason: "host_not_allowed" });
    expect(other.detail).not.toContain("localhost");

    const fake = await startFakeServer({ ask: "cleartext" });
    try {
      const err = await rejection(r.testConnection({ ...source(fake.port, "disable"), id: "src_fake_host" }));
      expect(err.code).toBe("grant_missing");
      expect(err.detail).toContain("secret_ref METRICS");
      expect(fake.connections).toEqual([]);
      expect(r.poolStats("src_fake_host")).toBeNull();
    } finally {
      await fake.close();
    }
  });
});
