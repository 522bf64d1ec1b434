import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as rds from "aws-cdk-lib/aws-rds";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { APP_LOGIN_ROLE } from "../app-role.ts";
import { Construct } from "constructs";
import { CONFIG_STORE_DATABASE, CONFIG_STORE_IDLE_SESSION_TIMEOUT_MS, CONFIG_STORE_USER, CONNECTION_BUDGET } from "./constants.ts";

export interface ConfigStoreProps {
  vpc: ec2.IVpc;
  /** Refuses deletion of the instance (on by default; `-c deletionProtection=false` for throw-away stacks). */
  deletionProtection: boolean;
  /** A standby in a second AZ (on by default; `-c multiAz=false` halves the cost and the availability). */
  multiAz: boolean;
}

/**
 * The config store: RDS PostgreSQL in isolated subnets, credentials generated into a Secrets Manager secret
 * (JSON with username/password/host/port/dbname), TLS enforced by the engine's default `rds.force_ssl`.
 */
export class ConfigStore extends Construct {
  readonly instance: rds.DatabaseInstance;
  /** The master user's credentials: only the setup containers (migrate, app-role, provision) get them. */
  readonly secret: secretsmanager.ISecret;
  /**
   * The processes' least-privilege login (infra/app-role.ts): JSON with username/password/host/port/dbname,
   * rotated every 30 days by alternating users (`pulseboard_app` and `pulseboard_app_clone`), so the previous
   * login keeps working until every process has read the new one.
   */
  readonly appSecret: secretsmanager.ISecret;
  readonly securityGroup: ec2.SecurityGroup;
  /**
   * DATABASE_URL without user or password: each process gets PGUSER and PGPASSWORD from its secret, which
   * node-postgres uses when the URL carries none, so no password ever sits in a template or an env listing.
   */
  readonly databaseUrl: string;

  constructor(scope: Construct, id: string, props: ConfigStoreProps) {
    super(scope, id);
    this.securityGroup = new ec2.SecurityGroup(this, "SecurityGroup", {
      vpc: props.vpc,
      description: "Pulseboard config store",
      allowAllOutbound: false,
    });
    const engine = rds.DatabaseInstanceEngine.postgres({ version: rds.PostgresEngineVersion.VER_17 });
    // max_connections is set, not derived from the instance's memory, so the stack can check its connection
    // budget against it (constants.ts CONNECTION_BUDGET). idle_session_timeout ends the idle connections of
    // Lambda instances that were frozen or retired by a deploy; the processes' own long-lived connections are
    // never idle that long (the listener pings every 30 s, readiness is asked every 10 s).
    const parameterGroup = new rds.ParameterGroup(this, "Parameters", {
      engine,
      description: "Pulseboard config store",
      parameters: {
        max_connections: String(CONNECTION_BUDGET.maxConnections),
        idle_session_timeout: String(CONFIG_STORE_IDLE_SESSION_TIMEOUT_MS),
      },
    });
    this.instance = new rds.DatabaseInstance(this, "Instance", {
      engine,
      parameterGroup,
      instanceType: ec2.InstanceType.of(ec2.InstanceClass.T4G, ec2.InstanceSize.MICRO),
      vpc: props.vpc,
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_ISOLATED },
      securityGroups: [this.securityGroup],
      databaseName: CONFIG_STORE_DATABASE,
      // URL-safe password: it never goes into a URL today, but operators paste it into psql URLs.
      credentials: rds.Credentials.fromGeneratedSecret(CONFIG_STORE_USER, {
        excludeCharacters: " %+~`#$&*()|[]{}:;<>?!'/@\"\\=,^",
      }),
      allocatedStorage: 20,
      maxAllocatedStorage: 100,
      storageEncrypted: true,
      multiAz: props.multiAz,
      backupRetention: Duration.days(7),
      deletionProtection: props.deletionProtection,
      removalPolicy: RemovalPolicy.SNAPSHOT,
      publiclyAccessible: false,
    });
    this.secret = this.instance.secret!;
    this.appSecret = new rds.DatabaseSecret(this, "AppCredentials", {
      username: APP_LOGIN_ROLE,
      masterSecret: this.secret,
      excludeCharacters: " %+~`#$&*()|[]{}:;<>?!'/@\"\\=,^",
    }).attach(this.instance);
    // Alternating users: the rotation sets the password of the login not in use (creating the `_clone` twin
    // with the same role memberships the first time), then makes it current; the other keeps working.
    this.instance.addRotationMultiUser("AppCredentialsRotation", {
      secret: this.appSecret,
      automaticallyAfter: Duration.days(30),
      // The rotation function needs Secrets Manager's endpoint, which the isolated subnets cannot reach.
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
    });
    // The master password rotates too; only the setup containers use it, and they read it when a task starts.
    this.instance.addRotationSingleUser({
      automaticallyAfter: Duration.days(30),
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
    });
    this.databaseUrl =
      `postgres://${this.instance.dbInstanceEndpointAddress}:${this.instance.dbInstanceEndpointPort}` +
      `/${CONFIG_STORE_DATABASE}?sslmode=verify-full`;
  }

  /** Lets `peer` open connections to the database port. */
  allowFrom(peer: ec2.IConnectable, description: string): void {
    this.instance.connections.allowDefaultPortFrom(peer, description);
  }
}
