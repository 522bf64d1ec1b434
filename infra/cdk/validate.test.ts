import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { synthTestStack } from "./test-stack.ts";

// Kept apart from stack.test.ts: the CDK's built-in CloudFormation rules take most of a synthesis's time.
it("the template passes CloudFormation's built-in rules with no unacknowledged finding", async () => {
  const outdir = await mkdtemp(join(tmpdir(), "pulseboard-cdk-validate-"));
  try {
    const { app } = synthTestStack(outdir, { validate: true });
    // validateAgainstDefaultRules makes an error-level finding throw here.
    const assembly = app.synth();
    const report = JSON.parse(readFileSync(join(assembly.directory, "validation-report.json"), "utf8"));
    const reports = report.pluginReports as { pluginName: string; conclusion: string; violations: unknown[] }[];
    expect(reports.map((r) => [r.pluginName, r.conclusion])).toContainEqual(["CloudFormation Validate", "success"]);
    expect(reports.flatMap((r) => r.violations)).toEqual([]);
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
});
