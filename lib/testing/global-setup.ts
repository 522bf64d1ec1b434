import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from "../embedded/postgres.ts";

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

let handle: EmbeddedPostgresHandle | undefined;
let dir: string | undefined;

/** One real PostgreSQL per test run; each test file creates its own database on it (lib/testing/pg.ts). */
export async function setup(project: TestProject) {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-test-pg-"));
  // The server may run as a separate postgres user (when tests run as root): it must be able to enter the folder.
  await chmod(dir, 0o755);
  handle = await startEmbeddedPostgres({ dataDir: join(dir, "data") });
  project.provide("pgAdminUrl", handle.url("postgres"));
}

export async function teardown() {
  await handle?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}
