import { Duration } from "aws-cdk-lib";
import * as cloudfront from "aws-cdk-lib/aws-cloudfront";
import * as origins from "aws-cdk-lib/aws-cloudfront-origins";
import type * as elbv2 from "aws-cdk-lib/aws-elasticloadbalancingv2";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as acm from "aws-cdk-lib/aws-certificatemanager";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";
import { STREAM_HOST_PATHS } from "../../lib/http/stream-host-paths.ts";
import { ORIGIN_VERIFY_HEADER, STREAM_ORIGIN_READ_TIMEOUT_SECONDS } from "./constants.ts";

export interface EdgeProps {
  handlersUrl: lambda.IFunctionUrl;
  streamHostLoadBalancer: elbv2.IApplicationLoadBalancer;
  /** Sent to the handlers' origin in ORIGIN_VERIFY_HEADER; the handlers refuse requests without it. */
  originSecret: secretsmanager.ISecret;
  /** Standard access logs go here (prefix `cloudfront/`). */
  logBucket: s3.IBucket;
  /** A custom domain with its ACM certificate (us-east-1); viewers then need TLS 1.2 or later. */
  domain?: { names: string[]; certificateArn: string };
}

/**
 * CloudFront in front of both processes, with the path ownership of docs/infra.md: the stream host's
 * paths go to the ALB, everything else to the handlers' function URL. Nothing is cached (every response is
 * per-user or live), and CloudFront appends the viewer address to X-Forwarded-For on both origins.
 */
export class Edge extends Construct {
  readonly distribution: cloudfront.Distribution;

  constructor(scope: Construct, id: string, props: EdgeProps) {
    super(scope, id);

    const handlersOrigin = new origins.FunctionUrlOrigin(props.handlersUrl, {
      // The function's own timeout is 90 s; the default quota allows up to 120 s.
      readTimeout: Duration.seconds(90),
      // A dynamic reference: CloudFormation resolves it at deploy time, the template never holds the value.
      customHeaders: { [ORIGIN_VERIFY_HEADER]: props.originSecret.secretValue.unsafeUnwrap() },
    });
    // SSE: CloudFront ends a response when the origin sends nothing for readTimeout, so it is set to the
    // default quota's maximum; the streams' heartbeat keeps well inside it. No total-response limit
    // (responseCompletionTimeout) is set, so a live stream may stay open for as long as the viewer keeps it.
    // The ALB is internal: CloudFront reaches it as a VPC origin, so HTTP stays on AWS's private network.
    const streamHostOrigin = origins.VpcOrigin.withApplicationLoadBalancer(props.streamHostLoadBalancer, {
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTP_ONLY,
      readTimeout: Duration.seconds(STREAM_ORIGIN_READ_TIMEOUT_SECONDS),
      keepaliveTimeout: Duration.seconds(60),
    });

    // The function URL only answers its own Host; the ALB does not care. Cookies, query strings and every
    // other header (Authorization for /api/metrics, the session cookie for streams) are forwarded.
    const originRequestPolicy = cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER;
    const cachePolicy = cloudfront.CachePolicy.CACHING_DISABLED;

    const streamBehavior: cloudfront.BehaviorOptions = {
      origin: streamHostOrigin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
      cachePolicy,
      originRequestPolicy,
      // Compression would buffer an event stream.
      compress: false,
    };

    this.distribution = new cloudfront.Distribution(this, "Distribution", {
      comment: "Pulseboard",
      enableLogging: true,
      logBucket: props.logBucket,
      logFilePrefix: "cloudfront/",
      ...(props.domain
        ? {
            domainNames: props.domain.names,
            certificate: acm.Certificate.fromCertificateArn(this, "Certificate", props.domain.certificateArn),
            minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
          }
        : {}),
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: handlersOrigin,
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
        cachePolicy,
        originRequestPolicy,
        compress: true,
      },
      additionalBehaviors: Object.fromEntries(STREAM_HOST_PATHS.map((path) => [path, streamBehavior])),
    });
  }
}
