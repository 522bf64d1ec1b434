import { readFileSync } from "node:fs";
import { App } from "aws-cdk-lib";
import { PulseboardStack } from "./pulseboard-stack.ts";

/** cdk.json's context (the feature flags `cdk deploy` runs with), so tests synthesize what a deploy does. */
export const CDK_JSON_CONTEXT: Record<string, unknown> = JSON.parse(readFileSync(new URL("./cdk.json", import.meta.url), "utf8")).context;

/** Test helper: the stack with prebuilt ECR images, so synthesizing needs no Docker. */
export function synthTestStack(
  outdir: string,
  opts: { validate: boolean; provisionDocument?: string; skipAcknowledgements?: boolean },
): { app: App; stack: PulseboardStack } {
  const app = new App({
    outdir,
    builtinCloudFormationValidation: opts.validate,
    // Findings of CloudFormation's own rules fail synthesis instead of being printed as warnings.
    context: { ...CDK_JSON_CONTEXT, "@aws-cdk/core:validateAgainstDefaultRules": true },
  });
  const stack = new PulseboardStack(app, "Pulseboard", {
    images: {
      kind: "ecr",
      handlersRepository: "pulseboard-handlers",
      streamHostRepository: "pulseboard-stream-host",
      tag: "test-tag",
    },
    provisionDocument: opts.provisionDocument,
    acknowledgeNagFindings: !opts.skipAcknowledgements,
  });
  return { app, stack };
}
