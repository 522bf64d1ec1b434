import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HEARTBEAT_MS } from "../../stream-host/app.ts";
import { ORIGIN_VERIFY_HEADER as HANDLERS_ORIGIN_HEADER } from "../../handlers/origin-guard.ts";
import {
  CONNECTION_BUDGET,
  DEREGISTRATION_DELAY_SECONDS,
  HANDLERS_CHECK_PORT,
  HEALTH_CHECK_GRACE_SECONDS,
  ORIGIN_VERIFY_HEADER,
  SERVICE_DISCOVERY_NAMESPACE,
  SHUTDOWN_GRACE_MS,
  STOP_TIMEOUT_SECONDS,
  STREAM_HOST_DISCOVERY_NAME,
  STREAM_ORIGIN_READ_TIMEOUT_SECONDS,
  TASK_STOP_POLL_MS,
} from "./constants.ts";
import { PulseboardStack } from "./pulseboard-stack.ts";
import { synthTestStack } from "./test-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: a synthesized CloudFormation template is untyped JSON, read here by deep paths
type Json = any;

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
// Managed policy ids (the same in every account).
const CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad";
const ALL_VIEWER_EXCEPT_HOST_HEADER = "b689b0a8-53d0-40ab-baf2-68738e2966ac";

type Resource = { Type: string; Properties: Record<string, Json>; DependsOn?: string[] };
type EnvVar = { Name: string; Value: unknown };
type ContainerSecret = { Name: string; ValueFrom: unknown };

let outdir: string;
let template: Template;
let resources: Record<string, Resource>;

/** The one resource of a type (fails when there is not exactly one). */
function only(type: string): [string, Resource] {
  const found = Object.entries(resources).filter(([, r]) => r.Type === type);
  expect(found, type).toHaveLength(1);
  return found[0];
}
/** The handlers function (the other Lambda function is CDK's custom-resource provider). */
function handlersFunction(): Resource {
  const id = logicalIdOf("AWS::Lambda::Function", (r) => r.Properties.PackageType === "Image");
  return resources[id];
}
const logicalIdOf = (type: string, match: (r: Resource) => boolean) => {
  const hit = Object.entries(resources).find(([, r]) => r.Type === type && match(r));
  if (!hit) throw new Error(`no ${type} matches`);
  return hit[0];
};

/** The logical id of the secret whose description or id contains `needle`. */
function secretId(needle: string): string {
  const hit = Object.entries(resources).find(
    ([id, r]) => r.Type === "AWS::SecretsManager::Secret" && (id.includes(needle) || String(r.Properties.Description).includes(needle)),
  );
  if (!hit) throw new Error(`no secret ${needle}`);
  return hit[0];
}
/** A secret's logical id, seen through an attachment (an attached secret's ARN is the attachment's Ref). */
function underlyingSecret(ref: string): string {
  const r = resources[ref];
  return r?.Type === "AWS::SecretsManager::SecretTargetAttachment" ? r.Properties.SecretId.Ref : ref;
}
/** APP_SECRETS_AWS as the template holds it (an Fn::Join of ARNs), by variable: the secret's logical id and field. */
function appSecretRefs(value: unknown): Record<string, { secret: string; field?: string }> {
  const parts = (value as { "Fn::Join": [string, unknown[]] })["Fn::Join"][1];
  const text = parts.map((p) => (typeof p === "string" ? p : `<${(p as { Ref: string }).Ref}>`)).join("");
  return Object.fromEntries(
    text.split(";").map((entry) => {
      const [variable, target] = entry.split("=");
      const m = /^<([^>]+)>(?:#(.+))?$/.exec(target)!;
      const secret = underlyingSecret(m[1]);
      return [variable, m[2] ? { secret, field: m[2] } : { secret }];
    }),
  );
}
/** The role a Fn::GetAtt [role, "Arn"] points at. */
const roleOf = (arn: unknown) => (arn as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
/** Logical ids of the app secrets a role's policies allow secretsmanager:GetSecretValue on. */
function readableSecrets(role: string): string[] {
  const ids = new Set<string>();
  for (const r of Object.values(resources)) {
    if (r.Type !== "AWS::IAM::Policy" || !JSON.stringify(r.Properties.Roles).includes(role)) continue;
    for (const st of r.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]) {
      const actions = ([] as string[]).concat(st.Action);
      if (!actions.includes("secretsmanager:GetSecretValue")) continue;
      for (const res of ([] as unknown[]).concat(st.Resource)) {
        const ref = (res as { Ref?: string }).Ref;
        if (ref && resources[ref]) ids.add(underlyingSecret(ref));
      }
    }
  }
  return [...ids].sort();
}

function container(name: string): Record<string, Json> {
  const [, task] = only("AWS::ECS::TaskDefinition");
  const c = task.Properties.ContainerDefinitions.find((d: { Name: string }) => d.Name === name);
  expect(c, name).toBeDefined();
  return c;
}
const envOf = (c: Record<string, Json>) =>
  Object.fromEntries((c.Environment as EnvVar[]).map((e) => [e.Name, e.Value])) as Record<string, unknown>;
const secretsOf = (c: Record<string, Json>) =>
  Object.fromEntries((c.Secrets as ContainerSecret[]).map((s) => [s.Name, s.ValueFrom])) as Record<string, unknown>;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "pulseboard-cdk-"));
  // CloudFormation's own rules run in validate.test.ts; here only the shape of the template matters.
  const { stack } = synthTestStack(outdir, { validate: false });
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources;
});

afterAll(async () => {
  await rm(outdir, { recursive: true, force: true });
});

describe("deploy-time parameters", () => {
  it("asks for SOURCE_SECRET_REFS at deploy time (no default: production refuses to boot without it)", () => {
    const params = template.toJSON().Parameters;
    expect(params.SourceSecretRefs).toMatchObject({ Type: "String", MinLength: 1 });
    expect(params.SourceSecretRefs.Default).toBeUndefined();
    expect(params.AiProvider.AllowedValues).toEqual(["", "gateway", "compat"]);
    // Required like SourceSecretRefs: production refuses a secret_ref no host entry binds.
    expect(params.SourceSecretHosts).toMatchObject({ Type: "String", MinLength: 1 });
    expect(params.SourceSecretHosts.Default).toBeUndefined();
  });
});

describe("handlers: Lambda from the container image", () => {
  let env: Record<string, Json>;
  beforeAll(() => {
    env = handlersFunction().Properties.Environment.Variables;
  });

  it("is an image function from the given repository and tag, in the VPC's private subnets", () => {
    const fn = handlersFunction();
    expect(fn.Properties.PackageType).toBe("Image");
    expect(JSON.stringify(fn.Properties.Code.ImageUri)).toContain("pulseboard-handlers:test-tag");
    expect(fn.Properties.Architectures).toEqual(["x86_64"]);
    expect(fn.Properties.VpcConfig.SubnetIds).toHaveLength(2);
  });

  it("sets the Lambda Web Adapter's readiness check to /api/health on port 8080", () => {
    expect(env).toMatchObject({
      AWS_LWA_READINESS_CHECK_PATH: "/api/health",
      AWS_LWA_PORT: "8080",
      AWS_LWA_INVOKE_MODE: "response_stream",
      FRAMEWORK_MANUAL_SIG_HANDLE: "true",
      PORT: "8080",
      NODE_ENV: "production",
    });
  });

  it("holds no secret in its configuration: APP_SECRETS_AWS names the secrets it reads, and it may read only those", () => {
    const secretNames = [
      "SESSION_SECRET",
      "OIDC_CLIENT_SECRET",
      "AI_GATEWAY_API_KEY",
      "AI_COMPAT_API_KEY",
      "ORIGIN_VERIFY_SECRET",
      "PGUSER",
      "PGPASSWORD",
    ];
    for (const name of [...secretNames, "METRICS_TOKEN", "SESSION_SECRET_PREVIOUS"]) expect(env[name], name).toBeUndefined();
    expect(JSON.stringify(env)).not.toContain("resolve:secretsmanager");
    const refs = appSecretRefs(env.APP_SECRETS_AWS);
    expect(Object.keys(refs).sort()).toEqual([...secretNames].sort());
    // The rotating least-privilege login, user and password from the same secret; never the master's.
    expect(refs.PGUSER).toEqual({ secret: secretId("AppCredentials"), field: "username" });
    expect(refs.PGPASSWORD).toEqual({ secret: secretId("AppCredentials"), field: "password" });
    expect(readableSecrets(roleOf(handlersFunction().Properties.Role))).toEqual(
      [...new Set(Object.values(refs).map((r) => r.secret))].sort(),
    );
  });

  it("connects with a DATABASE_URL without user or password that verifies TLS", () => {
    const url = JSON.stringify(env.DATABASE_URL);
    expect(url).toContain('"postgres://",{"Fn::GetAtt"');
    expect(url).toContain("sslmode=verify-full");
    expect(url).not.toContain("resolve:secretsmanager");
  });

  it("is reachable through a function URL that CloudFront uses as its default origin", () => {
    template.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE", InvokeMode: "RESPONSE_STREAM" });
  });

  it("is updated only after the stream host service (whose tasks migrate the config store)", () => {
    const fn = handlersFunction();
    const serviceId = only("AWS::ECS::Service")[0];
    expect(fn.DependsOn).toContain(serviceId);
  });
});

describe("stream host: ECS Fargate behind an ALB", () => {
  it("gives the container a 20 s stop timeout, above the drain budget", () => {
    const c = container("stream-host");
    expect(c.StopTimeout).toBe(20);
    expect(STOP_TIMEOUT_SECONDS * 1000).toBeGreaterThan(SHUTDOWN_GRACE_MS);
    expect(envOf(c).SHUTDOWN_GRACE_MS).toBe(String(SHUTDOWN_GRACE_MS));
  });

  it("drains before the ALB cuts anything: deregistration delay ≥ stop poll + SHUTDOWN_GRACE_MS < stop timeout", () => {
    const c = container("stream-host");
    const env = envOf(c);
    const graceMs = Number(env.SHUTDOWN_GRACE_MS);
    const pollMs = Number(env.TASK_STOP_POLL_MS);
    const [, tg] = only("AWS::ElasticLoadBalancingV2::TargetGroup");
    const attrs = Object.fromEntries(
      (tg.Properties.TargetGroupAttributes as { Key: string; Value: string }[]).map((a) => [a.Key, a.Value]),
    );
    const delayMs = Number(attrs["deregistration_delay.timeout_seconds"]) * 1000;
    // The task sees its stop within one poll and drains at once; all of the drain fits inside the delay.
    expect(pollMs).toBe(TASK_STOP_POLL_MS);
    expect(delayMs).toBeGreaterThanOrEqual(pollMs + graceMs);
    // After the delay SIGTERM only finishes the drain, and SIGKILL never cuts it short.
    expect(c.StopTimeout * 1000).toBeGreaterThan(graceMs);
    // The metadata endpoint is the agent's, never configured by hand.
    expect(env.ECS_CONTAINER_METADATA_URI_V4).toBeUndefined();
  });

  it("handles signals itself in production, behind an init process", () => {
    const c = container("stream-host");
    expect(envOf(c)).toMatchObject({ FRAMEWORK_MANUAL_SIG_HANDLE: "true", NODE_ENV: "production", STREAM_PORT: "8081" });
    expect(c.LinuxParameters.InitProcessEnabled).toBe(true);
    expect(c.PortMappings).toEqual([expect.objectContaining({ ContainerPort: 8081, Protocol: "tcp" })]);
    expect(c.Image).toEqual(expect.anything());
    expect(JSON.stringify(c.Image)).toContain("pulseboard-stream-host:test-tag");
  });

  it("reads its secrets from Secrets Manager itself (only the ones it uses), none in the task definition", () => {
    const c = container("stream-host");
    expect(c.Secrets).toBeUndefined();
    const env = envOf(c);
    const refs = appSecretRefs(env.APP_SECRETS_AWS as string);
    expect(Object.keys(refs).sort()).toEqual(["METRICS_TOKEN", "PGPASSWORD", "PGUSER", "SESSION_SECRET"]);
    expect(refs.SESSION_SECRET.secret).toBe(secretId("SESSION_SECRET"));
    expect(refs.PGPASSWORD).toEqual({ secret: secretId("AppCredentials"), field: "password" });
    for (const name of Object.keys(refs)) expect(env[name], name).toBeUndefined();
    // The task role may read exactly these; the execution role (the agent's) reads none of them.
    const [, task] = only("AWS::ECS::TaskDefinition");
    expect(readableSecrets(roleOf(task.Properties.TaskRoleArn))).toEqual([...new Set(Object.values(refs).map((r) => r.secret))].sort());
  });

  it("only the setup containers get the master credentials, as ECS secrets", () => {
    const master = secretId("ConfigStoreInstanceSecret");
    const secretOf = (valueFrom: Json) => underlyingSecret(valueFrom["Fn::Join"][1][0].Ref);
    for (const name of ["migrate", "app-role"]) {
      const secrets = secretsOf(container(name));
      expect(Object.keys(secrets).sort(), name).toEqual(["PGPASSWORD", "PGUSER"]);
      expect(secretOf(secrets.PGPASSWORD)).toBe(master);
      expect(secretOf(secrets.PGUSER)).toBe(master);
      expect(JSON.stringify(secrets.PGPASSWORD)).toContain(":password::");
      expect(JSON.stringify(secrets.PGUSER)).toContain(":username::");
    }
    const masterAttachment = logicalIdOf("AWS::SecretsManager::SecretTargetAttachment", (r) => r.Properties.SecretId.Ref === master);
    for (const env of [envOf(container("stream-host")), handlersFunction().Properties.Environment]) {
      expect(JSON.stringify(env)).not.toContain(master);
      expect(JSON.stringify(env)).not.toContain(masterAttachment);
    }
  });

  it("the processes' login rotates by alternating users every 30 days, from a subnet that reaches Secrets Manager", () => {
    const rotation = Object.values(resources).find(
      (r) =>
        r.Type === "AWS::SecretsManager::RotationSchedule" && underlyingSecret(r.Properties.SecretId.Ref) === secretId("AppCredentials"),
    )!;
    expect(rotation).toBeDefined();
    expect(rotation.Properties.RotationRules).toMatchObject({ ScheduleExpression: "rate(30 days)" });
    const app = JSON.stringify(resources[secretId("AppCredentials")].Properties.GenerateSecretString.SecretStringTemplate);
    expect(app).toContain('\\"username\\":\\"pulseboard_app\\"');
    expect(app).toContain("masterarn");
    const rotator = Object.entries(resources).find(
      ([id, r]) => r.Type === "AWS::Serverless::Application" && id.includes("AppCredentialsRotation"),
    )![1];
    // The application id is a per-partition mapping; the template's Mappings hold the SAR ids.
    expect(JSON.stringify(template.toJSON().Mappings)).toContain("SecretsManagerRDSPostgreSQLRotationMultiUser");
    expect(JSON.stringify(rotator.Properties.Location)).toContain("Fn::FindInMap");
    // Private subnets with egress: the isolated ones cannot reach Secrets Manager's endpoint.
    const subnets = JSON.stringify(rotator.Properties.Parameters.vpcSubnetIds);
    expect(subnets).toContain("VpcappSubnet");
    expect(subnets).not.toContain("VpcdataSubnet");
  });

  it("generates SESSION_SECRET and METRICS_TOKEN long enough for production", () => {
    template.hasResourceProperties("AWS::SecretsManager::Secret", {
      Description: Match.stringLikeRegexp("SESSION_SECRET"),
      GenerateSecretString: Match.objectLike({ PasswordLength: Match.anyValue(), ExcludePunctuation: true }),
    });
    const length = (needle: string) => {
      const id = logicalIdOf("AWS::SecretsManager::Secret", (r) => String(r.Properties.Description).includes(needle));
      return resources[id].Properties.GenerateSecretString.PasswordLength as number;
    };
    expect(length("SESSION_SECRET")).toBeGreaterThanOrEqual(32);
    expect(length("METRICS_TOKEN")).toBeGreaterThanOrEqual(24);
  });

  it("runs the migrations, then ensures the least-privilege login, in containers the stream host waits for", () => {
    const migrate = container("migrate");
    expect(migrate.Essential).toBe(false);
    expect(migrate.Command).toEqual(["node", "dist/migrate/main.mjs"]);
    const appRole = container("app-role");
    expect(appRole.Essential).toBe(false);
    expect(appRole.Command).toEqual(["node", "dist/app-role/main.mjs"]);
    expect(appRole.DependsOn).toEqual([{ ContainerName: "migrate", Condition: "SUCCESS" }]);
    expect(container("stream-host").DependsOn).toEqual([{ ContainerName: "app-role", Condition: "SUCCESS" }]);
  });

  it("health-checks the targets on /api/ready with a short deregistration delay", () => {
    template.hasResourceProperties("AWS::ElasticLoadBalancingV2::TargetGroup", {
      HealthCheckPath: "/api/ready",
      Matcher: { HttpCode: "200" },
      Port: 8081,
      TargetType: "ip",
      TargetGroupAttributes: Match.arrayWith([
        { Key: "deregistration_delay.timeout_seconds", Value: String(DEREGISTRATION_DELAY_SECONDS) },
      ]),
    });
  });

  it("appends X-Forwarded-For at the ALB and outlasts CloudFront's origin read timeout", () => {
    const [, alb] = only("AWS::ElasticLoadBalancingV2::LoadBalancer");
    const attrs = Object.fromEntries(
      (alb.Properties.LoadBalancerAttributes as { Key: string; Value: string }[]).map((a) => [a.Key, a.Value]),
    );
    expect(attrs["routing.http.xff_header_processing.mode"]).toBe("append");
    expect(Number(attrs["idle_timeout.timeout_seconds"])).toBeGreaterThan(STREAM_ORIGIN_READ_TIMEOUT_SECONDS);
  });

  it("has an internal ALB that admits only CloudFront's origin-facing prefix list", () => {
    expect(only("AWS::ElasticLoadBalancingV2::LoadBalancer")[1].Properties.Scheme).toBe("internal");
    const albSg = logicalIdOf("AWS::EC2::SecurityGroup", (r) => String(r.Properties.GroupDescription).includes("ALB"));
    expect(JSON.stringify(resources[albSg].Properties.SecurityGroupIngress ?? [])).not.toContain("0.0.0.0/0");
    const ingress = Object.values(resources).filter(
      (r) => r.Type === "AWS::EC2::SecurityGroupIngress" && r.Properties.GroupId?.["Fn::GetAtt"]?.[0] === albSg,
    );
    expect(ingress).toHaveLength(1);
    expect(ingress[0].Properties.SourcePrefixListId).toEqual({ "Fn::GetAtt": [expect.any(String), "PrefixLists.0.PrefixListId"] });
    template.hasResourceProperties("Custom::AWS", {
      Create: Match.stringLikeRegexp("com.amazonaws.global.cloudfront.origin-facing"),
    });
  });

  it("registers every task in Cloud Map for Prometheus", () => {
    template.hasResourceProperties("AWS::ServiceDiscovery::PrivateDnsNamespace", { Name: SERVICE_DISCOVERY_NAMESPACE });
    template.hasResourceProperties("AWS::ServiceDiscovery::Service", {
      Name: STREAM_HOST_DISCOVERY_NAME,
      DnsConfig: Match.objectLike({ DnsRecords: [{ Type: "A", TTL: 10 }] }),
    });
  });

  it("limits /api/metrics by address to the VPC, plus one operator range that reaches the security group too", () => {
    const env = envOf(container("stream-host"));
    const vpcCidr = { "Fn::GetAtt": [expect.stringMatching(/^Vpc/), "CidrBlock"] };
    // One parameter feeds both the address gate and the security group, so they never disagree.
    expect(env.METRICS_ALLOWED_CIDRS).toEqual({
      "Fn::If": ["HasMetricsScrapeCidr", { "Fn::Join": [",", [vpcCidr, { Ref: "MetricsScrapeCidr" }]] }, vpcCidr],
    });
    const params = template.toJSON().Parameters;
    expect(params.MetricsScrapeCidr).toMatchObject({ Type: "String", Default: "" });
    expect(new RegExp(params.MetricsScrapeCidr.AllowedPattern).test("10.50.0.0/16")).toBe(true);
    expect(new RegExp(params.MetricsScrapeCidr.AllowedPattern).test("")).toBe(true);
    expect(new RegExp(params.MetricsScrapeCidr.AllowedPattern).test("0.0.0.0/0 ; x")).toBe(false);
    const tasksSg = logicalIdOf("AWS::EC2::SecurityGroup", (r) => r.Properties.GroupDescription === "Pulseboard stream host tasks");
    const peered = Object.values(resources).filter(
      (r) => r.Type === "AWS::EC2::SecurityGroupIngress" && JSON.stringify(r.Properties.CidrIp) === '{"Ref":"MetricsScrapeCidr"}',
    ) as (Resource & { Condition?: string })[];
    expect(peered).toHaveLength(1);
    expect(peered[0].Condition).toBe("HasMetricsScrapeCidr");
    expect(peered[0].Properties).toMatchObject({ GroupId: { "Fn::GetAtt": [tasksSg, "GroupId"] }, FromPort: 8081, ToPort: 8081 });
  });

  it("the handlers push their LLM counters as CloudWatch EMF (nothing scrapes a Lambda instance)", () => {
    expect(handlersFunction().Properties.Environment.Variables.METRICS_EMF).toBe("true");
    expect(envOf(container("stream-host")).METRICS_EMF).toBeUndefined();
  });
});

describe("config store: RDS PostgreSQL", () => {
  it("is private, encrypted, protected from deletion and reachable only from both processes", () => {
    template.hasResourceProperties("AWS::RDS::DBInstance", {
      Engine: "postgres",
      PubliclyAccessible: false,
      StorageEncrypted: true,
      DeletionProtection: true,
      DBName: "pulseboard",
    });
    const dbSg = logicalIdOf("AWS::EC2::SecurityGroup", (r) => r.Properties.GroupDescription === "Pulseboard config store");
    const ingress = Object.values(resources).filter(
      (r) => r.Type === "AWS::EC2::SecurityGroupIngress" && r.Properties.GroupId?.["Fn::GetAtt"]?.[0] === dbSg,
    );
    const sources = ingress.map((r) => r.Properties.SourceSecurityGroupId["Fn::GetAtt"][0]).sort();
    expect(sources).toEqual(
      [
        logicalIdOf("AWS::EC2::SecurityGroup", (r) => String(r.Properties.GroupDescription).includes("HandlersFunction")),
        logicalIdOf("AWS::EC2::SecurityGroup", (r) => r.Properties.GroupDescription === "Pulseboard stream host tasks"),
        // The rotation functions of the processes' login and of the master user.
        logicalIdOf("AWS::EC2::SecurityGroup", (r) => String(r.Properties.GroupDescription).includes("AppCredentialsRotation")),
        logicalIdOf("AWS::EC2::SecurityGroup", (r) => String(r.Properties.GroupDescription).includes("RotationSingleUser")),
      ].sort(),
    );
    for (const r of ingress) expect(r.Properties).toMatchObject({ IpProtocol: "tcp" });
  });
});

describe("CloudFront path routing", () => {
  let config: Record<string, Json>;
  let originIdOf: (needle: string) => string;
  beforeAll(() => {
    config = only("AWS::CloudFront::Distribution")[1].Properties.DistributionConfig;
    originIdOf = (needle) =>
      (config.Origins as { Id: string; DomainName: unknown }[]).find((o) => JSON.stringify(o.DomainName).includes(needle))!.Id;
  });

  it("sends the stream and metrics paths to the ALB, uncached, with a long read timeout", () => {
    const alb = originIdOf("LoadBalancer");
    const behaviors = config.CacheBehaviors as Record<string, Json>[];
    expect(behaviors.map((b) => b.PathPattern).sort()).toEqual(["/api/dashboards/*/stream", "/api/metrics"]);
    for (const b of behaviors) {
      expect(b).toMatchObject({
        TargetOriginId: alb,
        CachePolicyId: CACHING_DISABLED,
        OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST_HEADER,
        AllowedMethods: ["GET", "HEAD"],
        Compress: false,
        ViewerProtocolPolicy: "redirect-to-https",
      });
    }
    // A VPC origin: the internal ALB is reached over AWS's network, HTTP never crosses the internet.
    const origin = config.Origins.find((o: { Id: string }) => o.Id === alb);
    expect(origin.CustomOriginConfig).toBeUndefined();
    expect(origin.VpcOriginConfig).toMatchObject({ OriginReadTimeout: STREAM_ORIGIN_READ_TIMEOUT_SECONDS });
    expect(origin.VpcOriginConfig.ResponseCompletionTimeout).toBeUndefined();
    const [vpcOriginId, vpcOrigin] = only("AWS::CloudFront::VpcOrigin");
    expect(origin.VpcOriginConfig.VpcOriginId).toEqual({ "Fn::GetAtt": [vpcOriginId, "Id"] });
    expect(vpcOrigin.Properties.VpcOriginEndpointConfig).toMatchObject({
      Arn: { Ref: only("AWS::ElasticLoadBalancingV2::LoadBalancer")[0] },
      OriginProtocolPolicy: "http-only",
    });
  });

  it("keeps a quiet stream open: the stream host's heartbeat comes well within the origin read timeout", () => {
    expect(HEARTBEAT_MS * 2).toBeLessThan(STREAM_ORIGIN_READ_TIMEOUT_SECONDS * 1000);
  });

  it("sends everything else to the handlers' function URL, uncached, all methods", () => {
    expect(config.DefaultCacheBehavior).toMatchObject({
      TargetOriginId: originIdOf("FunctionUrl"),
      CachePolicyId: CACHING_DISABLED,
      OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST_HEADER,
      AllowedMethods: expect.arrayContaining(["GET", "POST", "PUT", "PATCH", "DELETE"]),
    });
  });
});

describe("asset images (what a real `cdk deploy` builds)", () => {
  it("stages both Dockerfiles as Docker image assets without running Docker", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pulseboard-cdk-assets-"));
    try {
      const app = new App({ outdir: dir, builtinCloudFormationValidation: false });
      new PulseboardStack(app, "Pulseboard", {
        images: { kind: "asset", repoRoot: REPO_ROOT, gitCommit: "abc123" },
      });
      const manifest = JSON.parse(readFileSync(join(app.synth().directory, "Pulseboard.assets.json"), "utf8"));
      const images = Object.values(manifest.dockerImages as Record<string, { source: Record<string, Json> }>).map((i) => i.source);
      expect(images.map((s) => s.dockerFile).sort()).toEqual(["infra/Dockerfile.handlers", "infra/Dockerfile.stream-host"]);
      for (const s of images) {
        expect(s.platform).toBe("linux/amd64");
        expect(s.dockerBuildArgs).toEqual({ GIT_COMMIT: "abc123" });
        // The staged context carries the Dockerfiles but none of the excluded folders.
        const staged = join(dir, s.directory);
        expect(existsSync(join(staged, s.dockerFile))).toBe(true);
        expect(existsSync(join(staged, "node_modules"))).toBe(false);
        expect(existsSync(join(staged, "package-lock.json"))).toBe(true);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("config-store connection budget", () => {
  it("every pool at its most, plus each process's LISTEN and readiness connections and migrate, fits in max_connections", () => {
    const fn = handlersFunction();
    const handlersEnv = fn.Properties.Environment.Variables;
    const concurrency = fn.Properties.ReservedConcurrentExecutions as number;
    expect(concurrency).toBeGreaterThan(0);
    const [, service] = only("AWS::ECS::Service");
    const tasks = Math.ceil((service.Properties.DesiredCount * service.Properties.DeploymentConfiguration.MaximumPercent) / 100);
    const streamEnv = envOf(container("stream-host"));
    const [, params] = only("AWS::RDS::DBParameterGroup");
    const maxConnections = Number(params.Properties.Parameters.max_connections);
    const [, db] = only("AWS::RDS::DBInstance");
    expect(db.Properties.DBParameterGroupName).toEqual({ Ref: only("AWS::RDS::DBParameterGroup")[0] });

    const perHandler = Number(handlersEnv.PG_POOL_MAX) + CONNECTION_BUDGET.besidesPool;
    const perTask = Number(streamEnv.PG_POOL_MAX) + CONNECTION_BUDGET.besidesPool + CONNECTION_BUDGET.migrate;
    const total = concurrency * perHandler + tasks * perTask + CONNECTION_BUDGET.operator + CONNECTION_BUDGET.rotation;
    expect(total).toBeLessThanOrEqual(maxConnections - CONNECTION_BUDGET.reserved);
    // Frozen or retired Lambda instances' idle connections are ended by the server.
    expect(Number(params.Properties.Parameters.idle_session_timeout)).toBeGreaterThan(0);
  });

  it("refuses to build a stack whose processes could open more connections than the config store allows", () => {
    const app = new App({ outdir, builtinCloudFormationValidation: false });
    expect(
      () =>
        new PulseboardStack(app, "TooBig", {
          images: { kind: "ecr", handlersRepository: "h", streamHostRepository: "s", tag: "t" },
          handlersReservedConcurrency: 40,
        }),
    ).toThrow(/connection budget exceeded/);
  });
});

describe("health checks: out of rotation on a config-store outage, never a restart loop", () => {
  it("the ALB checks readiness; ECS ignores target health and replaces only a task whose liveness check fails", () => {
    const [, tg] = only("AWS::ElasticLoadBalancingV2::TargetGroup");
    expect(tg.Properties.HealthCheckPath).toBe("/api/ready");
    const [, service] = only("AWS::ECS::Service");
    expect(service.Properties.HealthCheckGracePeriodSeconds).toBe(HEALTH_CHECK_GRACE_SECONDS);
    expect(HEALTH_CHECK_GRACE_SECONDS).toBe(2_147_483_647);
    const check = container("stream-host").HealthCheck;
    expect(check.Command.join(" ")).toContain("/api/health");
    expect(check.Command.join(" ")).not.toContain("/api/ready");
    // A deployment whose tasks never start is still rolled back.
    expect(service.Properties.DeploymentConfiguration.DeploymentCircuitBreaker).toEqual({ Enable: true, Rollback: true });
  });
});

describe("origin secret: the function URL cannot be used around CloudFront", () => {
  it("CloudFront sends the secret to the handlers' origin, the handlers get the same secret, the adapter checks a port of its own", () => {
    expect(ORIGIN_VERIFY_HEADER).toBe(HANDLERS_ORIGIN_HEADER);
    const config = only("AWS::CloudFront::Distribution")[1].Properties.DistributionConfig;
    const fnOrigin = (config.Origins as Record<string, Json>[]).find((o) => JSON.stringify(o.DomainName).includes("FunctionUrl"))!;
    const secretId = logicalIdOf("AWS::SecretsManager::Secret", (r) => String(r.Properties.Description).includes("ORIGIN_VERIFY_SECRET"));
    expect(fnOrigin.OriginCustomHeaders).toHaveLength(1);
    expect(fnOrigin.OriginCustomHeaders[0].HeaderName).toBe(ORIGIN_VERIFY_HEADER);
    const sent = JSON.stringify(fnOrigin.OriginCustomHeaders[0].HeaderValue);
    expect(sent).toContain("{{resolve:secretsmanager:");
    expect(sent).toContain(secretId);
    // The stream host's origin is an internal ALB: no header there.
    const albOrigin = (config.Origins as Record<string, Json>[]).find((o) => o !== fnOrigin)!;
    expect(albOrigin.OriginCustomHeaders ?? []).toEqual([]);

    const env = handlersFunction().Properties.Environment.Variables;
    expect(env.AWS_LWA_READINESS_CHECK_PORT).toBe(String(HANDLERS_CHECK_PORT));
    expect(env.HEALTH_CHECK_PORT).toBe(String(HANDLERS_CHECK_PORT));
    expect(env.AWS_LWA_READINESS_CHECK_PORT).not.toBe(env.PORT);
  });
});

describe("provisioning: an empty config store becomes usable without code", () => {
  const document = JSON.stringify({
    workspaces: [{ id: "ws_ops", name: "Ops", groups: { viewer: "ops-v", editor: "ops-e", admin: "ops-a" } }],
  });
  let provisioned: Record<string, Resource>;
  let provisionedDir: string;
  beforeAll(async () => {
    provisionedDir = await mkdtemp(join(tmpdir(), "pulseboard-cdk-provision-"));
    const { stack } = synthTestStack(provisionedDir, { validate: false, provisionDocument: document });
    provisioned = Template.fromStack(stack).toJSON().Resources;
  });
  afterAll(() => rm(provisionedDir, { recursive: true, force: true }));

  const containersOf = (res: Record<string, Resource>) => {
    const tasks = Object.values(res).filter((r) => r.Type === "AWS::ECS::TaskDefinition");
    expect(tasks).toHaveLength(1);
    return tasks[0].Properties.ContainerDefinitions as Record<string, Json>[];
  };

  it("asks for PLATFORM_ADMIN_GROUP (empty: nobody) and gives it to both processes", () => {
    expect(template.toJSON().Parameters.PlatformAdminGroup).toMatchObject({ Type: "String", Default: "" });
    expect(envOf(container("stream-host")).PLATFORM_ADMIN_GROUP).toEqual({ Ref: "PlatformAdminGroup" });
    expect(handlersFunction().Properties.Environment.Variables.PLATFORM_ADMIN_GROUP).toEqual({ Ref: "PlatformAdminGroup" });
  });

  it("without a provisioning file there is no provision container", () => {
    expect(containersOf(resources).map((c) => c.Name)).not.toContain("provision");
  });

  it("with one, each task applies it after migrate and before the stream host starts, from PROVISION_DOCUMENT", () => {
    const byName = Object.fromEntries(containersOf(provisioned).map((c) => [c.Name, c]));
    const provision = byName.provision;
    expect(provision).toBeDefined();
    expect(provision.Essential).toBe(false);
    expect(provision.Command).toEqual(["node", "dist/provision/main.mjs", "--from-env"]);
    expect(envOf(provision).PROVISION_DOCUMENT).toBe(document);
    expect(envOf(provision).DATABASE_URL).toEqual(envOf(byName["stream-host"]).DATABASE_URL);
    // Source credentials and the config-store password, as the stream host resolves them.
    expect(secretsOf(provision).PGPASSWORD).toEqual(secretsOf(byName.migrate).PGPASSWORD);
    expect(provision.DependsOn).toEqual([{ ContainerName: "app-role", Condition: "SUCCESS" }]);
    expect(byName["stream-host"].DependsOn).toEqual([{ ContainerName: "provision", Condition: "SUCCESS" }]);
    // The document is not a secret (secret_refs are names), but it is only on the container that needs it.
    expect(envOf(byName["stream-host"]).PROVISION_DOCUMENT).toBeUndefined();
  });

  it("refuses a document too large for a task definition", () => {
    const big = JSON.stringify({ workspaces: [], padding: "x".repeat(40_000) });
    expect(() => synthTestStack(provisionedDir, { validate: false, provisionDocument: big })).toThrow(
      /bytes as JSON; a task definition holds at most 32768/,
    );
  });
});

describe("operable: logs, alarms, availability", () => {
  it("VPC flow logs, CloudFront standard logs and ALB access logs (when the region is known) go somewhere kept", () => {
    template.hasResourceProperties("AWS::EC2::FlowLog", {
      ResourceType: "VPC",
      TrafficType: "ALL",
      LogDestinationType: "cloud-watch-logs",
    });
    const config = only("AWS::CloudFront::Distribution")[1].Properties.DistributionConfig;
    expect(config.Logging).toMatchObject({ Prefix: "cloudfront/" });
    const bucketId = logicalIdOf("AWS::S3::Bucket", () => true);
    expect(JSON.stringify(config.Logging.Bucket)).toContain(bucketId);
    expect(resources[bucketId].Properties.LifecycleConfiguration.Rules[0]).toMatchObject({ ExpirationInDays: 90 });
    // An environment-agnostic synthesis (this one) cannot name the ALB's log-delivery principal.
    const attrs = Object.fromEntries(
      (only("AWS::ElasticLoadBalancingV2::LoadBalancer")[1].Properties.LoadBalancerAttributes as { Key: string; Value: string }[]).map(
        (a) => [a.Key, a.Value],
      ),
    );
    expect(attrs["access_logs.s3.enabled"]).toBeUndefined();
    const app = new App({ outdir, builtinCloudFormationValidation: false });
    const regional = Template.fromStack(
      new PulseboardStack(app, "Regional", {
        images: { kind: "ecr", handlersRepository: "h", streamHostRepository: "s", tag: "t" },
        env: { account: "123456789012", region: "eu-west-1" },
      }),
    );
    regional.hasResourceProperties("AWS::ElasticLoadBalancingV2::LoadBalancer", {
      LoadBalancerAttributes: Match.arrayWith([{ Key: "access_logs.s3.enabled", Value: "true" }]),
    });
  });

  it("alarms on the 5xx rate, stream hosts out of rotation, config-store connections near the budget and LLM 429s", () => {
    const alarms = Object.values(resources).filter((r) => r.Type === "AWS::CloudWatch::Alarm");
    const byMetric = (name: string) => alarms.filter((a) => JSON.stringify(a.Properties).includes(name));
    expect(byMetric("5xxErrorRate")).toHaveLength(1);
    expect(byMetric("UnHealthyHostCount")).toHaveLength(1);
    const connections = byMetric("DatabaseConnections");
    expect(connections).toHaveLength(1);
    expect(connections[0].Properties.Threshold).toBe(Math.floor(CONNECTION_BUDGET.maxConnections * 0.8));
    const llm = byMetric("svc_llm_requests_total");
    expect(llm).toHaveLength(1);
    const queried = JSON.stringify(llm[0].Properties.Metrics);
    for (const outcome of ["rate_limited", "over_budget"]) expect(queried).toContain(outcome);
    for (const route of ["generate", "source_draft", "chat"]) expect(queried).toContain(route);
    expect(queried).not.toContain("admitted");
  });

  it("Multi-AZ and the master password's rotation are on by default; a custom domain brings TLS 1.2", () => {
    expect(only("AWS::RDS::DBInstance")[1].Properties.MultiAZ).toBe(true);
    expect(Object.values(resources).filter((r) => r.Type === "AWS::SecretsManager::RotationSchedule")).toHaveLength(2);
    const app = new App({ outdir, builtinCloudFormationValidation: false });
    const custom = Template.fromStack(
      new PulseboardStack(app, "Custom", {
        images: { kind: "ecr", handlersRepository: "h", streamHostRepository: "s", tag: "t" },
        multiAz: false,
        domain: { names: ["dash.example.com"], certificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/abc" },
      }),
    );
    custom.hasResourceProperties("AWS::RDS::DBInstance", { MultiAZ: false });
    custom.hasResourceProperties("AWS::CloudFront::Distribution", {
      DistributionConfig: Match.objectLike({
        Aliases: ["dash.example.com"],
        ViewerCertificate: Match.objectLike({ MinimumProtocolVersion: "TLSv1.2_2021", SslSupportMethod: "sni-only" }),
      }),
    });
  });
});
