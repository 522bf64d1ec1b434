import { type CfnCondition, Duration, Fn } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as elbv2 from "aws-cdk-lib/aws-elasticloadbalancingv2";
import * as logs from "aws-cdk-lib/aws-logs";
import * as servicediscovery from "aws-cdk-lib/aws-servicediscovery";
import * as cr from "aws-cdk-lib/custom-resources";
import { Construct } from "constructs";
import {
  ALB_IDLE_TIMEOUT_SECONDS,
  CONNECTION_BUDGET,
  DEREGISTRATION_DELAY_SECONDS,
  HEALTH_CHECK_GRACE_SECONDS,
  LIVENESS_COMMAND,
  READY_PATH,
  SERVICE_DISCOVERY_NAMESPACE,
  SHUTDOWN_GRACE_MS,
  STOP_TIMEOUT_SECONDS,
  STREAM_HOST_DISCOVERY_NAME,
  STREAM_HOST_PORT,
  TASK_STOP_POLL_MS,
} from "./constants.ts";
import type { ImageRef } from "./images.ts";
import { appSecretsEnvironment, ecsSecrets, mergeSettings, type RuntimeSettings, type SecretVariable } from "./runtime-settings.ts";

export interface StreamHostServiceProps {
  vpc: ec2.IVpc;
  image: ImageRef;
  /** The stream host process's settings; its secrets are read from Secrets Manager by the process. */
  settings: RuntimeSettings;
  /**
   * The master user's PGUSER/PGPASSWORD (and what production config validation asks for), given as ECS
   * secrets only to the setup containers that run before the stream host: migrate, app-role and provision.
   */
  setupSecrets: Record<string, SecretVariable>;
  desiredCount: number;
  /** A provisioning document (JSON) a `provision` container applies after `migrate` and before the stream host starts. */
  provisionDocument?: string;
  /**
   * One more range allowed to scrape /api/metrics (Prometheus in a peered VPC), when `condition` holds: it goes
   * into both the tasks' security group and METRICS_ALLOWED_CIDRS, so the two never disagree.
   */
  scrapeCidr?: { cidr: string; condition: CfnCondition };
  /** Tasks a deployment may run at once, in percent of desiredCount (part of the connection budget). */
  maxHealthyPercent: number;
}

/** ECS holds a task definition of up to 64 KiB; the provisioning document may take half. */
const MAX_PROVISION_DOCUMENT_BYTES = 32 * 1024;

/** AWS's managed prefix list of CloudFront's origin-facing addresses. */
const CLOUDFRONT_ORIGIN_FACING = "com.amazonaws.global.cloudfront.origin-facing";

/**
 * The always-on stream host: Fargate tasks behind an internal ALB whose target group checks /api/ready, a 20 s stop
 * timeout above the 10 s drain budget, and Cloud Map A records so Prometheus can scrape every task.
 * Each task first runs the config-store migrations in a short-lived `migrate` container (advisory-locked,
 * so concurrent tasks are safe); the stream host starts only when that container exited 0.
 */
export class StreamHostService extends Construct {
  readonly service: ecs.FargateService;
  readonly loadBalancer: elbv2.ApplicationLoadBalancer;
  readonly targetGroup: elbv2.ApplicationTargetGroup;
  readonly securityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: StreamHostServiceProps) {
    super(scope, id);
    const { vpc } = props;

    const cluster = new ecs.Cluster(this, "Cluster", {
      vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
      defaultCloudMapNamespace: { name: SERVICE_DISCOVERY_NAMESPACE, vpc },
    });

    const settings = mergeSettings(props.settings, {
      plain: {
        STREAM_PORT: String(STREAM_HOST_PORT),
        FRAMEWORK_MANUAL_SIG_HANDLE: "true",
        SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
        // The ECS agent sets ECS_CONTAINER_METADATA_URI_V4; the host drains as soon as the task is stopping.
        TASK_STOP_POLL_MS: String(TASK_STOP_POLL_MS),
        // Part of the config store's connection budget (constants.ts).
        PG_POOL_MAX: String(CONNECTION_BUDGET.streamHostPool),
        // Prometheus scrapes the tasks from inside the VPC. Requests through CloudFront and the ALB carry
        // the CloudFront edge as the last X-Forwarded-For hop, which is outside this range, so they are refused.
        METRICS_ALLOWED_CIDRS: props.scrapeCidr
          ? Fn.conditionIf(
              props.scrapeCidr.condition.logicalId,
              Fn.join(",", [vpc.vpcCidrBlock, props.scrapeCidr.cidr]),
              vpc.vpcCidrBlock,
            ).toString()
          : vpc.vpcCidrBlock,
      },
      secrets: {},
    });

    const taskDefinition = new ecs.FargateTaskDefinition(this, "Task", {
      cpu: 512,
      memoryLimitMiB: 1024,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.X86_64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
    });
    const logGroup = new logs.LogGroup(this, "Logs", { retention: logs.RetentionDays.ONE_MONTH });
    const image = ecs.ContainerImage.fromEcrRepository(props.image.repository, props.image.tag);

    // The setup containers connect as the master user: migrate creates the tables, app-role the processes'
    // least-privilege login (infra/app-role.ts). Each gets only the secrets it uses as ECS secrets.
    const master = { PGUSER: props.setupSecrets.PGUSER, PGPASSWORD: props.setupSecrets.PGPASSWORD };
    const migrate = taskDefinition.addContainer("migrate", {
      image,
      essential: false,
      command: ["node", "dist/migrate/main.mjs"],
      // Migrations use DATABASE_URL only; outside production mode the config check does not ask for the
      // session key and the other production settings this container has no use for.
      environment: { ...settings.plain, NODE_ENV: "" },
      secrets: ecsSecrets({ plain: {}, secrets: master }),
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: "migrate" }),
    });
    const appRole = taskDefinition.addContainer("app-role", {
      image,
      essential: false,
      command: ["node", "dist/app-role/main.mjs"],
      environment: { DATABASE_URL: settings.plain.DATABASE_URL },
      secrets: ecsSecrets({ plain: {}, secrets: master }),
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: "app-role" }),
    });
    appRole.addContainerDependencies({ container: migrate, condition: ecs.ContainerDependencyCondition.SUCCESS });

    // With a provisioning document, `provision` applies it once migrate has succeeded and before the stream host
    // starts: idempotent and advisory-locked, so every starting task may run it (docs/provisioning.md). It runs between
    // the two, so its two config-store connections never overlap the task's other ones.
    let before = appRole;
    if (props.provisionDocument !== undefined) {
      if (Buffer.byteLength(props.provisionDocument) > MAX_PROVISION_DOCUMENT_BYTES) {
        throw new Error(
          `the provisioning document is ${Buffer.byteLength(props.provisionDocument)} bytes as JSON; a task definition holds at most ${MAX_PROVISION_DOCUMENT_BYTES} of it (apply larger ones with npm run provision)`,
        );
      }
      const provision = taskDefinition.addContainer("provision", {
        image,
        essential: false,
        command: ["node", "dist/provision/main.mjs", "--from-env"],
        environment: { ...settings.plain, PROVISION_DOCUMENT: props.provisionDocument },
        // Production config validation asks for SESSION_SECRET too.
        secrets: ecsSecrets({ plain: {}, secrets: props.setupSecrets }),
        logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: "provision" }),
      });
      provision.addContainerDependencies({ container: appRole, condition: ecs.ContainerDependencyCondition.SUCCESS });
      before = provision;
    }

    const app = taskDefinition.addContainer("stream-host", {
      image,
      essential: true,
      // Secrets are read from Secrets Manager by the process (APP_SECRETS_AWS) with the task role.
      environment: appSecretsEnvironment(settings, taskDefinition.taskRole),
      portMappings: [{ containerPort: STREAM_HOST_PORT, name: "http" }],
      // SIGTERM, then this long before SIGKILL: above SHUTDOWN_GRACE_MS so the drain always completes.
      stopTimeout: Duration.seconds(STOP_TIMEOUT_SECONDS),
      // A tiny init as PID 1 forwards SIGTERM to node and reaps children.
      linuxParameters: new ecs.LinuxParameters(this, "LinuxParameters", { initProcessEnabled: true }),
      healthCheck: {
        command: ["CMD-SHELL", LIVENESS_COMMAND],
        interval: Duration.seconds(15),
        timeout: Duration.seconds(5),
        retries: 3,
        startPeriod: Duration.seconds(20),
      },
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: "stream-host" }),
    });
    app.addContainerDependencies({ container: before, condition: ecs.ContainerDependencyCondition.SUCCESS });

    this.securityGroup = new ec2.SecurityGroup(this, "TaskSecurityGroup", {
      vpc,
      description: "Pulseboard stream host tasks",
      allowAllOutbound: true,
    });
    // Prometheus (or any scraper) inside the VPC reaches each task directly; the gate still wants the token.
    this.securityGroup.addIngressRule(
      ec2.Peer.ipv4(vpc.vpcCidrBlock),
      ec2.Port.tcp(STREAM_HOST_PORT),
      "Prometheus scrape from inside the VPC",
    );
    if (props.scrapeCidr) {
      const peered = new ec2.CfnSecurityGroupIngress(this, "PeeredScrapeIngress", {
        groupId: this.securityGroup.securityGroupId,
        ipProtocol: "tcp",
        fromPort: STREAM_HOST_PORT,
        toPort: STREAM_HOST_PORT,
        cidrIp: props.scrapeCidr.cidr,
        description: "Prometheus scrape from the MetricsScrapeCidr range",
      });
      peered.cfnOptions.condition = props.scrapeCidr.condition;
    }

    this.service = new ecs.FargateService(this, "Service", {
      cluster,
      taskDefinition,
      desiredCount: props.desiredCount,
      minHealthyPercent: 100,
      maxHealthyPercent: props.maxHealthyPercent,
      circuitBreaker: { enable: true, rollback: true },
      // Readiness (the target group's check) takes a task out of rotation; ECS must not replace it for that, or
      // a config-store outage restarts every task in a loop and drops every stream. ECS ignores target health
      // for the task's life; the container's liveness check replaces a wedged process. See docs/infra.md.
      healthCheckGracePeriod: Duration.seconds(HEALTH_CHECK_GRACE_SECONDS),
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
      securityGroups: [this.securityGroup],
      assignPublicIp: false,
      cloudMapOptions: {
        name: STREAM_HOST_DISCOVERY_NAME,
        dnsRecordType: servicediscovery.DnsRecordType.A,
        dnsTtl: Duration.seconds(10),
        container: app,
      },
    });

    const albSecurityGroup = new ec2.SecurityGroup(this, "LoadBalancerSecurityGroup", {
      vpc,
      description: "Pulseboard stream host ALB (internal): CloudFront origin-facing addresses only",
      allowAllOutbound: false,
    });
    // VPC origin traffic arrives from CloudFront's origin-facing ranges. The prefix list id differs per region,
    // so it is read at deploy time instead of hard-coding one region's id.
    const prefixList = new cr.AwsCustomResource(this, "CloudFrontPrefixList", {
      onUpdate: {
        service: "EC2",
        action: "describeManagedPrefixLists",
        parameters: { Filters: [{ Name: "prefix-list-name", Values: [CLOUDFRONT_ORIGIN_FACING] }] },
        physicalResourceId: cr.PhysicalResourceId.of(CLOUDFRONT_ORIGIN_FACING),
        outputPaths: ["PrefixLists.0.PrefixListId"],
      },
      policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: cr.AwsCustomResourcePolicy.ANY_RESOURCE }),
      installLatestAwsSdk: false,
    });
    albSecurityGroup.addIngressRule(
      ec2.Peer.prefixList(prefixList.getResponseField("PrefixLists.0.PrefixListId")),
      ec2.Port.tcp(80),
      "CloudFront origin-facing",
    );

    // Internal: CloudFront reaches it as a VPC origin over AWS's network, so it has no public address and
    // the plain-HTTP hop never crosses the internet.
    this.loadBalancer = new elbv2.ApplicationLoadBalancer(this, "LoadBalancer", {
      vpc,
      internetFacing: false,
      securityGroup: albSecurityGroup,
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
      idleTimeout: Duration.seconds(ALB_IDLE_TIMEOUT_SECONDS),
      dropInvalidHeaderFields: true,
      xffHeaderProcessingMode: elbv2.XffHeaderProcessingMode.APPEND,
    });
    const listener = this.loadBalancer.addListener("Http", {
      port: 80,
      protocol: elbv2.ApplicationProtocol.HTTP,
      // Ingress comes from the prefix-list rule above, not from 0.0.0.0/0.
      open: false,
    });
    this.targetGroup = listener.addTargets("StreamHost", {
      port: STREAM_HOST_PORT,
      protocol: elbv2.ApplicationProtocol.HTTP,
      targets: [this.service.loadBalancerTarget({ containerName: app.containerName, containerPort: STREAM_HOST_PORT })],
      deregistrationDelay: Duration.seconds(DEREGISTRATION_DELAY_SECONDS),
      healthCheck: {
        path: READY_PATH,
        // ready and degraded answer 200; not_ready and draining answer 503 and take the task out of rotation.
        healthyHttpCodes: "200",
        interval: Duration.seconds(10),
        timeout: Duration.seconds(5),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 3,
      },
    });
  }
}
