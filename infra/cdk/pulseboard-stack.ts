import { Aws, Token, CfnCondition, CfnOutput, CfnParameter, Fn, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { AppSecrets } from "./app-secrets.ts";
import { ConfigStore } from "./config-store.ts";
import { acknowledgeFindings } from "./nag-acknowledgements.ts";
import { AccessLogs, Alarms, addFlowLogs } from "./operations.ts";
import { CONNECTION_BUDGET, connectionsAtMost } from "./constants.ts";
import { Edge } from "./edge.ts";
import { HandlersFunction } from "./handlers-function.ts";
import { type ImageSources, resolveImages } from "./images.ts";
import type { RuntimeSettings } from "./runtime-settings.ts";
import { StreamHostService } from "./stream-host-service.ts";

export interface PulseboardStackProps extends StackProps {
  images: ImageSources;
  /** Stream host tasks (default 2, so a deploy or a task failure never leaves no stream host). */
  streamHostDesiredCount?: number;
  /** Deletion protection of the config store (default true). */
  deletionProtection?: boolean;
  /**
   * A provisioning document (JSON, docs/provisioning.md; app.ts reads it from the provisioningFile context): every
   * starting stream host task applies it after its migrations, idempotently.
   */
  provisionDocument?: string;
  /** Reserved concurrency of the handlers function (default CONNECTION_BUDGET.handlersConcurrency). */
  handlersReservedConcurrency?: number;
  /** Test seam: false leaves the cdk-nag acknowledgements out, to prove the rules still run (default true). */
  acknowledgeNagFindings?: boolean;
  /** Config store with a standby in a second AZ (default true). */
  multiAz?: boolean;
  /** Custom domain names for CloudFront and their ACM certificate in us-east-1 (default: the cloudfront.net name). */
  domain?: { names: string[]; certificateArn: string };
}

/** Stream host tasks that can run at once: a deployment starts the new ones before it stops the old (200 %). */
export const STREAM_HOST_MAX_PERCENT = 200;

/**
 * Pulseboard on AWS: CloudFront → { Lambda function URL (handlers), ALB → Fargate (stream host) },
 * RDS PostgreSQL as the config store, Secrets Manager for every secret. Deploy-time settings that are not
 * secrets are CloudFormation parameters, so one synthesized template serves every environment.
 */
export class PulseboardStack extends Stack {
  constructor(scope: Construct, id: string, props: PulseboardStackProps) {
    super(scope, id, props);

    const param = (name: string, description: string, extra: { default?: string; allowedValues?: string[] } = {}) =>
      new CfnParameter(this, name, { type: "String", description, ...extra }).valueAsString;

    const sourceSecretRefsParam = new CfnParameter(this, "SourceSecretRefs", {
      type: "String",
      minLength: 1,
      description:
        "SOURCE_SECRET_REFS: which workspaces may use which secret_ref, e.g. METRICS_RO:*;BILLING_RO:finance. Required in production.",
    });
    // The linter guesses "Secret" in the name means a password; the value is secret names and grants.
    Validations.of(this).acknowledge({
      id: "CloudFormation-Validate::W2509",
      reason: "SOURCE_SECRET_REFS holds secret names and workspace grants, never a secret value",
    });
    const sourceSecretRefs = sourceSecretRefsParam.valueAsString;
    // Required like SourceSecretRefs: in production a secret_ref that no host entry binds is refused, so an
    // empty value would leave every granted ref unusable.
    const sourceSecretHosts = new CfnParameter(this, "SourceSecretHosts", {
      type: "String",
      minLength: 1,
      description:
        "SOURCE_SECRET_HOSTS: hosts each secret_ref may connect to, e.g. METRICS_RO:*.metrics.internal. Required: production refuses a secret_ref it does not bind.",
    }).valueAsString;
    const publicBaseUrl = param("PublicBaseUrl", "PUBLIC_BASE_URL, e.g. https://dash.example.com (empty: unset)", {
      default: "",
    });
    const oidcIssuer = param("OidcIssuer", "OIDC_ISSUER (empty: unset)", { default: "" });
    const oidcClientId = param("OidcClientId", "OIDC_CLIENT_ID (empty: unset)", { default: "" });
    const oidcRedirectUri = param("OidcRedirectUri", "OIDC_REDIRECT_URI (empty: unset)", { default: "" });
    const aiProvider = param("AiProvider", "AI_PROVIDER: gateway or compat (empty: AI unconfigured)", {
      default: "",
      allowedValues: ["", "gateway", "compat"],
    });
    const aiModel = param("AiModel", "AI_MODEL (empty: unset)", { default: "" });
    const aiCompatBaseUrl = param("AiCompatBaseUrl", "AI_COMPAT_BASE_URL when AiProvider is compat", { default: "" });
    const metricsScrapeCidr = new CfnParameter(this, "MetricsScrapeCidr", {
      type: "String",
      default: "",
      // An IPv4 range, or empty for none.
      allowedPattern: "^$|^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$",
      description:
        "An IPv4 range outside the VPC allowed to scrape the stream host's /api/metrics (Prometheus in a peered VPC), e.g. 10.50.0.0/16; added to both the tasks' security group and METRICS_ALLOWED_CIDRS (empty: the VPC only)",
    });
    const hasScrapeCidr = new CfnCondition(this, "HasMetricsScrapeCidr", {
      expression: Fn.conditionNot(Fn.conditionEquals(metricsScrapeCidr.valueAsString, "")),
    });
    const platformAdminGroup = param(
      "PlatformAdminGroup",
      "PLATFORM_ADMIN_GROUP: the OIDC group whose members create and manage workspaces (empty: nobody; workspaces then come only from the provisioning file)",
      { default: "" },
    );

    // The config store's connection budget, by construction: refuse to build a stack that could exceed it.
    const desiredCount = props.streamHostDesiredCount ?? 2;
    const handlersConcurrency = props.handlersReservedConcurrency ?? CONNECTION_BUDGET.handlersConcurrency;
    const atMost = connectionsAtMost({
      ...CONNECTION_BUDGET,
      handlersConcurrency,
      streamHostTasks: Math.ceil((desiredCount * STREAM_HOST_MAX_PERCENT) / 100),
    });
    const available = CONNECTION_BUDGET.maxConnections - CONNECTION_BUDGET.reserved;
    if (atMost > available) {
      throw new Error(
        `config-store connection budget exceeded: up to ${atMost} connections (handlersReservedConcurrency ${handlersConcurrency}, ` +
          `streamHostDesiredCount ${desiredCount}) but max_connections ${CONNECTION_BUDGET.maxConnections} leaves ${available}; ` +
          "lower one of them or raise max_connections with the instance class (infra/cdk/constants.ts)",
      );
    }

    const vpc = new ec2.Vpc(this, "Vpc", {
      maxAzs: 2,
      natGateways: 1,
      subnetConfiguration: [
        { name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: "app", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
        { name: "data", subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 },
      ],
    });

    const secrets = new AppSecrets(this, "Secrets");
    const configStore = new ConfigStore(this, "ConfigStore", {
      vpc,
      deletionProtection: props.deletionProtection ?? true,
      multiAz: props.multiAz ?? true,
    });
    addFlowLogs(this, vpc);
    const accessLogs = new AccessLogs(this, "AccessLogs");
    const images = resolveImages(this, props.images);

    // Source credentials resolve to Secrets Manager secrets `<prefix><secret_ref>` holding {username,password}.
    const sourceSecretsPrefix = `${this.stackName}/sources/`;

    // What both processes share. Empty parameter values count as unset (lib/config).
    const shared: RuntimeSettings = {
      plain: {
        NODE_ENV: "production",
        DATABASE_URL: configStore.databaseUrl,
        SOURCE_SECRET_REFS: sourceSecretRefs,
        SOURCE_SECRET_HOSTS: sourceSecretHosts,
        SOURCE_SECRETS_AWS_PREFIX: sourceSecretsPrefix,
        PUBLIC_BASE_URL: publicBaseUrl,
        OIDC_ISSUER: oidcIssuer,
        OIDC_CLIENT_ID: oidcClientId,
        OIDC_REDIRECT_URI: oidcRedirectUri,
        AI_PROVIDER: aiProvider,
        AI_MODEL: aiModel,
        AI_COMPAT_BASE_URL: aiCompatBaseUrl,
        PLATFORM_ADMIN_GROUP: platformAdminGroup,
      },
      // Both processes log in with the rotating least-privilege credentials (user and password of one version).
      secrets: {
        PGUSER: { secret: configStore.appSecret, field: "username" },
        PGPASSWORD: { secret: configStore.appSecret, field: "password" },
        SESSION_SECRET: { secret: secrets.sessionSecret },
      },
    };
    // Each process gets only the secrets it uses.
    const handlersSecrets = {
      ...shared.secrets,
      OIDC_CLIENT_SECRET: { secret: secrets.oidcClientSecret },
      // One key secret serves either provider; the app reads the variable of the provider it selects.
      AI_GATEWAY_API_KEY: { secret: secrets.aiApiKey },
      AI_COMPAT_API_KEY: { secret: secrets.aiApiKey },
      ORIGIN_VERIFY_SECRET: { secret: secrets.originSecret },
    };
    const streamHostSecrets = { ...shared.secrets, METRICS_TOKEN: { secret: secrets.metricsToken } };

    const streamHost = new StreamHostService(this, "StreamHost", {
      vpc,
      image: images.streamHost,
      desiredCount,
      maxHealthyPercent: STREAM_HOST_MAX_PERCENT,
      settings: { plain: shared.plain, secrets: streamHostSecrets },
      scrapeCidr: { cidr: metricsScrapeCidr.valueAsString, condition: hasScrapeCidr },
      setupSecrets: {
        PGUSER: { secret: configStore.secret, field: "username" },
        PGPASSWORD: { secret: configStore.secret, field: "password" },
        SESSION_SECRET: { secret: secrets.sessionSecret },
      },
      provisionDocument: props.provisionDocument,
    });
    const handlers = new HandlersFunction(this, "Handlers", {
      vpc,
      image: images.handlers,
      // Behind Lambda nothing scrapes the handlers: their LLM counters go to CloudWatch as EMF (docs/infra.md).
      settings: { plain: { ...shared.plain, METRICS_EMF: "true" }, secrets: handlersSecrets },
      reservedConcurrency: handlersConcurrency,
    });

    // The stream host's tasks migrate the config store before they start; updating the function only after
    // the service is stable means new handler code never meets an old schema.
    handlers.function.node.addDependency(streamHost.service);

    configStore.allowFrom(handlers.function, "Pulseboard handlers");
    configStore.allowFrom(streamHost.securityGroup, "Pulseboard stream host");

    const sourceSecretsArn = `arn:${Aws.PARTITION}:secretsmanager:${Aws.REGION}:${Aws.ACCOUNT_ID}:secret:${sourceSecretsPrefix}*`;
    const readSourceSecrets = new iam.PolicyStatement({
      actions: ["secretsmanager:GetSecretValue"],
      resources: [sourceSecretsArn],
    });
    handlers.function.addToRolePolicy(readSourceSecrets);
    streamHost.service.taskDefinition.addToTaskRolePolicy(readSourceSecrets);

    const edge = new Edge(this, "Edge", {
      handlersUrl: handlers.url,
      streamHostLoadBalancer: streamHost.loadBalancer,
      originSecret: secrets.originSecret,
      logBucket: accessLogs.bucket,
      domain: props.domain,
    });
    // ALB access logs need the region's log-delivery principal, known only when the stack has a concrete region
    // (cdk deploy with a region configured); an environment-agnostic synthesis leaves them off, acknowledged below.
    const albLogs = !Token.isUnresolved(this.region);
    if (albLogs) streamHost.loadBalancer.logAccessLogs(accessLogs.bucket, "alb");
    new Alarms(this, "Alarms", {
      distribution: edge.distribution,
      targetGroup: streamHost.targetGroup,
      database: configStore.instance,
    });
    if (props.acknowledgeNagFindings !== false)
      acknowledgeFindings(this, { accessLogs, secrets, streamHost, handlers, edge, configStore, hasDomain: !!props.domain, albLogs });

    new CfnOutput(this, "Url", { value: `https://${edge.distribution.distributionDomainName}` });
    new CfnOutput(this, "MetricsTokenSecretArn", { value: secrets.metricsToken.secretArn });
    new CfnOutput(this, "AiApiKeySecretArn", { value: secrets.aiApiKey.secretArn });
    new CfnOutput(this, "OidcClientSecretArn", { value: secrets.oidcClientSecret.secretArn });
    new CfnOutput(this, "ConfigStoreSecretArn", { value: configStore.secret.secretArn });
    new CfnOutput(this, "SourceSecretsPrefix", { value: sourceSecretsPrefix });
    new CfnOutput(this, "HandlersFunctionUrl", { value: handlers.url.url });
  }
}
