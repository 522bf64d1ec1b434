// The CDK app: `cd infra/cdk && npx aws-cdk@2 deploy --parameters SourceSecretRefs='...'` (see docs/infra.md).
//
// Context (-c name=value):
//   imageTag, handlersRepository, streamHostRepository  use images CI already pushed to ECR (all three together);
//                                                        otherwise `cdk deploy` builds both Dockerfiles with Docker
//   gitCommit                                            GIT_COMMIT baked into images built here
//   stackName (default Pulseboard), streamHostDesiredCount (default 2), deletionProtection (default true)
//   provisioningFile                                     a provisioning file (docs/provisioning.md), relative to
//                                                        infra/cdk or absolute: checked here, applied by every
//                                                        starting stream host task after its migrations
//   multiAz (default true)                               config store standby in a second AZ; false halves its cost
//   domainName, certificateArn                           custom domain(s) (comma list) and their ACM certificate in
//                                                        us-east-1 for CloudFront; viewers then need TLS 1.2+
//   handlersReservedConcurrency (default 12)            the handlers' reserved concurrency; the stack refuses a
//                                                        count that breaks the config store's connection budget
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { App } from "aws-cdk-lib";
import { defaultDocumentOptions, parseProvisioningDocument, readProvisioningFile } from "../../lib/provisioning/document.ts";
import type { ImageSources } from "./images.ts";
import { PulseboardStack } from "./pulseboard-stack.ts";

const app = new App();
const context = (name: string): string | undefined => {
  const value = app.node.tryGetContext(name);
  return value === undefined || value === "" ? undefined : String(value);
};

const imageTag = context("imageTag");
const handlersRepository = context("handlersRepository");
const streamHostRepository = context("streamHostRepository");
const prebuilt = [imageTag, handlersRepository, streamHostRepository];
if (prebuilt.some(Boolean) && !prebuilt.every(Boolean)) {
  throw new Error("imageTag, handlersRepository and streamHostRepository must be given together");
}
const images: ImageSources =
  imageTag && handlersRepository && streamHostRepository
    ? { kind: "ecr", handlersRepository, streamHostRepository, tag: imageTag }
    : { kind: "asset", repoRoot: fileURLToPath(new URL("../..", import.meta.url)), gitCommit: context("gitCommit") };

const desired = context("streamHostDesiredCount");
if (desired !== undefined && !/^[1-9][0-9]*$/.test(desired)) {
  throw new Error(`streamHostDesiredCount must be a positive integer, got ${JSON.stringify(desired)}`);
}
const concurrency = context("handlersReservedConcurrency");
if (concurrency !== undefined && !/^[1-9][0-9]*$/.test(concurrency)) {
  throw new Error(`handlersReservedConcurrency must be a positive integer, got ${JSON.stringify(concurrency)}`);
}
// Read (with its dashboards' specFiles) and checked now, so a broken file fails `cdk synth`, not the deployed task.
const provisioningFile = context("provisioningFile");
let provisionDocument: string | undefined;
if (provisioningFile) {
  const raw = await readProvisioningFile(resolve(provisioningFile));
  parseProvisioningDocument(raw, defaultDocumentOptions());
  provisionDocument = JSON.stringify(raw);
}
const domainName = context("domainName");
const certificateArn = context("certificateArn");
if (Boolean(domainName) !== Boolean(certificateArn)) {
  throw new Error("domainName and certificateArn (an ACM certificate in us-east-1) must be given together");
}
new PulseboardStack(app, context("stackName") ?? "Pulseboard", {
  multiAz: context("multiAz") !== "false",
  domain: domainName && certificateArn ? { names: domainName.split(",").map((d) => d.trim()), certificateArn } : undefined,
  images,
  provisionDocument,
  streamHostDesiredCount: desired === undefined ? undefined : Number(desired),
  handlersReservedConcurrency: concurrency === undefined ? undefined : Number(concurrency),
  deletionProtection: context("deletionProtection") !== "false",
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
app.synth();
