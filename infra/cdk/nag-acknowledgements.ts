import { type Stack, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";
import type { AppSecrets } from "./app-secrets.ts";
import type { ConfigStore } from "./config-store.ts";
import type { Edge } from "./edge.ts";
import type { HandlersFunction } from "./handlers-function.ts";
import type { AccessLogs } from "./operations.ts";
import type { StreamHostService } from "./stream-host-service.ts";

/**
 * The cdk-nag AwsSolutions findings this stack accepts, each on the narrowest construct with its reason
 * (infra/cdk/nag.test.ts fails on any other). Everything else the rules ask for is built in.
 */
export function acknowledgeFindings(
  stack: Stack,
  c: {
    accessLogs: AccessLogs;
    secrets: AppSecrets;
    streamHost: StreamHostService;
    handlers: HandlersFunction;
    edge: Edge;
    configStore: ConfigStore;
    hasDomain: boolean;
    albLogs: boolean;
  },
): void {
  const ack = (scope: IConstruct, id: string, reason: string) => Validations.of(scope).acknowledge({ id: `AwsSolutions-${id}`, reason });

  ack(c.accessLogs.bucket, "S1", "This is the access-log bucket itself; logging it into itself would loop");
  for (const secret of [c.secrets.sessionSecret, c.secrets.originSecret]) {
    ack(
      secret,
      "SMG4",
      "Rotated by the operator with put-secret-value; processes accept the previous value for one refresh (docs/infra.md)",
    );
  }
  ack(c.secrets.metricsToken, "SMG4", "Prometheus reads it from a file; rotating it means updating that file too, done by the operator");
  ack(c.secrets.aiApiKey, "SMG4", "An external provider's key: only the provider can issue a new one");
  ack(c.secrets.oidcClientSecret, "SMG4", "An external identity provider's client secret: only the provider can issue a new one");
  ack(
    c.configStore.instance,
    "RDS11",
    "A non-default port adds no protection; the security group admits only the app's tasks and function",
  );
  ack(
    c.streamHost.securityGroup,
    "EC23",
    "Ingress is the VPC's own CIDR and the optional MetricsScrapeCidr on the scrape port (tokens cdk-nag cannot read)",
  );
  const peered = c.streamHost.node.tryFindChild("PeeredScrapeIngress");
  if (peered) ack(peered, "EC23", "The operator's MetricsScrapeCidr (validated as one IPv4 range) on the scrape port only");
  ack(
    c.streamHost.service.taskDefinition,
    "ECS2",
    "Plain environment holds settings only; secrets come from Secrets Manager (APP_SECRETS_AWS, ECS secrets)",
  );
  ack(
    c.streamHost.service.taskDefinition,
    "IAM5[Resource::*]",
    "ecr:GetAuthorizationToken and log-stream creation in the execution role support no narrower resource",
  );
  const sourcesFinding = `IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${stack.stackName}/sources/*]`;
  for (const scope of [c.streamHost.service.taskDefinition, c.handlers.function]) {
    ack(scope, sourcesFinding, "Source credentials are looked up by secret_ref under the stack's sources/ prefix, which operators fill");
  }
  ack(
    c.handlers.function,
    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    "AWS's minimal managed policy for a function's own log group",
  );
  ack(
    c.handlers.function,
    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
    "AWS's minimal managed policy for a function's network interfaces in the VPC",
  );
  // The CDK's singleton provider of AwsCustomResource (the CloudFront prefix-list lookup) lives at the stack root.
  ack(
    stack,
    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    "The CDK's custom-resource provider function writes only its own logs",
  );
  ack(c.streamHost, "IAM5[Resource::*]", "ec2:DescribeManagedPrefixLists supports no resource-level permission");
  ack(c.edge.distribution, "CFR1", "The service has no geographic restriction; add one in CloudFront if a deployment needs it");
  ack(c.edge.distribution, "CFR2", "No WAF by default (cost); attach a web ACL for public deployments (docs/infra.md)");
  if (!c.albLogs) {
    ack(
      c.streamHost.loadBalancer,
      "ELB2",
      "Access logs need the region's log-delivery principal: on whenever the stack is synthesized for a concrete region",
    );
  }
  if (!c.hasDomain) {
    ack(
      c.edge.distribution,
      "CFR4",
      "The default *.cloudfront.net certificate cannot set a minimum TLS version; -c domainName/certificateArn sets TLS 1.2",
    );
  }
}
