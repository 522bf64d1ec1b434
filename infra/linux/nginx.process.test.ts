// Debian's nginx with the shipped configuration (infra/linux/nginx/pulseboard.conf) in front of the built bundles
// (`npm run build`: the files the images ship), each process started as its systemd unit starts it (ExecStart in the
// unit's working directory, the unit's environment files with the test's database, ports and identity provider):
// sign-in and a live stream through the proxy, the /api/metrics gate seeing the client's own address and refusing a
// spoofed header, and the drain frame reaching a viewer through the proxy when the stream host gets SIGTERM.
// nginx runs as a child of the test (not the system service), with its own prefix, on a loopback port.
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { signInThroughDevIdp } from "../../lib/dev-idp/testing/sign-in.ts";
import { type DevIdentityProvider, devIdpEnv, startDevIdentityProvider } from "../../lib/dev-idp/index.ts";
import { freePort } from "../../lib/embedded/postgres.ts";
import { type MetricsFixture, createMetricsFixture } from "../../lib/query/testing/metrics-db.ts";
import { createDatabase } from "../../lib/testing/pg.ts";
import { type Running, root, track } from "../../scripts/testing/processes.ts";
import { nginxConf, unitCommand, unitEnvironment } from "./testing/unit-files.ts";

const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
const METRICS_TOKEN = "m".repeat(32);
/** The Prometheus server's address (allowed by nginx and by the stream host's gate). */
const SCRAPER = "127.0.0.2";
/** Allowed by nginx, not by the gate: it sends the scraper's address in X-Forwarded-For. */
const SPOOFER = "127.0.0.3";

let work: string;
let metrics: MetricsFixture;
let idp: DevIdentityProvider;
let nginx: Running | undefined;
let handlers: Running | undefined;
let streamHost: Running | undefined;
let origin: string;
let env: Record<string, string>;

/** Runs a unit's ExecStart in the build folder (its WorkingDirectory) with its environment files and `env` on top. */
function startUnit(unit: string, extra: Record<string, string> = {}): Running {
  const [node, ...args] = unitCommand(unit);
  const child = spawn(node === "/usr/bin/node" ? process.execPath : node!, args, {
    cwd: work,
    env: { PATH: process.env.PATH ?? "", ...unitEnvironment(unit), ...env, ...extra },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return track(child);
}

/** One replacement that must match the shipped file exactly once, so a drifting file fails here. */
function replaceOnce(text: string, from: string | RegExp, to: string): string {
  const count = typeof from === "string" ? text.split(from).length - 1 : [...text.matchAll(new RegExp(from, "g"))].length;
  if (count !== 1) throw new Error(`infra/linux/nginx/pulseboard.conf: expected one ${from}, found ${count}`);
  return text.replace(from, to);
}

/** A GET from a chosen loopback address (as a client on another host would come from its own). */
function get(
  path: string,
  opts: { from?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { localAddress: opts.from, headers: opts.headers }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, type: String(res.headers["content-type"] ?? ""), body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe.runIf(NGINX)("nginx in front of the built bundles", () => {
  let cookie: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "pulseboard-nginx-"));
    await chmod(work, 0o755);
    // The bundles the images ship, built as `npm run build` builds them, into this folder's dist/.
    execFileSync(process.execPath, ["esbuild.config.mjs", "--outdir", join(work, "dist")], { cwd: root, stdio: "pipe" });

    metrics = await createMetricsFixture((await createDatabase("nginx_metrics")).url);
    await metrics.admin("CREATE TABLE http_requests (ts timestamptz NOT NULL, status integer NOT NULL)");
    await metrics.admin("INSERT INTO http_requests SELECT now() - g * interval '1 minute', 200 FROM generate_series(1, 30) g");
    const reader = await metrics.createRole("pb_nginx_reader", "nginx-reader-pw", [
      "GRANT USAGE ON SCHEMA public TO %I",
      "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I",
    ]);
    const [port, handlersPort, streamPort] = [await freePort(), await freePort(), await freePort()];
    origin = `http://127.0.0.1:${port}`;
    idp = await startDevIdentityProvider({
      clientId: "pulseboard-nginx",
      clientSecret: "nginx-test-client-secret",
      redirectUri: `${origin}/api/auth/callback`,
    });
    env = {
      // Production refuses an http:// OIDC_ISSUER, and the development identity provider speaks plain HTTP on
      // loopback: the one production rule this test cannot meet (the env files' other settings apply as shipped).
      NODE_ENV: "",
      DATABASE_URL: (await createDatabase("nginx_cfg")).url,
      SESSION_SECRET: "s".repeat(40),
      PUBLIC_BASE_URL: origin,
      ...devIdpEnv(idp),
      PORT: String(handlersPort),
      STREAM_PORT: String(streamPort),
      METRICS_ALLOWED_CIDRS: `${SCRAPER}/32`,
      METRICS_TOKEN,
      SOURCE_SECRETS_DIR: "",
      SOURCE_SECRET_REFS: "METRICS:ws_nginx",
      SOURCE_SECRET_HOSTS: `METRICS:${metrics.host}`,
      SOURCE_ALLOWED_HOSTS: `${metrics.host}:${metrics.port}`,
      METRICS_USERNAME: reader,
      METRICS_PASSWORD: "nginx-reader-pw",
      SHUTDOWN_GRACE_MS: "10000",
    };

    // The migrate unit, then the provisioning bundle: a workspace whose viewers are the identity provider's.
    const migrate = startUnit("pulseboard-migrate.service");
    expect(await migrate.exited, migrate.output()).toBe(0);
    await writeFile(
      join(work, "pulseboard.yaml"),
      `workspaces:
  - id: ws_nginx
    name: Behind nginx
    groups: { viewer: demo-viewers, editor: demo-editors, admin: demo-admins }
    sources:
      - { id: src_nginx, name: Metrics, host: ${metrics.host}, port: ${metrics.port}, database: ${metrics.database}, sslmode: disable, secretRef: METRICS }
    dashboards:
      - id: db_nginx
        spec:
          title: Requests
          refreshIntervalMs: 2000
          time: { from: now-1h, to: now }
          panels:
            - { id: total, title: Requests, type: stat, sourceId: src_nginx, sql: "SELECT count(*) AS n FROM http_requests WHERE $__timeFilter(ts)" }
`,
    );
    const provision = track(
      spawn(process.execPath, ["dist/provision/main.mjs", "pulseboard.yaml"], {
        cwd: work,
        env: { PATH: process.env.PATH ?? "", ...unitEnvironment("pulseboard-handlers.service"), ...env },
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    expect(await provision.exited, provision.output()).toBe(0);

    handlers = startUnit("pulseboard-handlers.service");
    streamHost = startUnit("pulseboard-stream-host.service");
    await handlers.waitFor("handlers listening", 60_000);
    await streamHost.waitFor("stream host listening", 60_000);

    // The shipped server block, with this test's ports and metrics allow list; nginx's own files in `prefix`.
    let server = nginxConf();
    server = replaceOnce(server, "listen 80;", `listen 127.0.0.1:${port};`);
    server = replaceOnce(server, "server 127.0.0.1:8080;", `server 127.0.0.1:${handlersPort};`);
    server = replaceOnce(server, "server 127.0.0.1:8081;", `server 127.0.0.1:${streamPort};`);
    server = replaceOnce(server, /allow 10\.0\.0\.5;[^\n]*/, `allow ${SCRAPER}; allow ${SPOOFER};`);
    const prefix = join(work, "nginx");
    for (const d of ["logs", "body", "proxy", "fastcgi", "uwsgi", "scgi"]) {
      await mkdir(join(prefix, d), { recursive: true });
      await chmod(join(prefix, d), 0o777);
    }
    await writeFile(join(prefix, "pulseboard.conf"), server);
    await writeFile(
      join(prefix, "nginx.conf"),
      `worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log;
events { worker_connections 256; }
http {
  access_log ${prefix}/logs/access.log;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  include ${prefix}/pulseboard.conf;
}
`,
    );
    nginx = track(
      spawn(NGINX!, ["-p", prefix, "-c", join(prefix, "nginx.conf"), "-g", "daemon off;"], { stdio: ["ignore", "pipe", "pipe"] }),
    );
    for (let i = 0; ; i++) {
      const ok = await get("/api/health").then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (nginx.child.exitCode !== null || i > 300) throw new Error(`nginx did not serve:\n${nginx.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 600_000);

  afterAll(async () => {
    for (const p of [nginx, handlers, streamHost]) {
      if (p && p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGTERM");
        await p.exited;
      }
    }
    await idp?.stop();
    await metrics?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test("sign-in through the proxy: the callback lands on the proxy's origin and the session works there", async () => {
    const browser = { request: (url: string, init?: RequestInit) => fetch(url, { ...init, redirect: "manual" }) };
    const signIn = await signInThroughDevIdp({ app: browser, appOrigin: origin, userId: "demo-viewer" });
    expect(signIn.callbackResponse.status).toBe(302);
    cookie = signIn.appJar.header();
    const me = await fetch(`${origin}/api/me`, { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ sub: "demo-viewer", workspaces: [{ id: "ws_nginx", role: "viewer" }] });
  });

  test("/api/metrics: the scraper's own address passes both gates; a spoofed X-Forwarded-For or X-Real-IP does not", async () => {
    const auth = { authorization: `Bearer ${METRICS_TOKEN}` };
    const scrape = await get("/api/metrics", { from: SCRAPER, headers: auth });
    expect(scrape.status).toBe(200);
    expect(scrape.body).toContain("svc_pollers_active");

    // nginx lets the spoofer through, appends its real address, and the stream host's gate reads that last hop.
    const spoofs: Record<string, string>[] = [
      { "x-forwarded-for": SCRAPER },
      { "x-forwarded-for": `10.9.9.9, ${SCRAPER}` },
      { "x-real-ip": SCRAPER },
    ];
    for (const spoof of spoofs) {
      const refused = await get("/api/metrics", { from: SPOOFER, headers: { ...auth, ...spoof } });
      expect(refused.status, JSON.stringify(spoof)).toBe(403);
      expect(refused.type).toContain("application/problem+json");
    }
    // An address outside nginx's allow list never reaches the stream host.
    const outside = await get("/api/metrics", { from: "127.0.0.1", headers: { ...auth, "x-forwarded-for": SCRAPER } });
    expect(outside.status).toBe(403);
    expect(outside.body).toContain("nginx");
  });

  test("a stream through the proxy: frames arrive while it is open, and SIGTERM to the stream host sends the drain frame through", async () => {
    const stream = await fetch(`${origin}/api/dashboards/db_nginx/stream`, { headers: { cookie } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let frames = "";
    // Unbuffered: the snapshot and a panel frame come through while the stream host keeps the response open.
    while (!frames.includes("event: panel")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early:\n${frames}`);
      frames += decoder.decode(value, { stream: true });
    }
    expect(frames).toContain("event: snapshot");
    expect(frames).toMatch(/"panelId":"total"/);

    // What systemd does on `systemctl stop` (KillSignal=SIGTERM).
    streamHost!.child.kill("SIGTERM");
    while (!frames.includes("event: draining")) {
      const { value, done } = await reader.read();
      if (done) break;
      frames += decoder.decode(value, { stream: true });
    }
    expect(frames).toMatch(/retry: \d+\nevent: draining/);
    expect(await streamHost!.exited).toBe(0);
    expect(streamHost!.output()).toMatch(/"msg":"exiting","code":0/);
    // The handlers drain on SIGTERM too.
    handlers!.child.kill("SIGTERM");
    expect(await handlers!.exited).toBe(0);
  });
});
