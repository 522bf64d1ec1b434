import { App } from "aws-cdk-lib";
import { PulseboardStack } from "./pulseboard-stack.ts";

/** Test helper: the stack with prebuilt ECR images, so synthesizing needs no Docker. */
export function synthTestStack(
  outdir: string,
  opts: { validate: boolean; provisionDocument?: string; skipAcknowledgements?: boolean },
): { app: App; stack: PulseboardStack } {
  const app = new App({
    outdir,
    builtinCloudFormationValidation: opts.validate,
    // Findings of CloudFormation's own rules fail synthesis instead of being printed as warnings.
    context: { "@aws-cdk/core:validateAgainstDefaultRules": true },
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
