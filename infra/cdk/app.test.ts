import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CURRENTLY_RECOMMENDED_FLAGS } from "aws-cdk-lib/cx-api";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { CDK_JSON_CONTEXT } from "./test-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: a synthesized CloudFormation template is untyped JSON, read here by deep paths
type Json = any;

// Each test runs the CDK app in a child process (tsx, a full synthesis): tens of seconds on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

const CDK_DIR = fileURLToPath(new URL(".", import.meta.url));
const TSX = fileURLToPath(new URL("../../node_modules/tsx/dist/cli.mjs", import.meta.url));

let outdir: string;
beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "pulseboard-cdk-app-"));
});
afterAll(async () => {
  await rm(outdir, { recursive: true, force: true });
});

/** Runs the CDK app the way the CDK CLI does (cdk.json's command, context in CDK_CONTEXT_JSON). */
function runApp(context: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX, "app.ts"], {
      cwd: CDK_DIR,
      env: {
        PATH: process.env.PATH ?? "",
        CDK_OUTDIR: outdir,
        // The CLI merges cdk.json's context (the feature flags) with -c values.
        CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON_CONTEXT, ...context }),
        // CloudFormation's rules run in validate.test.ts; this is about the app's own wiring.
        CDK_VALIDATION: "false",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.once("exit", (code) => resolve({ code, stderr }));
  });
}

it("cdk.json runs app.ts, which synthesizes the stack from prebuilt images named in context", async () => {
  const cdkJson = JSON.parse(readFileSync(join(CDK_DIR, "cdk.json"), "utf8"));
  expect(cdkJson.app).toBe("npx tsx app.ts");
  const { code, stderr } = await runApp({
    imageTag: "abc123",
    handlersRepository: "pulseboard-handlers",
    streamHostRepository: "pulseboard-stream-host",
    stackName: "PulseboardStaging",
    streamHostDesiredCount: "3",
  });
  expect(code, stderr).toBe(0);
  const template = JSON.parse(readFileSync(join(outdir, "PulseboardStaging.template.json"), "utf8"));
  const service = Object.values(template.Resources as Record<string, { Type: string; Properties: Json }>).find(
    (r) => r.Type === "AWS::ECS::Service",
  );
  expect(service?.Properties.DesiredCount).toBe(3);
  expect(JSON.stringify(template)).toContain("pulseboard-handlers:abc123");
  expect(existsSync(join(outdir, "manifest.json"))).toBe(true);
});

it("refuses half of the prebuilt-image context, naming what must go together", async () => {
  const { code, stderr } = await runApp({ imageTag: "abc123" });
  expect(code).not.toBe(0);
  expect(stderr).toContain("imageTag, handlersRepository and streamHostRepository must be given together");
});

const PREBUILT = { imageTag: "abc123", handlersRepository: "pulseboard-handlers", streamHostRepository: "pulseboard-stream-host" };

it("provisioningFile: reads the file and its dashboards' specFiles, checks it, and hands it to the provision container", async () => {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-cdk-provisioning-"));
  const spec = { title: "Errors", time: { from: "now-1h", to: "now" }, panels: [] };
  await writeFile(join(dir, "errors.json"), JSON.stringify(spec));
  await writeFile(
    join(dir, "pulseboard.yaml"),
    "workspaces:\n  - id: ws_ops\n    name: Ops\n    groups: {viewer: v, editor: e, admin: a}\n    dashboards:\n      - id: db_errors\n        specFile: errors.json\n",
  );
  const { code, stderr } = await runApp({
    ...PREBUILT,
    stackName: "PulseboardProvisioned",
    provisioningFile: join(dir, "pulseboard.yaml"),
  });
  expect(code, stderr).toBe(0);
  const template = JSON.parse(readFileSync(join(outdir, "PulseboardProvisioned.template.json"), "utf8"));
  const task = Object.values(template.Resources as Record<string, { Type: string; Properties: Json }>).find(
    (r) => r.Type === "AWS::ECS::TaskDefinition",
  );
  const provision = task?.Properties.ContainerDefinitions.find((c: { Name: string }) => c.Name === "provision");
  const env = Object.fromEntries(provision.Environment.map((e: { Name: string; Value: unknown }) => [e.Name, e.Value]));
  expect(JSON.parse(env.PROVISION_DOCUMENT as string)).toEqual({
    workspaces: [{ id: "ws_ops", name: "Ops", groups: { viewer: "v", editor: "e", admin: "a" }, dashboards: [{ id: "db_errors", spec }] }],
  });

  await writeFile(join(dir, "bad.yaml"), "workspaces:\n  - id: ops\n    name: Ops\n    groups: {viewer: v, editor: e, admin: a}\n");
  const bad = await runApp({ ...PREBUILT, provisioningFile: join(dir, "bad.yaml") });
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toContain("workspaces[ops].id: must be ws_ followed by");
  await rm(dir, { recursive: true, force: true });
});

it("cdk.json carries every feature flag the installed aws-cdk-lib recommends, with its recommended value", () => {
  expect(CDK_JSON_CONTEXT).toMatchObject(CURRENTLY_RECOMMENDED_FLAGS);
  expect(CDK_JSON_CONTEXT["@aws-cdk/core:validateAgainstDefaultRules"]).toBe(true);
});
