import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as cloudfront from "aws-cdk-lib/aws-cloudfront";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import type * as elbv2 from "aws-cdk-lib/aws-elasticloadbalancingv2";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as rds from "aws-cdk-lib/aws-rds";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { LLM_ROUTES } from "../../lib/metrics/metrics.ts";
import { EMF_NAMESPACE } from "../../handlers/emf.ts";
import { CONNECTION_BUDGET } from "./constants.ts";

/** Where the access logs go: CloudFront standard logs and the ALB's, 90 days, encrypted, TLS only. */
export class AccessLogs extends Construct {
  readonly bucket: s3.Bucket;
  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.bucket = new s3.Bucket(this, "Bucket", {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      // CloudFront standard logging writes with an ACL.
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}

/** VPC flow logs (rejected and accepted traffic) into CloudWatch Logs for 30 days. */
export function addFlowLogs(scope: Construct, vpc: ec2.Vpc): void {
  const group = new logs.LogGroup(scope, "FlowLogs", { retention: logs.RetentionDays.ONE_MONTH });
  vpc.addFlowLog("FlowLog", { destination: ec2.FlowLogDestination.toCloudWatchLogs(group), trafficType: ec2.FlowLogTrafficType.ALL });
}

/** Alarm thresholds (docs/infra.md, "Alarms"). */
export const ALARMS = {
  /** CloudFront 5xx responses, percent of requests over 5 minutes. */
  fiveXxRatePercent: 5,
  /** Config-store connections, share of max_connections. */
  connectionsShare: 0.8,
  /** LLM requests refused with 429 (rate_limited + over_budget) in 5 minutes, all routes together. */
  llm429PerFiveMinutes: 50,
} as const;

/**
 * The alarms of the operational promises: 5xx rate at the edge, stream host tasks out of rotation (readiness
 * failing), config-store connections near the budget, and the LLM 429 rate from the handlers' EMF counters.
 * They have no action; subscribe a topic or a pager to them (docs/infra.md).
 */
export class Alarms extends Construct {
  readonly all: cloudwatch.Alarm[];
  constructor(
    scope: Construct,
    id: string,
    props: {
      distribution: cloudfront.Distribution;
      targetGroup: elbv2.ApplicationTargetGroup;
      database: rds.DatabaseInstance;
    },
  ) {
    super(scope, id);
    const period = Duration.minutes(5);
    const fiveXx = new cloudwatch.Alarm(this, "Edge5xxRate", {
      alarmDescription: `More than ${ALARMS.fiveXxRatePercent}% of responses through CloudFront were 5xx for 10 minutes`,
      metric: props.distribution.metric5xxErrorRate({ period }),
      threshold: ALARMS.fiveXxRatePercent,
      evaluationPeriods: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const unhealthy = new cloudwatch.Alarm(this, "StreamHostNotReady", {
      alarmDescription:
        "A stream host task failed /api/ready (out of rotation) for 5 minutes: config store unreachable from it, or draining too long",
      metric: props.targetGroup.metrics.unhealthyHostCount({ period: Duration.minutes(1), statistic: "Maximum" }),
      threshold: 0,
      evaluationPeriods: 5,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const connections = new cloudwatch.Alarm(this, "ConfigStoreConnections", {
      alarmDescription: `Config-store connections above ${ALARMS.connectionsShare * 100}% of max_connections`,
      metric: props.database.metricDatabaseConnections({ period, statistic: "Maximum" }),
      threshold: Math.floor(CONNECTION_BUDGET.maxConnections * ALARMS.connectionsShare),
      evaluationPeriods: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });
    const refused: Record<string, cloudwatch.IMetric> = {};
    for (const route of LLM_ROUTES) {
      for (const outcome of ["rate_limited", "over_budget"]) {
        refused[`m_${route}_${outcome}`] = new cloudwatch.Metric({
          namespace: EMF_NAMESPACE,
          metricName: "svc_llm_requests_total",
          dimensionsMap: { route, outcome },
          statistic: "Sum",
          period,
        });
      }
    }
    const llm429 = new cloudwatch.Alarm(this, "Llm429Rate", {
      alarmDescription: `More than ${ALARMS.llm429PerFiveMinutes} model requests refused with 429 (rate or budget) in 5 minutes`,
      metric: new cloudwatch.MathExpression({
        expression: Object.keys(refused)
          .map((k) => `FILL(${k}, 0)`)
          .join(" + "),
        usingMetrics: refused,
        period,
        label: "LLM requests refused with 429",
      }),
      threshold: ALARMS.llm429PerFiveMinutes,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.all = [fiveXx, unhealthy, connections, llm429];
  }
}
