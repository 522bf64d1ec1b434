// The plain-Linux files as an operator installs them: units that drain within their kill timeout, environment
// files the configuration accepts, and an nginx configuration that routes exactly the stream host's paths.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { parseConfig } from "../../lib/config/parse.ts";
import { variables } from "../../lib/config/variables.ts";
import { STREAM_HOST_PATHS } from "../../lib/http/stream-host-paths.ts";
import { pathToFileURL } from "node:url";
import { root } from "../../scripts/testing/processes.ts";
import { imageEnv, imageNodeFlags } from "../dockerfile.ts";
import { LINUX_DIR, envFile, nginxConf, unitCommand, unitEnvironment, unitSettings } from "./testing/unit-files.ts";

const { TARGETS } = (await import(pathToFileURL(`${root}esbuild.config.mjs`).href)) as { TARGETS: { name: string }[] };
const SERVING_UNITS = ["pulseboard-handlers.service", "pulseboard-stream-host.service"];

describe.each(SERVING_UNITS)("%s", (unit) => {
  const settings = unitSettings(unit);
  const env = unitEnvironment(unit);

  test("node is the main process, on a bundle the build makes", () => {
    const [node, ...args] = unitCommand(unit);
    expect(node).toBe("/usr/bin/node");
    const bundle = args.find((a) => !a.startsWith("-"));
    const target = /^dist\/([^/]+)\/main\.mjs$/.exec(bundle!)?.[1];
    expect(TARGETS.map((t) => t.name)).toContain(target);
  });

  test("SIGTERM drains, and the kill timeout is above SHUTDOWN_GRACE_MS", () => {
    expect(settings.get("Service.KillSignal")).toEqual(["SIGTERM"]);
    expect(env.FRAMEWORK_MANUAL_SIG_HANDLE).toBe("true");
    const graceMs = variables.SHUTDOWN_GRACE_MS.schema.parse(env.SHUTDOWN_GRACE_MS) as number;
    const timeoutSec = Number(settings.get("Service.TimeoutStopSec")![0]);
    expect(timeoutSec * 1000).toBeGreaterThan(graceMs);
    expect(settings.get("Unit.Requires")).toEqual(["pulseboard-migrate.service"]);
  });

  test("its environment files parse as a production configuration (placeholders filled the way an operator does)", () => {
    const { config } = parseConfig({ ...env });
    expect(config.NODE_ENV).toBe("production");
    expect(config.LISTEN_HOST).toBe("127.0.0.1");
  });
});

test("the handlers and the stream host listen where nginx's upstreams point", () => {
  const conf = nginxConf();
  expect(conf).toContain(`server 127.0.0.1:${envFile("handlers.env").PORT};`);
  expect(conf).toContain(`server 127.0.0.1:${envFile("stream-host.env").STREAM_PORT};`);
});

test("nginx sends every stream-host path, and only those, to the stream host, unbuffered for the streams", () => {
  const conf = nginxConf();
  const toStreamHost = [...conf.matchAll(/location (=|~) (\S+) \{([^}]*)\}/g)]
    .filter((m) => m[3]!.includes("proxy_pass http://pulseboard_stream_host;"))
    .map((m) => ({ kind: m[1], path: m[2]!, body: m[3]! }));
  const expected = STREAM_HOST_PATHS.map((p) =>
    p.includes("*") ? { kind: "~", path: `^${p.replace("*", "[^/]+")}$` } : { kind: "=", path: p },
  );
  expect(toStreamHost.map(({ kind, path }) => ({ kind, path }))).toEqual(expected);
  for (const loc of toStreamHost.filter((l) => l.kind === "~")) expect(loc.body).toContain("proxy_buffering off;");
  expect(conf).toContain("proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;");
  expect(toStreamHost.find((l) => l.path === "/api/metrics")!.body).toMatch(/allow [^;]+;[\s\S]*deny all;/);
});

test("the stream host's unit runs node with the memory settings of the container image (its ENV and its CMD's flags)", () => {
  const env = unitEnvironment("pulseboard-stream-host.service");
  const image = imageEnv("Dockerfile.stream-host");
  expect(env.GLIBC_TUNABLES).toBe(image.GLIBC_TUNABLES);
  expect(env.NODE_OPTIONS).toBe(image.NODE_OPTIONS);
  const [, ...args] = unitCommand("pulseboard-stream-host.service");
  expect(
    args.slice(
      0,
      args.findIndex((a) => !a.startsWith("-")),
    ),
  ).toEqual(imageNodeFlags("Dockerfile.stream-host"));
});

test.runIf(existsSync("/usr/bin/systemd-analyze"))("systemd-analyze verify accepts the units", () => {
  // Offline verification: unit syntax and settings; it does not start anything. User=pulseboard need not exist.
  const units = ["pulseboard-migrate.service", ...SERVING_UNITS].map((u) => `${LINUX_DIR}systemd/${u}`);
  const run = spawnSync("systemd-analyze", ["verify", "--man=no", ...units], { encoding: "utf8" });
  const out = `${run.stdout}\n${run.stderr}`;
  const problems = out
    .split("\n")
    .filter((l) => l.trim() !== "")
    // Missing on a build machine, present on the server: the service user, /opt/pulseboard and the env files.
    .filter(
      (l) => !/pulseboard\.(env|service)|handlers\.env|stream-host\.env|\/opt\/pulseboard|user|Unit configured|network-online/i.test(l),
    );
  expect(problems).toEqual([]);
  expect(run.status).toBe(0);
});
