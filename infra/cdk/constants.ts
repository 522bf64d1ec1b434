// Values the CDK stack, the Dockerfiles, the scrape config and their tests must agree on.

/** Listen port of the handlers (the Lambda Web Adapter forwards to it). */
export const HANDLERS_PORT = 8080;
/** Listen port of the stream host (STREAM_PORT). */
export const STREAM_HOST_PORT = 8081;
/**
 * Loopback port where the handlers answer only /api/health (HEALTH_CHECK_PORT), for the Lambda Web Adapter's
 * readiness check (AWS_LWA_READINESS_CHECK_PORT): the main port refuses requests without the origin secret.
 */
export const HANDLERS_CHECK_PORT = 8082;

/** Header CloudFront adds to every request to the handlers' origin (handlers/origin-guard.ts checks it). */
export const ORIGIN_VERIFY_HEADER = "x-origin-verify";

/** Liveness: the Lambda Web Adapter's readiness check and the container health check. */
export const HEALTH_PATH = "/api/health";
/** Readiness: the ALB target group health check of the stream host. */
export const READY_PATH = "/api/ready";

/** The drain budget after SIGTERM (spec default) and the orchestrator's kill timeout, which must exceed it. */
export const SHUTDOWN_GRACE_MS = 10_000;
export const STOP_TIMEOUT_SECONDS = 20;

/**
 * How often the stream host asks the ECS task metadata endpoint whether its task is being stopped
 * (TASK_STOP_POLL_MS). ECS marks the task STOPPED, deregisters it from the target group, waits the
 * deregistration delay and only then sends SIGTERM; the ALB cuts whatever is still open when the delay ends.
 */
export const TASK_STOP_POLL_MS = 1_000;

/**
 * How long the ALB keeps a deregistering stream host's connections. The stream host sees the stop within one
 * poll and drains at once, so the whole drain (every stream framed and closed, in-flight queries given their
 * SHUTDOWN_GRACE_MS) fits before the ALB cuts anything: delay ≥ poll + grace, with margin.
 */
export const DEREGISTRATION_DELAY_SECONDS = 15;

/** Private DNS of the stream host tasks for Prometheus (Cloud Map, one A record per task). */
export const SERVICE_DISCOVERY_NAMESPACE = "pulseboard.internal";
export const STREAM_HOST_DISCOVERY_NAME = "stream-host";

/** Config-store database and login on RDS. */
export const CONFIG_STORE_DATABASE = "pulseboard";
export const CONFIG_STORE_USER = "pulseboard";

/** Amazon RDS CA bundle inside both images (NODE_EXTRA_CA_CERTS), so `sslmode=verify-full` verifies RDS. */
export const RDS_CA_BUNDLE_PATH = "/etc/ssl/certs/rds-global-bundle.pem";

/**
 * CloudFront ends a response when the origin sends nothing for this long (the default quota's maximum).
 * The stream host's SSE heartbeat (stream-host/app.ts HEARTBEAT_MS) must stay well inside it.
 */
export const STREAM_ORIGIN_READ_TIMEOUT_SECONDS = 120;
/** ALB idle timeout: longer than the origin read timeout, so the edge, not the ALB, ends a quiet stream. */
export const ALB_IDLE_TIMEOUT_SECONDS = 180;

/** The ECS container health check (run by /bin/sh): the images carry no curl, so node asks /api/health itself. */
export const LIVENESS_COMMAND = `node -e "fetch('http://127.0.0.1:${STREAM_HOST_PORT}${HEALTH_PATH}').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"`;

/**
 * The config store's connection budget, by construction (checked when the stack is built, pinned by
 * infra/cdk/stack.test.ts): every process's pool plus the connections it opens besides it, at the most
 * processes that can exist at once, must fit in max_connections minus the reserved slots.
 */
export const CONNECTION_BUDGET = {
  /** max_connections of the config store's parameter group (db.t4g.micro: 1 GiB, ~3 MB per idle backend). */
  maxConnections: 100,
  /** Slots PostgreSQL keeps for superusers (superuser_reserved_connections 3) and RDS's own (2). */
  reserved: 5,
  /** Besides its pool, each process opens one LISTEN connection and readiness's own connection. */
  besidesPool: 2,
  /** PG_POOL_MAX of one handlers instance: it serves one request at a time. */
  handlersPool: 2,
  /** Reserved concurrency of the handlers function: no more instances (and pools) than this ever exist. */
  handlersConcurrency: 12,
  /** PG_POOL_MAX of one stream host task. */
  streamHostPool: 4,
  /** The migrate container of a starting task holds one connection. */
  migrate: 1,
  /** Left for an operator's psql session and the like. */
  operator: 2,
  /** The two Secrets Manager rotation functions (processes' login, master), while they run. */
  rotation: 2,
} as const;

/** Connections the deployment can open at most; must not exceed maxConnections - reserved. */
export function connectionsAtMost(b: {
  handlersConcurrency: number;
  handlersPool: number;
  streamHostTasks: number;
  streamHostPool: number;
  besidesPool: number;
  migrate: number;
  operator: number;
  rotation: number;
}): number {
  return (
    b.handlersConcurrency * (b.handlersPool + b.besidesPool) +
    b.streamHostTasks * (b.streamHostPool + b.besidesPool + b.migrate) +
    b.operator +
    b.rotation
  );
}

/** Idle sessions the config store ends itself: connections of Lambda instances frozen or retired by a deploy. */
export const CONFIG_STORE_IDLE_SESSION_TIMEOUT_MS = 600_000;

/**
 * ECS ignores the target group's health for this long after a task started: the maximum, so a config-store
 * outage (readiness 503) takes tasks out of rotation without ECS replacing them in a loop. The container's
 * liveness check (/api/health, no dependency) is what replaces a task whose process is wedged.
 */
export const HEALTH_CHECK_GRACE_SECONDS = 2_147_483_647;
