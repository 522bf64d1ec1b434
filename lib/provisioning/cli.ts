import { parseArgs } from "node:util";
import type pg from "pg";
import { Registry } from "prom-client";
import { refreshCatalog } from "../catalog-refresh/refresh.ts";
import type { Config } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { createMetrics } from "../metrics/metrics.ts";
import type { QueryRunner } from "../query/runner.ts";
import { buildQueryServices } from "../service/query-services.ts";
import type { Guard } from "../sql-guard/index.ts";
import { configStoreFailureCode, describeConfigStoreFailure } from "../store/connect-failure.ts";
import { applyProvisioning, type ProvisionChange } from "./apply.ts";
import { exportText, exportWorkspace } from "./export.ts";
import { type DocumentOptions, parseProvisioningDocument, parseProvisioningText, readProvisioningFile } from "./document.ts";

export const USAGE = `usage: npm run provision -- FILE
       npm run provision -- --from-env
       npm run provision -- --export WORKSPACE_ID > FILE
  FILE: a provisioning file (YAML or JSON, docs/provisioning.md); dashboard specFile paths are relative to it
  --from-env: apply the document in PROVISION_DOCUMENT instead (what the deployed stack does)
  --export: write one workspace's sources, dashboards and variables to stdout as a provisioning file
  Applies workspaces, sources and dashboards idempotently to DATABASE_URL (run npm run migrate first).
  exit: 0 applied (a second run reports 0 changes), 1 invalid document or a failed change, 2 bad usage`;

export interface ProvisionCliIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

/** What the CLI builds from config; tests pass a runner whose host policy admits their loopback database. */
export interface ProvisionCliDeps {
  config: Config;
  pool: pg.Pool;
  services?: { guard: Guard; queryRunner: QueryRunner };
}

/** One line per change: `created source src_shop_pg`, `updated workspace ws_shop (name, admin_group)`. */
export function describeChange(c: ProvisionChange): string {
  const what = c.action === "catalog_refreshed" ? "refreshed the catalog of" : c.action;
  return `${what} ${c.kind} ${c.id}${c.fields?.length ? ` (${c.fields.join(", ")})` : ""}`;
}

/** The one line a failure ends with: the coded detail, or a config-store error code, never a connection string. */
export function describeFailure(err: unknown): string {
  if (err instanceof AppError) return err.detail;
  // A config-store failure: its code, what it means and DATABASE_URL (`ECONNREFUSED: nothing is listening …`).
  if (configStoreFailureCode(err) !== "unknown") return describeConfigStoreFailure(err);
  return err instanceof Error ? err.message : String(err);
}

/**
 * `npm run provision`: reads the document (a file, or PROVISION_DOCUMENT with --from-env), validates it, applies it and
 * prints each change and a summary. Returns the exit code.
 */
export async function runProvisionCli(argv: string[], deps: ProvisionCliDeps, io: ProvisionCliIo): Promise<number> {
  let args: ReturnType<typeof parseCliArgs>;
  try {
    args = parseCliArgs(argv);
  } catch (err) {
    io.stderr(`provision: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { config } = deps;
  const opts: DocumentOptions = {
    minRefreshIntervalMs: config.MIN_REFRESH_INTERVAL_MS,
    defaultTime: { from: config.DEFAULT_TIME_FROM, to: config.DEFAULT_TIME_TO },
  };
  if (args.export !== undefined) {
    try {
      io.stdout(exportText(await exportWorkspace(deps.pool, args.export), new Date()));
      return 0;
    } catch (err) {
      io.stderr(`provision failed: ${describeFailure(err)}`);
      return 1;
    }
  }
  let ownServices = false;
  let services = deps.services;
  try {
    let raw: unknown;
    if (args.fromEnv) {
      if (!config.PROVISION_DOCUMENT) throw new AppError("validation_failed", "--from-env: PROVISION_DOCUMENT is not set");
      raw = parseProvisioningText(config.PROVISION_DOCUMENT, "PROVISION_DOCUMENT", config.PROVISION_FILE_MAX_BYTES);
    } else {
      raw = await readProvisioningFile(args.file!, { maxBytes: config.PROVISION_FILE_MAX_BYTES });
    }
    const doc = parseProvisioningDocument(raw, opts);
    if (!services) {
      services = await buildQueryServices(config, createMetrics(new Registry(), { defaultCollectors: false }));
      ownServices = true;
    }
    const runner = services.queryRunner;
    const report = await applyProvisioning(
      {
        pool: deps.pool,
        guard: services.guard,
        runner,
        refreshCatalog: (source, db) => refreshCatalog({ db, runner }, source),
        config,
        onChange: (c) => io.stdout(describeChange(c)),
      },
      doc,
    );
    const n = report.changes.length;
    io.stdout(`provisioned: ${n} change${n === 1 ? "" : "s"}, ${report.unchanged} unchanged`);
    return 0;
  } catch (err) {
    io.stderr(`provision failed: ${describeFailure(err)}`);
    return 1;
  } finally {
    if (ownServices) await services?.queryRunner.closeAll();
  }
}

function parseCliArgs(argv: string[]): { file?: string; fromEnv: boolean; export?: string } {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { "from-env": { type: "boolean", default: false }, export: { type: "string" } },
    allowPositionals: true,
  });
  const fromEnv = values["from-env"] === true;
  if (values.export !== undefined) {
    if (fromEnv || positionals.length > 0) throw new Error("--export takes a workspace id and nothing else");
    if (!/^ws_[A-Za-z0-9_-]{1,60}$/.test(values.export)) throw new Error("--export needs a workspace id (ws_…)");
    return { fromEnv: false, export: values.export };
  }
  if (fromEnv && positionals.length > 0) throw new Error("give a FILE or --from-env, not both");
  if (!fromEnv && positionals.length !== 1)
    throw new Error(positionals.length === 0 ? "a provisioning FILE is required" : "one FILE at a time");
  return { file: positionals[0], fromEnv };
}
