import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";

/**
 * The application's Secrets Manager secrets. SESSION_SECRET and METRICS_TOKEN are generated; the AI key and
 * the OIDC client secret start as generated placeholders that the operator replaces with the real values
 * (`aws secretsmanager put-secret-value`, then redeploy or restart; see docs/infra.md).
 */
export class AppSecrets extends Construct {
  readonly sessionSecret: secretsmanager.Secret;
  readonly metricsToken: secretsmanager.Secret;
  readonly aiApiKey: secretsmanager.Secret;
  readonly oidcClientSecret: secretsmanager.Secret;
  readonly originSecret: secretsmanager.Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const generated = (secretId: string, description: string, length: number) =>
      new secretsmanager.Secret(this, secretId, {
        description,
        // Letters and digits only: the values travel in headers and env vars with no quoting.
        generateSecretString: { passwordLength: length, excludePunctuation: true, includeSpace: false },
      });
    // SESSION_SECRET must be at least 32 characters in production; 64 leaves a margin.
    this.sessionSecret = generated("SessionSecret", "Pulseboard SESSION_SECRET (HS256 session signing key)", 64);
    // Warned about below 24 characters; Prometheus reads it from its bearer token file.
    this.metricsToken = generated("MetricsToken", "Pulseboard METRICS_TOKEN (bearer token of /api/metrics)", 48);
    this.aiApiKey = generated("AiApiKey", "Pulseboard AI provider API key (replace the generated placeholder)", 32);
    this.oidcClientSecret = generated("OidcClientSecret", "Pulseboard OIDC_CLIENT_SECRET (replace the generated placeholder)", 32);
    // CloudFront sends it to the handlers' origin in a header; the handlers refuse requests without it.
    this.originSecret = generated("OriginSecret", "Pulseboard ORIGIN_VERIFY_SECRET (CloudFront to the handlers' function URL)", 48);
  }
}
