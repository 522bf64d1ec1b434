import type * as ecs from "aws-cdk-lib/aws-ecs";
import type * as iam from "aws-cdk-lib/aws-iam";
import { Secret as EcsSecret } from "aws-cdk-lib/aws-ecs";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";

/** One environment variable whose value lives in Secrets Manager (optionally one JSON field of it). */
export interface SecretVariable {
  secret: secretsmanager.ISecret;
  field?: string;
}

/** The environment of one process: plain values plus values read from Secrets Manager. */
export interface RuntimeSettings {
  plain: Record<string, string>;
  secrets: Record<string, SecretVariable>;
}

/** Merges settings; later entries win. */
export function mergeSettings(...parts: RuntimeSettings[]): RuntimeSettings {
  return {
    plain: Object.assign({}, ...parts.map((p) => p.plain)),
    secrets: Object.assign({}, ...parts.map((p) => p.secrets)),
  };
}

/**
 * ECS form, for the short-lived setup containers (migrate, app-role, provision): the agent reads each secret at
 * task start (`secrets` of the container definition); the value never appears in the task definition.
 */
export function ecsSecrets(settings: RuntimeSettings): Record<string, ecs.Secret> {
  return Object.fromEntries(
    Object.entries(settings.secrets).map(([name, { secret, field }]) => [name, EcsSecret.fromSecretsManager(secret, field)]),
  );
}

/**
 * The processes' form: no secret value anywhere in the deployed configuration (`lambda:GetFunctionConfiguration`
 * and `ecs:DescribeTaskDefinition` show only ARNs). APP_SECRETS_AWS names each variable's secret (and JSON
 * field); the process reads them from Secrets Manager at start and again on a schedule (lib/secrets/boot.ts), so a
 * rotated value reaches every process without a deploy. `grantee` may read exactly these secrets.
 */
export function appSecretsEnvironment(settings: RuntimeSettings, grantee: iam.IGrantable): Record<string, string> {
  const entries = Object.entries(settings.secrets);
  for (const secret of new Set(entries.map(([, v]) => v.secret))) secret.grantRead(grantee);
  const text = entries.map(([name, { secret, field }]) => `${name}=${secret.secretArn}${field ? `#${field}` : ""}`).join(";");
  return entries.length > 0 ? { ...settings.plain, APP_SECRETS_AWS: text } : { ...settings.plain };
}
