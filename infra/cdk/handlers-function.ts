import { Duration } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { CONNECTION_BUDGET, HANDLERS_CHECK_PORT, HANDLERS_PORT, HEALTH_PATH } from "./constants.ts";
import type { ImageRef } from "./images.ts";
import { appSecretsEnvironment, mergeSettings, type RuntimeSettings } from "./runtime-settings.ts";

export interface HandlersFunctionProps {
  vpc: ec2.IVpc;
  image: ImageRef;
  settings: RuntimeSettings;
  /** Reserved concurrency: the most instances, hence pools, that can exist at once (the connection budget). */
  reservedConcurrency: number;
}

/**
 * The handlers as a container-image Lambda function. The image runs `node dist/handlers/main.mjs` listening on
 * PORT; the Lambda Web Adapter extension in /opt/extensions turns invocations into HTTP requests to it and
 * waits for AWS_LWA_READINESS_CHECK_PATH to answer before the first one. Exposed through a function URL that
 * CloudFront uses as its default origin.
 */
export class HandlersFunction extends Construct {
  readonly function: lambda.DockerImageFunction;
  readonly url: lambda.FunctionUrl;

  constructor(scope: Construct, id: string, props: HandlersFunctionProps) {
    super(scope, id);
    const settings = mergeSettings(props.settings, {
      plain: {
        // Also baked into the image; repeated here so the deployed configuration says it outright.
        PORT: String(HANDLERS_PORT),
        AWS_LWA_PORT: String(HANDLERS_PORT),
        AWS_LWA_READINESS_CHECK_PATH: HEALTH_PATH,
        // The main port refuses requests without the CDN's origin secret; the adapter checks a loopback port
        // that answers /api/health only.
        AWS_LWA_READINESS_CHECK_PORT: String(HANDLERS_CHECK_PORT),
        HEALTH_CHECK_PORT: String(HANDLERS_CHECK_PORT),
        // The dashboard chat streams its answer (SSE); the adapter and the function URL must stream too.
        AWS_LWA_INVOKE_MODE: "response_stream",
        // SIGTERM drains (in-flight work finishes, pools released) instead of exiting 143 mid-request.
        FRAMEWORK_MANUAL_SIG_HANDLE: "true",
        // One request at a time per Lambda instance: a small pool keeps many instances within RDS limits.
        PG_POOL_MAX: String(CONNECTION_BUDGET.handlersPool),
      },
      secrets: {},
    });
    this.function = new lambda.DockerImageFunction(this, "Function", {
      description: "Pulseboard handlers (Hono behind the Lambda Web Adapter)",
      code: lambda.DockerImageCode.fromEcr(props.image.repository, { tagOrDigest: props.image.tag }),
      architecture: lambda.Architecture.X86_64,
      memorySize: 1024,
      // AI routes may take AI_REQUEST_TIMEOUT_MS (60 s by default) plus the rest of the request.
      timeout: Duration.seconds(90),
      reservedConcurrentExecutions: props.reservedConcurrency,
      vpc: props.vpc,
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
      logGroup: new logs.LogGroup(this, "Logs", { retention: logs.RetentionDays.ONE_MONTH }),
    });
    // Secrets are read from Secrets Manager by the process (APP_SECRETS_AWS), never put in its configuration.
    for (const [name, value] of Object.entries(appSecretsEnvironment(settings, this.function))) {
      this.function.addEnvironment(name, value);
    }
    // AuthType NONE: CloudFront's Origin Access Control for function URLs would require browsers to sign
    // POST bodies (x-amz-content-sha256), which the app's forms and fetches do not do. See docs/infra.md.
    this.url = this.function.addFunctionUrl({
      authType: lambda.FunctionUrlAuthType.NONE,
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
    });
  }
}
