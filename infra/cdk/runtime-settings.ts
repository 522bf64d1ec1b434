import type * as ecs from "aws-cdk-lib/aws-ecs";
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
 * ECS form: the agent reads each secret at task start (`secrets` of the container definition), so a rotated
 * value is picked up by the next task without a deploy.
 */
export function ecsSecrets(settings: RuntimeSettings): Record<string, ecs.Secret> {
  return Object.fromEntries(
    Object.entries(settings.secrets).map(([name, { secret, field }]) => [
      name,
      EcsSecret.fromSecretsManager(secret, field),
    ]),
  );
}

/**
 * Lambda form: Lambda has no native secret injection, so each value is a CloudFormation dynamic reference
 * (`{{resolve:secretsmanager:...}}`) that CloudFormation resolves at deploy time into the function's
 * KMS-encrypted configuration. The template never holds a value; a changed secret needs a redeploy.
 */
export function lambdaEnvironment(settings: RuntimeSettings): Record<string, string> {
  const resolved = Object.entries(settings.secrets).map(([name, { secret, field }]) => [
    name,
    (field ? secret.secretValueFromJson(field) : secret.secretValue).unsafeUnwrap(),
  ]);
  return { ...settings.plain, ...Object.fromEntries(resolved) };
}
